// Canonical attribute keys: one key per fact, the same whichever tracer or importer recorded it.
// Tracers write these keys; importers translate foreign spellings into them on the way in (Kineto's
// "Input Dims" becomes kShapes, "External id" kExternalCorrelationId); analyses read these keys
// only. Files written before format 1.1 used other spellings for some facts: the loader renames
// them once (trace/activity_upgrade.h), so nothing downstream knows the old names.
//
// Units are part of the fact: bytes are bytes, times are ns, percentages are 0-100.
// docs/trace-format.md lists every key with its writers.
#pragma once

#include <string_view>

#include "core/memory_keys.h"

namespace strata::attr_keys {

// --- Model and step -------------------------------------------------------------------------
inline constexpr std::string_view kBatch = "batch";  // int: inputs per evaluation (model spans)
// int: the span is one step of the program's loop, numbered (torch.profiler's ProfilerStep#N).
inline constexpr std::string_view kStep = "step";
// int: the framework's intra-op thread count during the evaluation (model spans; torch.get_num_threads()).
inline constexpr std::string_view kThreads = "threads";

// --- Framework ops (layers) -------------------------------------------------------------------
inline constexpr std::string_view kOpType = "op_type";  // string: operator type when the name is not it
inline constexpr std::string_view kModule = "module";   // string: nn.Module path ("layer1.0.conv1")
// string: input shapes, "[[2,3,64,64],[64,3,7,7],[]]" (one list per input, [] for non-tensors).
inline constexpr std::string_view kShapes = "shapes";
inline constexpr std::string_view kInputTypes = "input_types";  // string: input dtypes (Kineto "Input type")
// Memory per op (alloc, freed, net, self, peak; device_ variants) and the memory counter tracks:
// core/memory_keys.h.
inline constexpr std::string_view kAllocBytes = memory_keys::kAllocBytes;  // int: bytes allocated while the op ran

// --- Work and traffic (metrics) -----------------------------------------------------------------
inline constexpr std::string_view kFlops = "flops";  // floating-point operations (all precisions)
inline constexpr std::string_view kFlopsSingle = "flops_sp";
inline constexpr std::string_view kFlopsDouble = "flops_dp";
inline constexpr std::string_view kFlopsHalf = "flops_hp";
// Bytes moved: a copy's or memset's size; a kernel's or op's memory traffic when read and write are
// not given apart.
inline constexpr std::string_view kBytes = "bytes";
inline constexpr std::string_view kDramReadBytes = "dram_read_bytes";
inline constexpr std::string_view kDramWriteBytes = "dram_write_bytes";
inline constexpr std::string_view kAchievedOccupancy = "achieved_occupancy";  // percent of peak warps
// Tensor-core instructions executed (ncu sm__inst_executed_pipe_tensor*.sum).
inline constexpr std::string_view kTensorInstructions = "tensor_instructions";

// --- Kernels ----------------------------------------------------------------------------------
inline constexpr std::string_view kGridX = "grid_x";
inline constexpr std::string_view kGridY = "grid_y";
inline constexpr std::string_view kGridZ = "grid_z";
inline constexpr std::string_view kBlockX = "block_x";
inline constexpr std::string_view kBlockY = "block_y";
inline constexpr std::string_view kBlockZ = "block_z";
inline constexpr std::string_view kRegistersPerThread = "registers_per_thread";
inline constexpr std::string_view kSharedMemoryBytes = "shared_memory";  // static + dynamic, per block
inline constexpr std::string_view kContext = "context";                   // CUDA context id
// Thread-block cluster dimensions (Hopper and later; CUPTI kernel records, nsys clusterX/Y/Z), where
// the source records them.
inline constexpr std::string_view kClusterX = "cluster_x";
inline constexpr std::string_view kClusterY = "cluster_y";
inline constexpr std::string_view kClusterZ = "cluster_z";
// string: the extensible launch call (cuLaunchKernelEx, cudaLaunchKernelExC; core/kernel_names.h)
// that launched this kernel, the launch that carries cluster dimensions and launch attributes. Set
// by importers on the kernels of such launches only.
inline constexpr std::string_view kLaunchApi = "launch_api";

// --- Copies -------------------------------------------------------------------------------------
// (direction: the activity type) memory kinds at both ends: "pageable", "pinned", "device", ...
inline constexpr std::string_view kSrcKind = "src_kind";
inline constexpr std::string_view kDstKind = "dst_kind";

// --- Links ----------------------------------------------------------------------------------------
// int: an id shared by a framework op and the runtime calls and device work it issued (Kineto's
// "External id"); the span tree hangs such work under the op that carries the same id.
inline constexpr std::string_view kExternalCorrelationId = "external_correlation_id";
// int: span id of the Strata span that was open when the API call enqueued this device work (CUPTI
// external correlation pushed by the collector).
inline constexpr std::string_view kIssuingSpanId = "issuing_span_id";

// --- Libraries and calls --------------------------------------------------------------------------
inline constexpr std::string_view kLibrary = "library";     // "cudnn", "cublas", "onednn"
// runtime call's class: launch, memcpy, sync, ..., tma_descriptor (cuTensorMapEncode*: Hopper TMA
// descriptors built on the host)
inline constexpr std::string_view kApiClass = "api_class";
inline constexpr std::string_view kBatchCount = "batch_count";  // batched GEMM's batch count
inline constexpr std::string_view kDtype = "dtype";              // element type of the call's data
inline constexpr std::string_view kSource = "source";  // which of a tracer's sources made the span

// --- GPU PC samples (activity gpu_pc_sample, kind sample, level device; one record per sampled PC of a
// kernel function, aggregated over the run; core/stall_reasons.h names the stall reasons) -----------
// int: the PC's offset in its function's cubin; CUPTI's cubin CRC (the bits of a uint64); the
// function's index in its module; samples at this PC, all reasons.
inline constexpr std::string_view kPcOffset = "pc_offset";
inline constexpr std::string_view kCubinCrc = "cubin_crc";
inline constexpr std::string_view kFunctionIndex = "function_index";
inline constexpr std::string_view kPcSamples = "samples";
// int: samples at this PC whose warp did not issue (the "_not_issued" counters summed)
inline constexpr std::string_view kPcSamplesNotIssued = "samples_not_issued";
// int attributes "stall.<reason>": samples at this PC per stall reason (CUPTI's name without its
// "smsp__pcsamp_warps_issue_stalled_" prefix; "_not_issued" variants keep that suffix).
inline constexpr std::string_view kStallPrefix = "stall.";
inline constexpr std::string_view kSourceFile = "source_file";  // string: source file of the PC (line info)
inline constexpr std::string_view kSourceLine = "source_line";  // int: source line of the PC
// int: CUPTI correlation id of the kernel launch the samples belong to (serialized mode only).
inline constexpr std::string_view kKernelCorrelationId = "kernel_correlation_id";

}  // namespace strata::attr_keys
