// What a GPU kernel's or API call's name says about it, for facts no tracer records otherwise: CUPTI,
// Kineto and Nsight Systems give a kernel's name and launch geometry, never its instruction mix, so
// whether a kernel ran on tensor cores (matrix units) is read from the name of its kernel family.
// One place for every reader and analysis (kernel_table, kernel_roofline, the lower-bound
// tensor_cores analysis), like kernel_activity() in activity_type.h.
//
// Recognition is conservative: a kernel counts as a tensor-core kernel only when its name carries a
// marker of NVIDIA's MMA kernel families or AMD's MFMA; an unrecognised tensor-core kernel is
// under-counted, never invented.
#pragma once

#include <string>
#include <string_view>

namespace strata {

// The marker that identifies `kernel_name` as a tensor-core kernel ("hmma", "xmma bf16", "wgmma",
// "gmma", "tensorop", "nvjet", "s1688", "tensor16x8x8", "mfma mi16x16x1", "flash attention", ...);
// empty when the name shows none, or shows a SIMT kernel of a tensor-core family (CUTLASS "simt",
// XMMA "ffma").
std::string tensor_core_marker(std::string_view kernel_name);
inline bool is_tensor_core_kernel(std::string_view kernel_name) {
  return !tensor_core_marker(kernel_name).empty();
}

// The input precision of a tensor-core kernel's MMA, read from its name: the roofline picks the
// matching tensor-core peak. kUnknown when the name does not say (or the kernel is no tensor-core
// kernel).
enum class TensorPrecision { kUnknown, kFp64, kTf32, kFp16, kBf16, kFp8, kInt8 };
TensorPrecision tensor_core_precision(std::string_view kernel_name);
std::string_view tensor_precision_name(TensorPrecision p);  // "fp16", "bf16", "tf32", ...; "" for unknown

// Hopper's TMA descriptor calls: cuTensorMapEncodeTiled / Im2col / Im2colWide and
// cuTensorMapReplaceAddress (any version suffix). They build descriptors on the host and enqueue no
// device work; readers give them the API class "tma_descriptor".
bool is_tma_descriptor_call(std::string_view api_name);
// The extensible launches: cuLaunchKernelEx, cudaLaunchKernelEx, cudaLaunchKernelExC (and their
// _ptsz / version suffixes), the only launches that can carry thread-block-cluster dimensions and
// launch attributes.
bool is_extensible_launch(std::string_view api_name);

}  // namespace strata
