// What a recorded run was, recognized once for every command (summary, analyze, report): the role of
// each process and the unit of work the main process repeated.
//
// Roles: `main` (the process that ran the steps: the most ProfilerStep marks, else optimizer steps,
// else model spans, else ops), `dataloader_worker` (a child of the main process that it forked — same
// command line — while its steps waited on a multi-process DataLoader, and that ran no step, backward
// or optimizer of its own: the input pipeline), `subprocess` (any other child or process), `rank` (a
// process stating its rank in a job: every rank is a trainer; the lowest is the main one).
//
// Unit of work of the main process, first that applies:
//  1. `profiler_step`: model spans marked as steps (attr_keys::kStep; torch.profiler's ProfilerStep#N),
//     the outermost ones.
//  2. `optimizer_step`: the training step PyTorch's optimizer delimits, one per top-level
//     `Optimizer.step#...` scope (the anchor of the iteration miner, iterations/pattern_miner.cc). A
//     step begins with its training work — the last data wait or zero_grad before its first backward —
//     and ends where the next step's begins, so work after an optimizer step (an evaluation pass,
//     logging) belongs to the step it follows, as the miner's extra_after and torch.profiler's
//     ProfilerStep count it; the last step ends with its optimizer step and the work right after it
//     (ops closer to each other than the median step).
//  3. `model_spans`: the evaluations of workload.h (inference calls).
//  4. `none`: no unit; the main process's whole extent is analysed as one window.
// The kind is `training` when the main process ran backward or optimizer work, `inference` with a
// unit but neither, `other` without a unit. Time before the first step is the `init` phase, time after
// the last `teardown`: both outside step statistics.
//
// Evaluation passes: a step whose part after its optimizer step (or, in a ProfilerStep, before its
// training work) runs at least kEvalMinOps framework ops and a quarter of the median step's ops is
// flagged; that part is its eval section.
//
// Names read here are PyTorch's own scope names (DataLoader, Optimizer, autograd engine), the only
// place a trace says what a framework op is for; activity types and attribute keys say the rest.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/span_tree.h"
#include "trace/trace.h"

namespace strata::analysis {

enum class ProcessRole : uint8_t { kMain, kDataloaderWorker, kSubprocess, kRank };
std::string_view role_name(ProcessRole role);

enum class WorkloadKind : uint8_t { kTraining, kInference, kOther };
std::string_view workload_kind_name(WorkloadKind kind);

enum class StepSource : uint8_t { kNone, kProfilerStep, kOptimizerStep, kModelSpans };
std::string_view step_source_name(StepSource source);

// What a PyTorch scope name says a host span is for (prefix match on the name).
enum class ScopeRole : uint8_t { kNone, kDataWait, kOptimizerStep, kZeroGrad, kBackward };
ScopeRole scope_role(std::string_view name);
// The data wait of a multi-process DataLoader (its workers load), not the single-process one.
bool is_multiprocess_data_wait(std::string_view name);

struct ProcessInfo {
  uint16_t process = 0;  // index into trace.processes
  ProcessRole role = ProcessRole::kSubprocess;
  uint64_t spans = 0;
  int64_t first_ns = 0, last_ns = 0;  // extent of its spans (counters and instants excluded)
  int64_t rank = -1;
};

struct Step {
  int64_t index = 0;
  int64_t start_ns = 0, end_ns = 0;
  int32_t span = -1;  // the step's model span (profiler_step, model_spans); -1 otherwise
  bool eval = false;  // an evaluation pass ran in it
  int64_t eval_start_ns = 0, eval_end_ns = 0;  // its eval section, when eval
  int64_t first_backward_ns = 0;               // first backward span's start (end_ns when none)
  int64_t optimizer_end_ns = 0;                // end of its last optimizer step (end_ns when none)
  int64_t duration_ns() const { return end_ns - start_ns; }
};

inline constexpr int64_t kEvalMinOps = 4;

struct RunRecognition {
  WorkloadKind kind = WorkloadKind::kOther;
  StepSource step_source = StepSource::kNone;
  int32_t main_process = -1;                 // index into trace.processes; -1 for an empty trace
  std::vector<ProcessInfo> processes;        // one per trace process, in trace order
  std::vector<Step> steps;                   // start order
  int64_t run_start_ns = 0, run_end_ns = 0;  // the main process's extent
  size_t dataloader_workers = 0;
  bool single_process_loader = false;  // the main process waited on a num_workers=0 DataLoader
  bool multi_process_loader = false;

  // The main process's top-level host work (no host-work ancestor), start order.
  std::vector<uint32_t> main_tops;

  bool has_steps() const { return !steps.empty(); }
  bool is_input_process(uint16_t process) const {
    return process < processes.size() && processes[process].role == ProcessRole::kDataloaderWorker;
  }
  // The analysed windows: the steps, or the main process's extent when there are none.
  std::vector<std::pair<int64_t, int64_t>> windows() const;
  int64_t init_ns() const { return steps.empty() ? 0 : steps.front().start_ns - run_start_ns; }
  int64_t teardown_ns() const { return steps.empty() ? 0 : run_end_ns - steps.back().end_ns; }
};

// Host spans of the main process that count as framework work (ops, library and runtime calls and
// the PyTorch scopes above): what the step breakdown covers. Python frames and other annotations do
// not count (time in them is "other").
bool is_host_work(const SpanRecord& span, std::string_view name);

RunRecognition recognize_run(const trace::Trace& trace, const trace::SpanTree& tree);

// Span indices ordered by tree depth (a counting sort): every parent comes before its children, so
// one pass propagates facts down the tree.
std::vector<uint32_t> spans_parents_first(const trace::SpanTree& tree, size_t n);

}  // namespace strata::analysis
