#include "analysis/workload.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

namespace strata::analysis {
namespace {

constexpr uint8_t kModel = static_cast<uint8_t>(Level::kModel);
constexpr uint8_t kLayer = static_cast<uint8_t>(Level::kLayer);
constexpr uint8_t kLibrary = static_cast<uint8_t>(Level::kLibrary);

bool is_activity(const SpanRecord& s) {
  return s.kind != static_cast<uint8_t>(SpanKind::kCounter) &&
         s.kind != static_cast<uint8_t>(SpanKind::kInstant);
}

// Device work that plays the kernel role: executions (kernels, copies, memsets), not device-side
// annotations or synchronization spans that share the device level.
bool is_device_work(const SpanRecord& s) {
  return s.level == static_cast<uint8_t>(Level::kDevice) &&
         s.kind == static_cast<uint8_t>(SpanKind::kExecution);
}

std::optional<double> attr_number(const trace::Trace& trace, const AttrRecord& a) {
  switch (static_cast<AttrType>(a.type)) {
    case AttrType::kInt:
      return static_cast<double>(a.value.i);
    case AttrType::kDouble:
    case AttrType::kMetric:
      return a.value.d;
    case AttrType::kString: {
      std::string_view text = trace.strings.get(static_cast<uint32_t>(a.value.u));
      double v = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec == std::errc() && ptr == text.data() + text.size()) return v;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

Workload::Workload(const trace::Trace& trace, const trace::SpanTree& tree)
    : Workload(trace, tree, recognize_run(trace, tree)) {}

Workload::Workload(const trace::Trace& trace, const trace::SpanTree& tree, RunRecognition run)
    : trace_(trace), tree_(tree), run_(std::move(run)) {
  // The step breakdown's list of top-level host work is not the analyses': it would sit beside the
  // trace through every analysis (analyze's peak memory is within 1.5x the file: trace_memory_test).
  std::vector<uint32_t>().swap(run_.main_tops);
  const size_t n = trace.spans.size();
  top_layer_.assign(n, -1);
  layer_pos_.assign(n, -1);
  std::vector<int32_t> model_of(n, -1);
  // Visit parents before children, so one pass propagates the nearest model span and the outermost
  // layer span down the tree.
  const std::vector<uint32_t> order = spans_parents_first(tree, n);
  size_t device_spans = 0, library_spans = 0;
  // Model spans marked as steps, and for every span the outermost step containing it (or itself).
  const uint32_t step_key = trace.strings.find(attr_keys::kStep);
  std::vector<int32_t> step_of(step_key == UINT32_MAX ? 0 : n, -1);
  for (uint32_t i : order) {
    const SpanRecord& s = trace.spans[i];
    int32_t p = tree.parent(i);
    model_of[i] =
        s.level == kModel ? static_cast<int32_t>(i) : (p >= 0 ? model_of[static_cast<size_t>(p)] : -1);
    if (!step_of.empty()) {
      int32_t parent_step = p >= 0 ? step_of[static_cast<size_t>(p)] : -1;
      bool step = false;
      if (parent_step < 0 && s.level == kModel)
        for (const AttrRecord& a : trace.attributes(i)) step = step || a.key == step_key;
      step_of[i] = parent_step >= 0 ? parent_step : (step ? static_cast<int32_t>(i) : -1);
      steps_marked_ = steps_marked_ || step;
    }
    int32_t parent_layer = p >= 0 ? top_layer_[static_cast<size_t>(p)] : -1;
    top_layer_[i] = parent_layer >= 0 ? parent_layer : (s.level == kLayer ? static_cast<int32_t>(i) : -1);
    if (s.level == kModel) has_model_spans_ = true;
    if (is_device_work(s)) ++device_spans;
    if (is_activity(s) && s.level == kLibrary) ++library_spans;
  }
  // Which model spans are evaluations. With steps marked: the outermost steps; model spans around
  // them group them, those inside are their parts, the rest are not evaluations. Without: a model
  // span that contains other model spans (Kineto's nested user annotations: a benchmark wrapping
  // warm-up and measured forward passes) groups evaluations, and the innermost ones are evaluations.
  const std::vector<uint8_t> wraps_model = mark_model_wrappers(step_of, model_of);
  // The evaluation (model span) that span i belongs to, -1 for none.
  auto evaluation_span = [&](size_t i) -> int32_t {
    if (steps_marked_) return step_of[i];
    int32_t m = model_of[i];
    return m >= 0 && !wraps_model[static_cast<size_t>(m)] ? m : -1;
  };
  kernel_role_ = device_spans    ? KernelRole::kDevice
                 : library_spans ? KernelRole::kLibrary
                                 : KernelRole::kNone;
  auto plays_kernel = [this](const SpanRecord& s) {
    return kernel_role_ == KernelRole::kDevice
               ? is_device_work(s)
               : kernel_role_ == KernelRole::kLibrary && s.level == kLibrary && is_activity(s);
  };

  // Evaluations: one per model span. Without model spans: one per training step of the main process
  // (run_recognition.h), else one per process; DataLoader workers are the input pipeline, never one.
  std::vector<int32_t> eval_of_model(n, -1);
  std::map<uint16_t, size_t> eval_of_process;
  std::vector<int32_t> eval_of_step(run_.steps.size(), -1);
  auto eval_for = [&](size_t i) -> Evaluation& {
    int32_t m = evaluation_span(i);
    if (m >= 0) {
      int32_t& e = eval_of_model[static_cast<size_t>(m)];
      if (e < 0) {
        e = static_cast<int32_t>(evaluations_.size());
        Evaluation ev;
        ev.model_span = m;
        const SpanRecord& ms = trace.spans[static_cast<size_t>(m)];
        ev.process = ms.process;
        ev.start_ns = ms.start_ns;
        ev.latency_ns = ms.duration_ns();
        if (auto b = number(static_cast<size_t>(m), attr_keys::kBatch); b && *b >= 1) {
          ev.batch = static_cast<int64_t>(*b);
          ev.batch_known = true;
        }
        evaluations_.push_back(std::move(ev));
      }
      return evaluations_[static_cast<size_t>(e)];
    }
    return evaluations_[static_cast<size_t>(unit_without_model(i, &eval_of_step, &eval_of_process))];
  };
  std::vector<int64_t> pseudo_end;
  for (size_t i = 0; i < n; ++i) {
    const SpanRecord& s = trace.spans[i];
    if (s.level == kModel && evaluation_span(i) == static_cast<int32_t>(i))
      eval_for(i);  // evaluations with no layers still count for the model table
    bool is_top_layer = top_layer_[i] == static_cast<int32_t>(i);
    bool is_kernel = plays_kernel(s);
    if (!is_top_layer && !is_kernel) continue;
    // Outside every evaluation span: the main process's step, or its process (unit_without_model);
    // none (negative) for DataLoader workers and for the main process outside its steps, with or
    // without model spans elsewhere in the trace.
    int32_t unit = -1;
    if (evaluation_span(i) < 0) {
      unit = unit_without_model(i, &eval_of_step, &eval_of_process);
      if (unit < 0) {
        if (is_top_layer && !has_model_spans_)
          ++(run_.is_input_process(s.process) ? layers_of_workers_ : layers_outside_steps_);
        continue;
      }
    }
    Evaluation& ev = unit >= 0 ? evaluations_[static_cast<size_t>(unit)] : eval_for(i);
    if (is_top_layer) {
      ev.layers.push_back(static_cast<uint32_t>(i));
      ++layer_count_;
    }
    if (is_kernel) ev.kernels.push_back(static_cast<uint32_t>(i));
    if (ev.model_span < 0 && run_.step_source != StepSource::kOptimizerStep) {
      // No model span nor step: the evaluation lasts from its first to its last layer or kernel.
      int64_t end = ev.start_ns == INT64_MAX ? s.end_ns : std::max(ev.start_ns + ev.latency_ns, s.end_ns);
      ev.start_ns = std::min(ev.start_ns, s.start_ns);
      ev.latency_ns = end - ev.start_ns;
    }
  }
  order_evaluations();
}

int32_t Workload::unit_without_model(size_t i, std::vector<int32_t>* step_eval,
                                     std::map<uint16_t, size_t>* per_process) {
  const SpanRecord& s = trace_.spans[i];
  if (run_.is_input_process(s.process)) return -2;
  if (run_.step_source == StepSource::kOptimizerStep) {
    // The main process's training steps; its init and teardown, and other processes, are no evaluation.
    if (s.process != run_.main_process) return -2;
    auto it = std::upper_bound(run_.steps.begin(), run_.steps.end(), s.start_ns,
                               [](int64_t t, const Step& st) { return t < st.start_ns; });
    if (it == run_.steps.begin()) return -2;
    --it;
    if (s.start_ns >= it->end_ns) return -2;
    int32_t& e = (*step_eval)[static_cast<size_t>(it - run_.steps.begin())];
    if (e < 0) {
      e = static_cast<int32_t>(evaluations_.size());
      Evaluation ev;
      ev.process = s.process;
      ev.start_ns = it->start_ns;
      ev.latency_ns = it->duration_ns();
      evaluations_.push_back(std::move(ev));
    }
    return e;
  }
  auto [it, inserted] = per_process->emplace(s.process, evaluations_.size());
  if (inserted) {
    Evaluation ev;
    ev.process = s.process;
    ev.start_ns = INT64_MAX;
    evaluations_.push_back(std::move(ev));
  }
  return static_cast<int32_t>(it->second);
}

// Which model spans group evaluations rather than being one (see the constructor); counts the
// wrappers and, with steps marked, the model spans inside and outside steps.
std::vector<uint8_t> Workload::mark_model_wrappers(const std::vector<int32_t>& step_of,
                                                   const std::vector<int32_t>& model_of) {
  const size_t n = trace_.spans.size();
  std::vector<uint8_t> wraps_model(n, 0);
  if (steps_marked_) {
    for (size_t i = 0; i < n; ++i) {
      if (step_of[i] != static_cast<int32_t>(i)) continue;
      for (int32_t p = tree_.parent(i); p >= 0; p = tree_.parent(static_cast<size_t>(p))) {
        size_t q = static_cast<size_t>(p);
        if (trace_.spans[q].level != kModel) continue;
        if (wraps_model[q]) break;  // its own ancestors are marked already
        wraps_model[q] = 1;
        ++wrapper_model_spans_;
      }
    }
    for (size_t i = 0; i < n; ++i)
      if (trace_.spans[i].level == kModel && step_of[i] != static_cast<int32_t>(i) && !wraps_model[i])
        ++(step_of[i] >= 0 ? inside_steps_ : outside_steps_);
  } else {
    for (size_t i = 0; i < n; ++i) {
      int32_t p = tree_.parent(i);
      if (trace_.spans[i].level == kModel && p >= 0 && model_of[static_cast<size_t>(p)] >= 0) {
        uint8_t& w = wraps_model[static_cast<size_t>(model_of[static_cast<size_t>(p)])];
        if (!w) ++wrapper_model_spans_;
        w = 1;
      }
    }
  }
  return wraps_model;
}

// Each evaluation's layers and kernels by start time (and each layer's position in it), evaluations
// by process and start.
void Workload::order_evaluations() {
  auto by_start = [&](uint32_t a, uint32_t b) {
    const SpanRecord& x = trace_.spans[a];
    const SpanRecord& y = trace_.spans[b];
    return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : a < b;
  };
  for (Evaluation& ev : evaluations_) {
    if (!std::is_sorted(ev.layers.begin(), ev.layers.end(), by_start))
      std::sort(ev.layers.begin(), ev.layers.end(), by_start);
    if (!std::is_sorted(ev.kernels.begin(), ev.kernels.end(), by_start))
      std::sort(ev.kernels.begin(), ev.kernels.end(), by_start);
    for (size_t k = 0; k < ev.layers.size(); ++k) layer_pos_[ev.layers[k]] = static_cast<int32_t>(k);
  }
  std::stable_sort(evaluations_.begin(), evaluations_.end(), [](const Evaluation& a, const Evaluation& b) {
    return a.process != b.process ? a.process < b.process : a.start_ns < b.start_ns;
  });
}

std::vector<std::string> Workload::evaluation_notes() const {
  std::vector<std::string> notes;
  if (steps_marked_) {
    std::string line = "evaluations: the model spans marked as steps";
    if (inside_steps_)
      line += "; " + std::to_string(inside_steps_) + " model spans inside them are their parts";
    if (outside_steps_)
      line += "; " + std::to_string(outside_steps_) + " model spans outside every step are not evaluations";
    notes.push_back(line);
  }
  if (!has_model_spans_ && run_.step_source == StepSource::kOptimizerStep) {
    std::string line = "evaluations: the " + std::to_string(run_.steps.size()) +
                       " training steps of the main process (pid " +
                       std::to_string(trace_.processes[static_cast<size_t>(run_.main_process)].pid) +
                       "), each ending with its optimizer step";
    if (layers_outside_steps_)
      line += "; " + std::to_string(layers_outside_steps_) +
              " top-level layers outside them (initialization, teardown, other processes) not included";
    notes.push_back(line);
  }
  if (layers_of_workers_)
    notes.push_back(std::to_string(layers_of_workers_) + " top-level layers of " +
                    std::to_string(run_.dataloader_workers) +
                    " DataLoader worker processes are the input pipeline, not evaluations");
  if (wrapper_model_spans_)
    notes.push_back(std::to_string(wrapper_model_spans_) +
                    " model spans that contain other model spans are groups, not evaluations");
  return notes;
}

std::optional<double> Workload::number(size_t i, std::string_view key) const {
  uint32_t id = trace_.strings.find(key);
  if (id == UINT32_MAX) return std::nullopt;
  for (const AttrRecord& a : trace_.attributes(i))
    if (a.key == id)
      if (auto v = attr_number(trace_, a)) return v;
  return std::nullopt;
}

namespace {
std::string string_value(const trace::Trace& trace, size_t i, std::string_view key) {
  uint32_t id = trace.strings.find(key);
  if (id == UINT32_MAX) return {};
  for (const AttrRecord& a : trace.attributes(i))
    if (a.key == id) return trace.attr_value_string(a);
  return {};
}
}  // namespace

std::string Workload::layer_type(size_t i) const {
  std::string t = string_value(trace_, i, attr_keys::kOpType);
  return t.empty() ? std::string(trace_.name(trace_.spans[i])) : t;
}

std::string Workload::layer_name(size_t i) const {
  std::string t = string_value(trace_, i, attr_keys::kModule);
  return t.empty() ? std::string(trace_.name(trace_.spans[i])) : t;
}

std::string Workload::shape(size_t i) const { return string_value(trace_, i, attr_keys::kShapes); }

std::vector<std::pair<uint32_t, double>> Workload::metrics(size_t i) const {
  std::vector<std::pair<uint32_t, double>> out;
  for (const AttrRecord& a : trace_.attributes(i))
    if (a.type == static_cast<uint8_t>(AttrType::kMetric)) out.emplace_back(a.key, a.value.d);
  return out;
}

WorkloadRef::WorkloadRef(const AnalysisInput& input) {
  if (input.workload != nullptr) {
    ptr_ = input.workload;
  } else {
    own_.emplace(input.trace, input.tree);
    ptr_ = &*own_;
  }
}

StatOptions stat_options(const Params& params, std::string* error) {
  StatOptions o;
  std::string trim = params.get("trim", "0.1");
  char* end = nullptr;
  double t = std::strtod(trim.c_str(), &end);
  if (end == trim.c_str() || *end != '\0' || !(t >= 0) || t >= 0.5)
    *error = "--param trim=" + trim + " is not a fraction in [0, 0.5): using 0.1";
  else
    o.trim = t;
  o.model_filter = params.get("model", "");
  std::string stat = params.get("stat", "trimmed_mean");
  if (auto s = parse_statistic(stat))
    o.stat = *s;
  else
    *error =
        "--param stat=" + stat + " is not one of trimmed_mean, mean, median, min, max: using trimmed_mean";
  return o;
}

bool included(const Workload& w, const Evaluation& ev, const StatOptions& options) {
  // With model spans recorded, work outside them (setup, a worker thread) is not an evaluation.
  if (w.has_model_spans() && ev.model_span < 0) return false;
  if (options.model_filter.empty()) return true;
  if (ev.model_span < 0) return false;
  return w.trace().name(w.trace().spans[static_cast<size_t>(ev.model_span)]).find(options.model_filter) !=
         std::string_view::npos;
}

std::vector<BatchRow> batch_rows(const Workload& w, const StatOptions& options) {
  std::map<int64_t, BatchRow> rows;
  std::map<int64_t, std::set<uint16_t>> processes;
  for (size_t e = 0; e < w.evaluations().size(); ++e) {
    const Evaluation& ev = w.evaluations()[e];
    if (ev.latency_ns <= 0 || !included(w, ev, options)) continue;
    BatchRow& r = rows[ev.batch];
    r.batch = ev.batch;
    r.batch_known = r.batch_known || ev.batch_known;
    r.evaluations.push_back(e);
    r.samples_ms.push_back(ns_to_ms(ev.latency_ns));
    processes[ev.batch].insert(ev.process);
  }
  std::vector<BatchRow> out;
  for (auto& [batch, r] : rows) {
    r.latency_ms = summarize(r.samples_ms, options.trim);
    r.latency = pick(r.latency_ms, options.stat);
    r.throughput = r.latency > 0 ? static_cast<double>(r.batch) / (r.latency / 1e3) : 0;
    r.runs = processes[batch].size();
    out.push_back(std::move(r));
  }
  return out;
}

Selection select_evaluations(const Workload& w, const Params& params, const StatOptions& options) {
  Selection sel;
  std::vector<BatchRow> rows = batch_rows(w, options);
  std::vector<size_t> candidates;
  if (params.all().count("batch")) {
    sel.batch = params.get_int("batch", 1);
    for (size_t e = 0; e < w.evaluations().size(); ++e)
      if (w.evaluations()[e].batch == sel.batch && included(w, w.evaluations()[e], options))
        candidates.push_back(e);
    if (candidates.empty()) sel.notes.push_back("no evaluation with batch size " + std::to_string(sel.batch));
  } else if (rows.size() > 1) {
    BatchRule rule;
    rule.threshold = params.get_double("threshold", 0.05);
    BatchChoice choice = choose_batch(rows, rule);
    sel.batch = rows[static_cast<size_t>(choice.pick)].batch;
    candidates = rows[static_cast<size_t>(choice.pick)].evaluations;
    sel.notes.push_back("batch size " + std::to_string(sel.batch) +
                        (choice.decided
                             ? " (the optimal batch size; choose another with --param batch=N)"
                             : " (the optimal batch size on the statistics alone: model_table finds the "
                               "choice inside the noise; choose another with --param batch=N)"));
  } else if (rows.size() == 1) {
    sel.batch = rows[0].batch;
    candidates = rows[0].evaluations;
  } else {
    for (size_t e = 0; e < w.evaluations().size(); ++e)
      if (included(w, w.evaluations()[e], options)) candidates.push_back(e);
  }
  for (std::string& note : w.evaluation_notes()) sel.notes.push_back(std::move(note));
  if (!options.model_filter.empty())
    sel.notes.push_back("evaluations: model spans whose name contains \"" + options.model_filter + "\"");
  size_t outside = 0;
  for (const Evaluation& ev : w.evaluations())
    if (w.has_model_spans() && ev.model_span < 0) outside += ev.layers.size();
  if (outside)
    sel.notes.push_back(std::to_string(outside) + " top-level layers outside any model span not included");
  // Keep the evaluations whose layer sequence (count and names) matches the most common one.
  std::map<size_t, size_t> count_by_length;
  for (size_t e : candidates) ++count_by_length[w.evaluations()[e].layers.size()];
  size_t mode = 0, mode_count = 0;
  for (auto [len, count] : count_by_length)
    if (len > 0 && count >= mode_count) mode = len, mode_count = count;  // ties: the longer sequence
  const Evaluation* reference = nullptr;
  size_t excluded = 0, empty = 0;
  for (size_t e : candidates) {
    const Evaluation& ev = w.evaluations()[e];
    if (ev.layers.empty()) {
      if (!ev.kernels.empty() || mode == 0)
        sel.evaluations.push_back(e);
      else
        ++empty;
      continue;
    }
    bool same = ev.layers.size() == mode;
    if (same && reference == nullptr) reference = &ev;
    for (size_t k = 0; same && k < mode; ++k)
      same = w.trace().spans[ev.layers[k]].name == w.trace().spans[reference->layers[k]].name;
    if (same)
      sel.evaluations.push_back(e);
    else
      ++excluded;
  }
  if (excluded)
    sel.notes.push_back(std::to_string(excluded) + " of " + std::to_string(candidates.size()) +
                        " evaluations excluded: their layer sequence differs from the most common one (" +
                        std::to_string(mode) + " layers)");
  if (empty) sel.notes.push_back(std::to_string(empty) + " evaluations without layers excluded");
  if (sel.evaluations.size() > 1) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "values are the %s over %zu evaluations (trim %.2f)",
                  std::string(statistic_name(options.stat)).c_str(), sel.evaluations.size(), options.trim);
    sel.notes.push_back(buf);
  }
  return sel;
}

}  // namespace strata::analysis
