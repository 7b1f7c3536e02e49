// Shared by the cross-rank analyses (rank_analyses.cc, rank_device.cc, rank_queue.cc,
// rank_launch.cc, iterations/rank_steps.cc): whose spans a process holds (its rank), which spans
// occupy a device stream, the runtime call that launched a device span, and the robust statistics
// they summarize with.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/analysis.h"

namespace strata::analysis::ranks {

inline constexpr const char* kNeedRanks =
    "no process has a rank: merge the ranks' traces with `strata merge`, record under torchrun/SLURM/MPI, or "
    "import Kineto traces with distributedInfo";
inline constexpr const char* kNeedDeviceWork =
    "no kernels, collectives or copies on any device stream: import a Kineto/nsys GPU trace or record with "
    "--level device";

// The owner of each process's spans: its rank (>= 0) when the process states one, else -1 - its
// index, so that a trace without ranks (one rank's own trace) is analysed per process; such owners
// show an empty rank cell.
std::vector<int64_t> owner_of_processes(const trace::Trace& trace);
Cell rank_cell(int64_t owner);
std::string owner_label(int64_t owner);  // "rank 3", "process 0" (its index, for an unranked one)

// Device work that holds a stream while it runs: kernels, collectives, graphs, copies and memsets
// (execution spans on a device stream). Sync records, device ranges and memory events do not.
bool occupies_stream(const SpanRecord& span);

// The host call (runtime or driver API) that launched device span i, by the span tree's correlation
// link; -1 when the trace has none for it.
int32_t launch_call(const trace::Trace& trace, const trace::SpanTree& tree, size_t i);

// --param scope: which device work the HTA-style analyses (rank_breakdown, idle_time, comm_overlap)
// count. "trace" (the default): all of it. "steps": HTA's own default scope, so the figures compare
// with HTA's — on an owner with two or more ProfilerStep marks, only the work whose launch call started
// before the last step began (HTA leaves the last, often cut-off, step out; work with no known launch
// call is left out with it, as HTA's correlation join does); an owner with fewer marks keeps all.
// *in_scope gets one flag per span (empty: everything counts). False with *error for a bad value.
inline constexpr std::string_view kScopeParam = "scope";
bool device_scope(const AnalysisInput& input, std::span<const int64_t> owners, std::vector<char>* in_scope,
                  std::string* error);
inline bool counts(const std::vector<char>& in_scope, size_t i) { return in_scope.empty() || in_scope[i]; }
inline constexpr const char* kScopeNote =
    "scope=steps: device work launched before each rank's last ProfilerStep began (HTA's scope)";

// The trace's earliest span start: the origin of the *_ms columns.
int64_t trace_origin(const trace::Trace& trace);

inline double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
inline double us(int64_t ns) { return static_cast<double>(ns) / 1e3; }
inline double pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0;
}

// --param KEY as a finite number >= min, `fallback` when absent. False with *error naming the key and
// what it takes when the value is not such a number.
bool number_param(const Params& params, std::string_view key, double fallback, double min, double* out,
                  std::string* error);

// Median and median absolute deviation (raw, not scaled to a normal sigma); both 0 when empty.
struct MedianMad {
  double median = 0;
  double mad = 0;
};
MedianMad median_mad(std::vector<double> values);

// Sorted copy's q-th percentile (NumPy's linear interpolation; analysis/stats.h).
double percentile(std::vector<double> values, double q);

}  // namespace strata::analysis::ranks
