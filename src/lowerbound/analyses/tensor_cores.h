// Tensor cores in a framework's GPU run (Benanza IV-D, low precision): which layers' kernels ran on
// tensor cores (matrix units), recognised by kernel name, and the share of each layer's device time
// in them. A layer whose convolution or GEMM ran on SIMT kernels (ampere_sgemm, scudnn, FFT) is one
// that fp16/bf16/tf32 math could move onto tensor cores; the precision table's bounds say how much
// that is worth.
//
// Names are all there is: CUPTI and Kineto record no instruction mix. A kernel is counted as a
// tensor-core kernel when its name carries a marker of NVIDIA's MMA kernel families (or AMD's
// MFMA), and as not using tensor cores otherwise, so an unrecognised tensor-core kernel is
// under-counted, never invented.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/kernel_names.h"
#include "lowerbound/ir/layer_ir.h"
#include "table/table.h"
#include "trace/trace.h"

namespace strata::lowerbound {

class Iteration;  // iteration.h

// Kernel names are classified by strata::tensor_core_marker (core/kernel_names.h), shared with the
// kernel analyses; re-exported here for the callers that know it under this namespace.
using strata::tensor_core_marker;

struct LayerTensorCores {
  uint32_t layer = 0;
  std::string framework_op;
  uint64_t kernels = 0, tensor_core_kernels = 0;
  double device_ns = 0, tensor_core_ns = 0;
  std::string top_kernel;  // the longest tensor-core kernel, else the longest kernel
  std::string marker;      // what marked top_kernel as a tensor-core kernel; empty when none did
};

struct TensorCoreUsage {
  bool has_kernels = false;              // the analysed iteration ran kernels (a GPU trace)
  std::vector<LayerTensorCores> layers;  // matched layers whose framework op ran kernels, model order
  // Kernels of the iteration under framework ops without an ONNX layer (the backward pass of a
  // training step, optimizer, copies of inputs) or under no op.
  uint64_t other_kernels = 0, other_tensor_core_kernels = 0;
  double other_ns = 0, other_tensor_core_ns = 0;
};

// Kernels (device spans that are not copies or memsets) of the analysed iteration, attributed through
// the span tree (launch correlation, then the ops above the launch) to the matched layers.
TensorCoreUsage tensor_core_usage(const LayerModel& model, const Iteration& iteration);

// "tensor_cores": per layer, whether its kernels used tensor cores and their share of its device time,
// with a TOTAL row over the layers and a row for the rest of the iteration.
table::Table tensor_core_table(const LayerModel& model, const TensorCoreUsage& usage);

}  // namespace strata::lowerbound
