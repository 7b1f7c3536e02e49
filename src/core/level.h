// Span levels and kinds: the vocabulary shared by every tracer, the file format and every analysis.
//
// The numeric values are written into trace files and must never change. They are spaced by ten so
// a new level can be inserted between two existing ones (e.g. "iteration" between application and
// model) without renumbering: old traces keep loading and ordering by value stays "outermost first".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata {

enum class Level : uint8_t {
  kApplication = 10,
  kIteration = 15,   // mined training/inference iterations (no tracer emits these; analyses do)
  kModel = 20,       // predict / train step
  kLayer = 30,       // framework op or module
  kLibrary = 40,     // cuDNN, cuBLAS, oneDNN calls
  kRuntimeApi = 50,  // CUDA runtime/driver API calls
  kDevice = 60,      // kernels, copies, memsets executing on a device
  kCpuSample = 70,   // sampled CPU stacks
};

// The deepest level: gating at this level records everything.
inline constexpr Level kDeepestLevel = Level::kCpuSample;

struct LevelName {
  Level level;
  std::string_view name;  // what level_name prints and parse_level reads
};
// Every level, outermost first. Here (not in level.cc) so that the C header's STRATA_LEVEL_*
// numbers are checked against it at compile time (collect/runtime.cc) and the C API can list it.
inline constexpr std::array<LevelName, 8> kLevels{{
    {Level::kApplication, "application"},
    {Level::kIteration, "iteration"},
    {Level::kModel, "model"},
    {Level::kLayer, "layer"},
    {Level::kLibrary, "library"},
    {Level::kRuntimeApi, "runtime_api"},
    {Level::kDevice, "device"},
    {Level::kCpuSample, "cpu_sample"},
}};

enum class SpanKind : uint8_t {
  kSpan = 1,       // a region with begin and end on one thread
  kLaunch = 2,     // host-side call that enqueues device work (linked to an execution by correlation id)
  kExecution = 3,  // device-side activity (kernel, copy, memset)
  kInstant = 4,    // a point in time (start == end)
  kCounter = 5,    // a sampled value (the value is the metric "value")
  kSample = 6,     // a CPU sample
};

// Name of a level as used on the command line and in exports ("layer", "runtime_api"); unknown
// values (from a newer writer) print as "level(37)".
std::string level_name(uint8_t value);
inline std::string level_name(Level level) { return level_name(static_cast<uint8_t>(level)); }
// Accepts the names above, "runtime" as an alias for runtime_api, "device" for device, and numbers.
std::optional<Level> parse_level(std::string_view text);
bool is_known_level(uint8_t value);

std::string kind_name(uint8_t value);

}  // namespace strata
