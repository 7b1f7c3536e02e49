#include "analysis/run_recognition.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "core/attr_keys.h"
#include "core/level.h"

namespace strata::analysis {
namespace {

constexpr uint8_t kModel = static_cast<uint8_t>(Level::kModel);
constexpr uint8_t kLayer = static_cast<uint8_t>(Level::kLayer);

bool is_timed(const SpanRecord& s) {
  return s.kind != static_cast<uint8_t>(SpanKind::kCounter) &&
         s.kind != static_cast<uint8_t>(SpanKind::kInstant);
}

// Per process, what it ran (one pass over the spans).
struct ProcessCounts {
  uint64_t spans = 0, marked_steps = 0, optimizer = 0, backward = 0, model = 0, layer = 0, mp_waits = 0;
  int64_t first = INT64_MAX, last = INT64_MIN;
};

std::optional<int64_t> stated_rank(const trace::Process& p) {
  auto rank = p.properties.get_int("rank");
  if (rank && *rank >= 0) return rank;
  return std::nullopt;
}

}  // namespace

std::string_view role_name(ProcessRole role) {
  switch (role) {
    case ProcessRole::kMain:
      return "main";
    case ProcessRole::kDataloaderWorker:
      return "dataloader_worker";
    case ProcessRole::kSubprocess:
      return "subprocess";
    case ProcessRole::kRank:
      return "rank";
  }
  return "subprocess";
}

std::string_view workload_kind_name(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kTraining:
      return "training";
    case WorkloadKind::kInference:
      return "inference";
    case WorkloadKind::kOther:
      return "other";
  }
  return "other";
}

std::string_view step_source_name(StepSource source) {
  switch (source) {
    case StepSource::kNone:
      return "none";
    case StepSource::kProfilerStep:
      return "profiler_step";
    case StepSource::kOptimizerStep:
      return "optimizer_step";
    case StepSource::kModelSpans:
      return "model_spans";
  }
  return "none";
}

ScopeRole scope_role(std::string_view name) {
  // torch.utils.data's record_function around next(): "enumerate(DataLoader)#_SingleProcess..."
  if (name.starts_with("enumerate(DataLoader)#")) return ScopeRole::kDataWait;
  if (name.starts_with("Optimizer.step#")) return ScopeRole::kOptimizerStep;
  if (name.starts_with("Optimizer.zero_grad#")) return ScopeRole::kZeroGrad;
  // The autograd engine's node scopes ("autograd::engine::evaluate_function: AddmmBackward0").
  if (name.starts_with("autograd::engine::evaluate_function")) return ScopeRole::kBackward;
  return ScopeRole::kNone;
}

bool is_multiprocess_data_wait(std::string_view name) {
  return name.starts_with("enumerate(DataLoader)#_MultiProcessing");
}

bool is_host_work(const SpanRecord& s, std::string_view name) {
  if (s.kind == static_cast<uint8_t>(SpanKind::kCounter) ||
      s.kind == static_cast<uint8_t>(SpanKind::kInstant) ||
      s.kind == static_cast<uint8_t>(SpanKind::kExecution) ||
      s.kind == static_cast<uint8_t>(SpanKind::kSample))
    return false;
  switch (s.activity_type()) {
    case ActivityType::kCpuOp:
    case ActivityType::kTensorCopy:
    case ActivityType::kRuntimeCall:
    case ActivityType::kDriverCall:
    case ActivityType::kLibraryCall:
      return true;
    case ActivityType::kAnnotation:
      // record_function scopes are layer spans; a model-level annotation (a unit, a user range) counts
      // only as one of the PyTorch scopes above.
      return s.level == kLayer || (s.level == kModel && scope_role(name) != ScopeRole::kNone);
    default:
      return false;
  }
}

std::vector<std::pair<int64_t, int64_t>> RunRecognition::windows() const {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (steps.empty()) {
    if (run_end_ns > run_start_ns) out.emplace_back(run_start_ns, run_end_ns);
    return out;
  }
  out.reserve(steps.size());
  for (const Step& s : steps) out.emplace_back(s.start_ns, s.end_ns);
  return out;
}

namespace {

struct Recognizer {
  const trace::Trace& trace;
  const trace::SpanTree& tree;
  RunRecognition out;
  std::vector<ProcessCounts> counts;
  std::vector<uint8_t> host_top;  // top-level host work: no host-work ancestor
  std::vector<uint32_t> tops;     // top-level host work of the main process, start order

  void count_processes();
  void assign_roles();
  void find_steps();
  void steps_from_optimizer();
  void flag_eval_passes();
  int64_t training_start(int64_t start, int64_t end, int64_t* first_backward) const;
  std::vector<uint32_t>::const_iterator first_top_at(int64_t t) const;
};

void Recognizer::count_processes() {
  const size_t n = trace.spans.size();
  counts.assign(trace.processes.size(), {});
  const uint32_t step_key = trace.strings.find(attr_keys::kStep);
  // One pass in file order (the spans' memory order): what each span is and its process's counts.
  std::vector<uint8_t> host(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const SpanRecord& s = trace.spans[i];
    const std::string_view name = trace.name(s);
    host[i] = is_host_work(s, name);
    if (s.process >= counts.size()) continue;
    ProcessCounts& c = counts[s.process];
    ++c.spans;
    if (is_timed(s)) c.first = std::min(c.first, s.start_ns), c.last = std::max(c.last, s.end_ns);
    if (s.level == kModel && s.kind == static_cast<uint8_t>(SpanKind::kSpan)) {
      ++c.model;
      if (step_key != UINT32_MAX)
        for (const AttrRecord& a : trace.attributes(i))
          if (a.key == step_key) ++c.marked_steps;
    }
    if (host[i] && s.level == kLayer) ++c.layer;
    if (!host[i]) continue;
    const ScopeRole role = scope_role(name);
    if (role == ScopeRole::kOptimizerStep) ++c.optimizer;
    if (role == ScopeRole::kBackward) ++c.backward;
    if (role == ScopeRole::kDataWait && is_multiprocess_data_wait(name)) ++c.mp_waits;
  }
  // Top-level host work: host work without a host-work ancestor. A span's parent mostly comes before
  // it in file order; when it does not, its unresolved ancestors are resolved first (outermost first),
  // so each span is resolved once.
  host_top.assign(n, 0);
  std::vector<uint8_t> state(n, 0);  // 0: not yet; 1: no host work at or above it; 2: host work at or above
  std::vector<uint32_t> chain;
  for (size_t i = 0; i < n; ++i) {
    if (state[i] != 0) continue;
    chain.clear();
    int32_t j = static_cast<int32_t>(i);
    while (j >= 0 && state[static_cast<size_t>(j)] == 0) {
      chain.push_back(static_cast<uint32_t>(j));
      j = tree.parent(static_cast<size_t>(j));
    }
    bool inherited = j >= 0 && state[static_cast<size_t>(j)] == 2;
    for (size_t k = chain.size(); k-- > 0;) {
      const uint32_t c = chain[k];
      host_top[c] = host[c] && !inherited;
      inherited = inherited || host[c];
      state[c] = inherited ? 2 : 1;
    }
  }
}

void Recognizer::assign_roles() {
  const size_t np = trace.processes.size();
  out.processes.resize(np);
  bool ranked = false;
  for (size_t p = 0; p < np; ++p) {
    ProcessInfo& info = out.processes[p];
    info.process = static_cast<uint16_t>(p);
    info.spans = counts[p].spans;
    info.first_ns = counts[p].first == INT64_MAX ? 0 : counts[p].first;
    info.last_ns = counts[p].last == INT64_MIN ? 0 : counts[p].last;
    if (auto r = stated_rank(trace.processes[p])) info.rank = *r, ranked = true;
  }
  // The main process: the lowest rank when ranks are stated, else the one that ran the most steps.
  auto key = [&](size_t p) {
    const ProcessCounts& c = counts[p];
    return std::make_tuple(c.marked_steps, c.optimizer, c.model, c.layer, c.spans);
  };
  int32_t main = -1;
  for (size_t p = 0; p < np; ++p) {
    if (counts[p].spans == 0) continue;
    if (ranked) {
      if (out.processes[p].rank < 0) continue;
      if (main < 0 || out.processes[p].rank < out.processes[static_cast<size_t>(main)].rank)
        main = static_cast<int32_t>(p);
    } else if (main < 0 || key(p) > key(static_cast<size_t>(main))) {
      main = static_cast<int32_t>(p);
    }
  }
  out.main_process = main;
  std::unordered_map<int64_t, size_t> by_pid;  // first process with each pid
  for (size_t p = 0; p < np; ++p) by_pid.emplace(trace.processes[p].pid, p);
  for (size_t p = 0; p < np; ++p) {
    ProcessInfo& info = out.processes[p];
    if (info.rank >= 0) {
      info.role = ProcessRole::kRank;
      continue;
    }
    if (static_cast<int32_t>(p) == main) {
      info.role = ProcessRole::kMain;
      continue;
    }
    info.role = ProcessRole::kSubprocess;
    const trace::Process& proc = trace.processes[p];
    auto parent = by_pid.find(proc.ppid);
    if (parent == by_pid.end() || parent->second == p || proc.ppid == 0) continue;
    const trace::Process& parent_proc = trace.processes[parent->second];
    const ProcessCounts& c = counts[p];
    const bool forked = proc.command_line == parent_proc.command_line && proc.host == parent_proc.host;
    const bool ran_training = c.marked_steps || c.optimizer || c.backward;
    if (forked && !ran_training && counts[parent->second].mp_waits > 0) {
      info.role = ProcessRole::kDataloaderWorker;
      if (static_cast<int32_t>(parent->second) == main) ++out.dataloader_workers;
    }
  }
}

void Recognizer::find_steps() {
  const uint16_t main = static_cast<uint16_t>(out.main_process);
  const ProcessCounts& c = counts[main];
  out.run_start_ns = out.processes[main].first_ns;
  out.run_end_ns = out.processes[main].last_ns;
  const size_t n = trace.spans.size();
  for (size_t i = 0; i < n; ++i)
    if (trace.spans[i].process == main && host_top[i]) tops.push_back(static_cast<uint32_t>(i));
  std::stable_sort(tops.begin(), tops.end(),
                   [&](uint32_t a, uint32_t b) { return trace.spans[a].start_ns < trace.spans[b].start_ns; });
  for (uint32_t i : tops) {
    const std::string_view name = trace.name(trace.spans[i]);
    if (scope_role(name) != ScopeRole::kDataWait) continue;
    (is_multiprocess_data_wait(name) ? out.multi_process_loader : out.single_process_loader) = true;
  }
  const uint32_t step_key = trace.strings.find(attr_keys::kStep);
  auto model_units = [&](bool marked) {
    // The outermost marked steps, or the innermost model spans (a model span holding others groups them).
    std::vector<uint8_t> excluded(n, 0);
    std::vector<uint32_t> units;
    for (size_t i = 0; i < n; ++i) {
      const SpanRecord& s = trace.spans[i];
      if (s.process != main || s.level != kModel || s.kind != static_cast<uint8_t>(SpanKind::kSpan)) continue;
      bool mark = false;
      if (marked)
        for (const AttrRecord& a : trace.attributes(i)) mark = mark || a.key == step_key;
      if (marked && !mark) continue;
      for (int32_t p = tree.parent(i); p >= 0; p = tree.parent(static_cast<size_t>(p))) {
        const SpanRecord& ps = trace.spans[static_cast<size_t>(p)];
        if (ps.level != kModel) continue;
        if (marked) {
          bool pm = false;
          for (const AttrRecord& a : trace.attributes(static_cast<size_t>(p))) pm = pm || a.key == step_key;
          if (pm) excluded[i] = 1;  // inside an outer step
        } else {
          excluded[static_cast<size_t>(p)] = 1;  // a group of model spans
        }
      }
      units.push_back(static_cast<uint32_t>(i));
    }
    std::erase_if(units, [&](uint32_t i) { return excluded[i] != 0; });
    return units;
  };
  std::vector<uint32_t> units;
  if (c.marked_steps > 0 && step_key != UINT32_MAX) {
    units = model_units(true);
    out.step_source = StepSource::kProfilerStep;
  } else if (c.optimizer > 0) {
    steps_from_optimizer();
  } else if (c.model > 0) {
    units = model_units(false);
    out.step_source = StepSource::kModelSpans;
  }
  for (uint32_t i : units) {
    Step st;
    st.span = static_cast<int32_t>(i);
    st.start_ns = trace.spans[i].start_ns;
    st.end_ns = trace.spans[i].end_ns;
    out.steps.push_back(st);
  }
  std::stable_sort(out.steps.begin(), out.steps.end(),
                   [](const Step& a, const Step& b) { return a.start_ns < b.start_ns; });
  for (size_t k = 0; k < out.steps.size(); ++k) out.steps[k].index = static_cast<int64_t>(k);
  if (out.steps.empty()) out.step_source = StepSource::kNone;
  const bool trains = c.optimizer > 0 || c.backward > 0;
  out.kind = trains               ? WorkloadKind::kTraining
             : !out.steps.empty() ? WorkloadKind::kInference
                                  : WorkloadKind::kOther;
}

// Where the training work of the window [start, end) begins: the last data wait or zero_grad that
// starts before its first backward (the window's start when there is none); *first_backward gets that
// backward's start (end when none).
int64_t Recognizer::training_start(int64_t start, int64_t end, int64_t* first_backward) const {
  const auto b = first_top_at(start), e = first_top_at(end);
  *first_backward = end;
  for (auto it = b; it != e; ++it)
    if (scope_role(trace.name(trace.spans[*it])) == ScopeRole::kBackward) {
      *first_backward = trace.spans[*it].start_ns;
      break;
    }
  if (*first_backward >= end) return start;
  int64_t ts = start;
  for (auto it = b; it != e && trace.spans[*it].start_ns < *first_backward; ++it) {
    const ScopeRole r = scope_role(trace.name(trace.spans[*it]));
    if (r == ScopeRole::kDataWait || r == ScopeRole::kZeroGrad) ts = trace.spans[*it].start_ns;
  }
  // A zero_grad right before that data wait is training work too.
  for (auto it = b; it != e && trace.spans[*it].start_ns < ts; ++it)
    if (scope_role(trace.name(trace.spans[*it])) == ScopeRole::kZeroGrad && trace.spans[*it].end_ns >= ts - 1)
      ts = trace.spans[*it].start_ns;
  return ts;
}

std::vector<uint32_t>::const_iterator Recognizer::first_top_at(int64_t t) const {
  return std::lower_bound(tops.begin(), tops.end(), t,
                          [&](uint32_t i, int64_t v) { return trace.spans[i].start_ns < v; });
}

// Steps cut at the top-level optimizer steps (see the header).
void Recognizer::steps_from_optimizer() {
  std::vector<uint32_t> marks;
  for (uint32_t i : tops)
    if (scope_role(trace.name(trace.spans[i])) == ScopeRole::kOptimizerStep) marks.push_back(i);
  std::stable_sort(marks.begin(), marks.end(),
                   [&](uint32_t a, uint32_t b) { return trace.spans[a].end_ns < trace.spans[b].end_ns; });
  if (marks.empty()) return;
  out.step_source = StepSource::kOptimizerStep;
  // The first window begins where the op that most often follows an optimizer step first ran.
  std::map<uint32_t, size_t> first_names;
  for (size_t k = 0; k + 1 < marks.size(); ++k) {
    auto it = first_top_at(trace.spans[marks[k]].end_ns);
    if (it != tops.end()) ++first_names[trace.spans[*it].name];
  }
  const SpanRecord& first_mark = trace.spans[marks[0]];
  uint32_t begin_name = UINT32_MAX;
  size_t best = 0;
  for (auto [name, count] : first_names)
    if (count > best) begin_name = name, best = count;
  int64_t window_start = tops.empty() ? first_mark.start_ns : trace.spans[tops.front()].start_ns;
  for (uint32_t i : tops) {
    if (trace.spans[i].start_ns >= first_mark.start_ns) break;
    if (trace.spans[i].name == begin_name) {
      window_start = trace.spans[i].start_ns;
      break;
    }
  }
  // Each window (previous optimizer step's end, this one's end]: where its training work starts.
  std::vector<int64_t> starts;
  for (uint32_t m : marks) {
    const int64_t end = trace.spans[m].end_ns;
    if (end <= window_start) continue;
    int64_t backward = 0;
    starts.push_back(training_start(window_start, end, &backward));
    Step st;
    st.optimizer_end_ns = end;
    out.steps.push_back(st);
    window_start = end;
  }
  for (size_t k = 0; k < out.steps.size(); ++k) {
    Step& st = out.steps[k];
    st.start_ns = starts[k];
    st.end_ns = k + 1 < starts.size() ? std::max(starts[k + 1], st.optimizer_end_ns) : st.optimizer_end_ns;
  }
  // The last step keeps the work right after its optimizer step (an evaluation pass): ops closer to
  // each other than the median step.
  if (out.steps.size() < 2) return;
  std::vector<int64_t> durations;
  for (const Step& st : out.steps) durations.push_back(st.duration_ns());
  std::nth_element(durations.begin(), durations.begin() + static_cast<std::ptrdiff_t>(durations.size() / 2),
                   durations.end());
  const int64_t median = durations[durations.size() / 2];
  Step& last = out.steps.back();
  for (auto it = first_top_at(last.end_ns); it != tops.end(); ++it) {
    const SpanRecord& s = trace.spans[*it];
    if (s.start_ns - last.end_ns > median) break;
    last.end_ns = std::max(last.end_ns, s.end_ns);
  }
}

void Recognizer::flag_eval_passes() {
  // Per step: its first backward, where its training work starts, its last optimizer step's end, and
  // the framework ops before the training work (leading) and after the optimizer step (trailing).
  const size_t n = out.steps.size();
  std::vector<int64_t> ops_in_step(n, 0), leading(n, 0), trailing(n, 0), train_start(n, 0);
  for (size_t k = 0; k < n; ++k) {
    Step& st = out.steps[k];
    train_start[k] = training_start(st.start_ns, st.end_ns, &st.first_backward_ns);
    if (out.step_source != StepSource::kOptimizerStep) {
      st.optimizer_end_ns = st.end_ns;
      int64_t last_opt = -1;
      for (auto it = first_top_at(st.start_ns), e = first_top_at(st.end_ns); it != e; ++it)
        if (scope_role(trace.name(trace.spans[*it])) == ScopeRole::kOptimizerStep)
          last_opt = std::max(last_opt, trace.spans[*it].end_ns);
      if (last_opt >= 0) st.optimizer_end_ns = last_opt;
    }
    for (auto it = first_top_at(st.start_ns), e = first_top_at(st.end_ns); it != e; ++it) {
      const SpanRecord& s = trace.spans[*it];
      if (scope_role(trace.name(s)) != ScopeRole::kNone) continue;
      ++ops_in_step[k];
      if (s.start_ns < train_start[k]) ++leading[k];
      if (s.start_ns >= st.optimizer_end_ns) ++trailing[k];
    }
  }
  if (out.kind != WorkloadKind::kTraining || n == 0) return;
  std::vector<int64_t> sorted = ops_in_step;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(n / 2), sorted.end());
  const int64_t threshold = std::max<int64_t>(kEvalMinOps, sorted[n / 2] / 4);
  for (size_t k = 0; k < n; ++k) {
    Step& st = out.steps[k];
    if (trailing[k] >= threshold && trailing[k] >= leading[k]) {
      st.eval = true;
      st.eval_start_ns = st.optimizer_end_ns;
      st.eval_end_ns = st.end_ns;
    } else if (leading[k] >= threshold) {
      st.eval = true;
      st.eval_start_ns = st.start_ns;
      st.eval_end_ns = train_start[k];
    }
  }
}

}  // namespace

RunRecognition recognize_run(const trace::Trace& trace, const trace::SpanTree& tree) {
  Recognizer r{trace, tree, {}, {}, {}, {}};
  r.count_processes();
  r.assign_roles();
  if (r.out.main_process < 0) return std::move(r.out);
  r.find_steps();
  r.flag_eval_passes();
  r.out.main_tops = std::move(r.tops);
  return std::move(r.out);
}

std::vector<uint32_t> spans_parents_first(const trace::SpanTree& tree, size_t n) {
  uint32_t max_depth = 0;
  for (size_t i = 0; i < n; ++i) max_depth = std::max(max_depth, tree.depth(i));
  std::vector<uint32_t> by_depth_begin(max_depth + 2, 0);
  for (size_t i = 0; i < n; ++i) ++by_depth_begin[tree.depth(i) + 1];
  for (size_t d = 1; d < by_depth_begin.size(); ++d) by_depth_begin[d] += by_depth_begin[d - 1];
  std::vector<uint32_t> order(n);
  std::vector<uint32_t> fill(by_depth_begin.begin(), by_depth_begin.end() - 1);
  for (size_t i = 0; i < n; ++i) order[fill[tree.depth(i)]++] = static_cast<uint32_t>(i);
  return order;
}

}  // namespace strata::analysis
