// What `strata diff` compares (docs/diff.md): the steps of each recording as samples. A recording is
// one run of the program (one "run" tag of `strata record --runs N`, or the whole trace); its steps are
// the ones run_recognition.h finds in its main process (ProfilerStep marks, optimizer-delimited
// iterations, model spans), the first left out as warm-up. Per step: its wall time, the time of each
// item that started in it, and the device time of the work it launched.
//
// Items are matched across traces by level, name, input shapes and module path (attr_keys::kShapes,
// kModule). A host item is framework work of the main process (ops, library and runtime calls, PyTorch
// scopes: is_host_work) and its time in a step is its self time: its duration less the host work
// inside it on its own thread, so the items' time on the main thread (the one that ran most of the
// steps' host work) and kBetweenOps, the step time outside every op of that thread (Python between
// ops, the profiler; on a device-bound step, the host waiting), add up to the step time. A device item is a
// kernel, copy or memset the main process ran, counted in the step of the host call that launched it,
// keyed by its name and the shapes and module of the framework op above it; device time per step is
// the sum of their durations.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/run_recognition.h"
#include "trace/trace.h"

namespace strata::analysis {

inline constexpr std::string_view kBetweenOps = "(between ops)";

struct StepItem {
  uint8_t level = 0;
  bool device = false;
  std::string name, shapes, module;
  // One entry per step it ran in, in step order (sparse: memory goes with the spans, not with items x
  // steps): the step's index, its time there (self time on the host, duration on the device), its calls
  // that started there, and the part of that time on other threads than the main one.
  std::vector<uint32_t> steps;
  std::vector<double> ns, calls, parallel_ns;
};

struct RecordingSteps {
  std::string label;  // the file, with "run N" when the file holds several runs
  StepSource source = StepSource::kNone;
  std::vector<double> step_ns;    // wall time of each step
  std::vector<double> device_ns;  // device time of each step
  bool has_device = false;
  std::vector<StepItem> items;
  size_t warmup_dropped = 0;         // steps left out at the start
  uint64_t items_outside_steps = 0;  // main-process items that started in no step (init, teardown)
  uint64_t other_process_spans = 0;  // spans of the other processes (DataLoader workers, ...): not compared
  // How `strata record` set the allocator (format::keys::kRecordMalloc): "pinned: ...", "default",
  // "user: ..."; empty when the trace does not say (an imported trace, an older recording).
  std::string allocator;
};

// A recording with at least this many steps has its first left out (warm-up: lazy initialization,
// allocator growth), in every recording alike.
inline constexpr size_t kWarmupDropMinSteps = 3;

// The recordings of one trace: one per "run" tag (on a --leveled trace, the runs traced deepest),
// else the trace as one. `label` names the trace in notes. *note gets a line when runs were left out.
std::vector<RecordingSteps> recordings_of(const trace::Trace& trace, const std::string& label,
                                          std::string* note);

// The steps of one recording (a trace holding one run).
RecordingSteps recording_steps(const trace::Trace& trace, std::string label);

}  // namespace strata::analysis
