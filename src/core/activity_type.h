// What kind of activity a span is (a kernel, a copy and its direction, a runtime call, a CPU op,
// ...), said once by the tracer or importer that made the span and stored in its record. The level
// says where in the stack a span sits; the activity type says what work it is. Analyses read the
// type and never guess it from names.
//
// The numeric values are written into trace files (SpanRecord::activity) and never change or get
// reused (Kineto's ActivityType follows the same rule). They are grouped in ranges with room to
// grow: device activity 1-39, host calls 40-59, framework and program 60-79, samples 80-99.
// 0 is "not stated": files written before format 1.1 read as 0, and the loader types their spans
// once from what the old writers left (trace/activity_upgrade.h). A value this version does not
// know (a newer writer) is kept as it is, shown as "activity(N)" and counted at load.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata {

enum class ActivityType : uint8_t {
  kUnknown = 0,  // not stated: an old file, a source that does not say, an unmapped foreign category

  // Device activity.
  kKernel = 1,        // a compute kernel (CUPTI kernel record, Kineto kernel, a TF op on a GPU stream)
  kMemcpyHtoD = 2,    // copy host -> device (CUDA arrays count as device memory)
  kMemcpyDtoH = 3,    // copy device -> host
  kMemcpyDtoD = 4,    // copy within one device
  kMemcpyHtoH = 5,    // copy host -> host through the device runtime (CUPTI HtoH)
  kMemcpyPtoP = 6,    // copy between two devices (peer to peer)
  kMemcpyOther = 7,   // a copy whose direction the source does not give
  kMemset = 8,        // device memory set
  kSync = 9,          // waiting on device work: stream/event/context synchronization records
  kCollective = 10,   // collective communication kernel (NCCL, RCCL)
  kGraph = 11,        // a CUDA graph's execution recorded as one activity
  kDeviceRange = 12,  // a range drawn on a device timeline (Kineto's gpu_user_annotation)
  kMemoryEvent = 13,  // a memory allocation or free (an instant)
  kOverhead = 14,     // time the profiler itself took (CUPTI overhead records)

  // Host calls into a runtime or library.
  kRuntimeCall = 40,  // CUDA/HIP runtime API call (launches, copies, syncs, allocations, ...)
  kDriverCall = 41,   // CUDA driver API call
  kLibraryCall = 42,  // a call into a math/DNN library: oneDNN primitive, cuDNN, cuBLAS

  // Framework and program.
  kCpuOp = 60,           // a framework operator (PyTorch op, ONNX Runtime node, TensorFlow op on the host)
  kTensorCopy = 61,      // a framework operator whose work is copying tensor data (framework_op_activity)
  kPythonFunction = 62,  // a Python function frame (Kineto's python_function)
  kAnnotation = 63,      // a range or mark named by the program, framework or profiler: the span API,
                         // record_function / user_annotation, ProfilerStep, NVTX, ORT session phases
  kCounter = 64,         // a sampled value (strata_counter, imported counter tracks)

  // Samples.
  kCpuSample = 80,    // a sampled CPU stack
  kGpuPcSample = 81,  // a sampled GPU program counter (stall reasons)
};

// Stable names as used in exports and on the command line ("kernel", "memcpy_htod", "cpu_op");
// unknown values (a newer writer) print as "activity(N)", 0 as "unknown".
std::string activity_name(uint8_t value);
inline std::string activity_name(ActivityType type) { return activity_name(static_cast<uint8_t>(type)); }
// Accepts the names above and numbers 0-255.
std::optional<ActivityType> parse_activity(std::string_view text);

// Every value this version knows, in order (activity_type.cc names each).
inline constexpr uint8_t kKnownActivityValues[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
                                                   13, 14, 40, 41, 42, 60, 61, 62, 63, 64, 80, 81};
// Inline: a loader asks for every span it reads.
inline bool is_known_activity(uint8_t value) {
  static constexpr auto kKnown = [] {
    struct Table {
      bool known[256] = {};
    } t;
    for (uint8_t v : kKnownActivityValues) t.known[v] = true;
    return t;
  }();
  return kKnown.known[value];
}

// Groups, for analyses.
constexpr bool is_memcpy(ActivityType t) {
  return t >= ActivityType::kMemcpyHtoD && t <= ActivityType::kMemcpyOther;
}
// Data movement on the device side (copies and memsets), as opposed to compute.
constexpr bool is_memory_transfer(ActivityType t) { return is_memcpy(t) || t == ActivityType::kMemset; }
constexpr bool is_host_call(ActivityType t) {
  return t == ActivityType::kRuntimeCall || t == ActivityType::kDriverCall || t == ActivityType::kLibraryCall;
}

// Translation helpers for tracers and importers (used where spans enter, never by analyses).
//
// Copy direction from the short codes CUPTI, Kineto, ROCm and TensorFlow write ("HtoD", "H2D",
// "DtoH", "D2H", "DtoD", "D2D", "HtoH", "H2H", "PtoP", "P2P", and CUDA array forms "HtoA", "AtoH",
// "AtoA", "AtoD", "DtoA"), case-insensitive. Anything else: kMemcpyOther.
ActivityType memcpy_activity(std::string_view direction_code);
// A kernel's type from its name: collective communication kernels (names starting with "nccl" or
// "rccl": "ncclKernel_...", "ncclDevKernel_...") are kCollective, everything else kKernel. Kernel names are the only
// place CUPTI and Kineto say that a kernel is a collective.
ActivityType kernel_activity(std::string_view kernel_name);
// A framework op's type from its name: PyTorch's ops that copy tensor data (aten::copy_, aten::to,
// aten::_to_copy, aten::clone, aten::contiguous) are kTensorCopy, every other op kCpuOp. Used by the
// PyTorch layer tracer and the Kineto importer, which know they are looking at PyTorch op names.
ActivityType framework_op_activity(std::string_view op_name);

}  // namespace strata
