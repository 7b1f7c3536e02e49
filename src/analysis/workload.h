// What the analyses see of a trace: evaluations (model-level spans, or one per process when no
// model spans were recorded), their top-level layers in execution order, and the spans playing the
// kernel role (device executions; oneDNN/library calls on CPU-only traces). Built once per
// `strata analyze` run and shared by every analysis; it never looks at which tracer wrote a span,
// only at levels, kinds, activity types, the span tree and the canonical attribute keys
// (core/attr_keys.h: tracers and importers write them, the loader renames the spellings of old files).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/batch_choice.h"
#include "analysis/run_recognition.h"
#include "analysis/stats.h"
#include "core/attr_keys.h"

namespace strata::analysis {

enum class KernelRole { kNone, kDevice, kLibrary };

struct Evaluation {
  int32_t model_span = -1;  // -1: no model span (a training step of the main process, or a process)
  uint16_t process = 0;
  int64_t batch = 1;
  bool batch_known = false;
  int64_t start_ns = 0;
  int64_t latency_ns = 0;         // model span duration, else extent of its layers and kernels
  std::vector<uint32_t> layers;   // top-level layer spans, execution (start) order
  std::vector<uint32_t> kernels;  // kernel-role spans, start order
};

class Workload {
 public:
  Workload(const trace::Trace& trace, const trace::SpanTree& tree);
  // With the run already recognized (recognize_run(trace, tree)): not recognized again.
  Workload(const trace::Trace& trace, const trace::SpanTree& tree, RunRecognition run);

  const trace::Trace& trace() const { return trace_; }
  const trace::SpanTree& tree() const { return tree_; }
  const std::vector<Evaluation>& evaluations() const { return evaluations_; }
  // What the run was: process roles, the main process's steps (run_recognition.h).
  const RunRecognition& run() const { return run_; }
  KernelRole kernel_role() const { return kernel_role_; }
  bool has_model_spans() const { return has_model_spans_; }
  bool has_layers() const { return layer_count_ > 0; }
  bool has_kernels() const { return kernel_role_ != KernelRole::kNone; }
  // Model spans that contain other model spans: groups of evaluations, not evaluations.
  size_t wrapper_model_spans() const { return wrapper_model_spans_; }
  // When model spans marked as steps (attr_keys::kStep) exist, the outermost of them are the
  // evaluations; other model spans inside a step are parts of it (forward, backward, optimizer) and
  // model spans outside every step are not evaluations.
  bool steps_marked() const { return steps_marked_; }
  size_t model_spans_inside_steps() const { return inside_steps_; }
  size_t model_spans_outside_steps() const { return outside_steps_; }
  // The notes every analysis that summarizes evaluations adds about how they were chosen.
  std::vector<std::string> evaluation_notes() const;
  // The outermost layer span containing span i (or i itself), -1 if none.
  int32_t top_layer(size_t i) const { return top_layer_[i]; }
  // Position of a top-level layer span within its evaluation's layers, -1 for other spans.
  int32_t layer_position(size_t i) const { return layer_pos_[i]; }

  // Attribute readers (canonical keys): the op type (attr_keys::kOpType, else the span's name), the
  // layer's name (kModule, else the span's name), its input shapes (kShapes).
  std::string layer_type(size_t i) const;
  std::string layer_name(size_t i) const;
  std::string shape(size_t i) const;
  // A numeric attribute (int, double, metric, or a string holding a number) under `key`.
  std::optional<double> number(size_t i, std::string_view key) const;
  // All numeric attributes of kind "metric" on span i: (key id, value).
  std::vector<std::pair<uint32_t, double>> metrics(size_t i) const;

 private:
  std::vector<uint8_t> mark_model_wrappers(const std::vector<int32_t>& step_of,
                                           const std::vector<int32_t>& model_of);
  void order_evaluations();
  // Without model spans: the evaluation a span belongs to (-2: none, it is not part of the model).
  int32_t unit_without_model(size_t i, std::vector<int32_t>* step_eval, std::map<uint16_t, size_t>* per_process);

  const trace::Trace& trace_;
  const trace::SpanTree& tree_;
  RunRecognition run_;
  std::vector<Evaluation> evaluations_;
  std::vector<int32_t> top_layer_;
  std::vector<int32_t> layer_pos_;
  KernelRole kernel_role_ = KernelRole::kNone;
  bool has_model_spans_ = false;
  size_t layer_count_ = 0;
  size_t wrapper_model_spans_ = 0;
  bool steps_marked_ = false;
  size_t inside_steps_ = 0;
  size_t outside_steps_ = 0;
  // Without model spans: top-level layers left out as outside the main process's steps (init and
  // teardown) and as the input pipeline (DataLoader workers).
  size_t layers_outside_steps_ = 0;
  size_t layers_of_workers_ = 0;
};

// The shared workload of an AnalysisInput, built on first use when the caller did not supply one.
class WorkloadRef {
 public:
  explicit WorkloadRef(const AnalysisInput& input);
  const Workload& operator*() const { return *ptr_; }
  const Workload* operator->() const { return ptr_; }

 private:
  std::optional<Workload> own_;
  const Workload* ptr_;
};

// --- Batch sizes and the evaluations an analysis summarizes -------------------------------------

struct StatOptions {
  double trim = 0.1;
  Statistic stat = Statistic::kTrimmedMean;
  std::string model_filter;  // --param model=TEXT: only model spans whose name contains TEXT
};
// --param trim=, stat= and model=; *error is set (and defaults returned) for a bad value.
StatOptions stat_options(const Params& params, std::string* error);
// Whether an evaluation takes part: a model span (when the trace has any) matching the filter.
bool included(const Workload& w, const Evaluation& ev, const StatOptions& options);

// One row per batch size (ascending), with each evaluation's latency and the processes they came from.
std::vector<BatchRow> batch_rows(const Workload& w, const StatOptions& options);

// The evaluations a per-layer analysis summarizes: one batch size (--param batch=N; default the
// optimal batch size) and, among them, those whose layer sequence matches the most common one
// (others, e.g. a warm-up that ran extra ops, are excluded and counted in `notes`).
struct Selection {
  int64_t batch = 1;
  std::vector<size_t> evaluations;
  std::vector<std::string> notes;
};
Selection select_evaluations(const Workload& w, const Params& params, const StatOptions& options);

inline double ns_to_ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

}  // namespace strata::analysis
