#include "analysis/step_breakdown.h"

#include <algorithm>

#include "core/level.h"

namespace strata::analysis {
namespace {

// What an interval of the sweep stands for. Host kinds are ordered by precedence (higher wins).
enum Kind : uint8_t {
  kHostOp,         // any other top-level host work
  kHostBackward,   // autograd engine scopes
  kHostOptimizer,  // optimizer step / zero_grad
  kHostData,       // DataLoader waits
  kHostKinds,
  kDevKernel = kHostKinds,  // compute kernel (not a collective)
  kDevCollective,
  kDevMemcpy,
  kDevMemset,
  kEvalSection,
  kWindow,
  kKindCount
};

struct Event {
  int64_t t;
  int32_t window;  // for kWindow and kEvalSection events, else -1
  int8_t delta;    // +1 open, -1 close
  uint8_t kind;
};

Kind host_kind(ScopeRole role) {
  switch (role) {
    case ScopeRole::kDataWait:
      return kHostData;
    case ScopeRole::kOptimizerStep:
    case ScopeRole::kZeroGrad:
      return kHostOptimizer;
    case ScopeRole::kBackward:
      return kHostBackward;
    case ScopeRole::kNone:
      break;
  }
  return kHostOp;
}

int device_kind(const SpanRecord& s) {
  if (s.level != static_cast<uint8_t>(Level::kDevice) || s.kind != static_cast<uint8_t>(SpanKind::kExecution))
    return -1;
  const ActivityType t = s.activity_type();
  if (t == ActivityType::kKernel || t == ActivityType::kGraph) return kDevKernel;
  if (t == ActivityType::kCollective) return kDevCollective;
  if (is_memcpy(t)) return kDevMemcpy;
  if (t == ActivityType::kMemset) return kDevMemset;
  return -1;
}

struct WindowInfo {
  int64_t first_backward_ns = INT64_MAX;
  int64_t optimizer_end_ns = INT64_MAX;
};

// Classifies one constant segment of the sweep and adds it to its window.
void account(const int32_t (&open)[kKindCount], int64_t at, int64_t length, bool in_eval,
             const WindowInfo& info, StepTime* st) {
  Phase phase = Phase::kOther;
  const bool comm = open[kDevCollective] > 0 && open[kDevKernel] == 0;
  if (in_eval)
    phase = Phase::kEval;
  else if (open[kHostData] > 0)
    phase = Phase::kData;
  else if (open[kHostOptimizer] > 0)
    phase = Phase::kOptimizer;
  else if (comm)
    phase = Phase::kCommunication;
  else if (open[kHostBackward] > 0)
    phase = Phase::kBackward;
  else if (open[kHostOp] > 0)
    phase = at >= info.optimizer_end_ns    ? Phase::kOther  // after the optimizer step: logging, metrics
            : at >= info.first_backward_ns ? Phase::kBackward
                                           : Phase::kForward;
  st->phase_ns[static_cast<size_t>(phase)] += length;
  st->wall_ns += length;
  const bool kernel = open[kDevKernel] > 0 || open[kDevCollective] > 0;
  const bool copy = open[kDevMemcpy] > 0;
  const bool set = open[kDevMemset] > 0;
  if (kernel || copy || set) st->device.busy_ns += length;
  if (kernel)
    st->device.kernel_ns += length;
  else if (copy)
    st->device.memcpy_ns += length;
  else if (set)
    st->device.memset_ns += length;
}

// Self time (duration less its framework-op children) of the ops that compute: at least
// kComputeOpMinNs per call, not a PyTorch scope, not in an eval section; by the window they start in.
void add_compute_time(const trace::Trace& trace, const trace::SpanTree& tree, const RunRecognition& run,
                      const std::vector<std::pair<int64_t, int64_t>>& windows, Breakdown* out) {
  const uint16_t main = static_cast<uint16_t>(run.main_process);
  const size_t n = trace.spans.size();
  auto is_op = [&](const SpanRecord& s) {
    const ActivityType t = s.activity_type();
    return s.process == main && s.kind == static_cast<uint8_t>(SpanKind::kSpan) &&
           (t == ActivityType::kCpuOp || t == ActivityType::kTensorCopy || t == ActivityType::kLibraryCall);
  };
  std::vector<int64_t> child_ns(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int32_t p = tree.parent(i);
    if (p >= 0 && is_op(trace.spans[i]) && is_op(trace.spans[static_cast<size_t>(p)]))
      child_ns[static_cast<size_t>(p)] += trace.spans[i].duration_ns();
  }
  for (size_t i = 0; i < n; ++i) {
    const SpanRecord& s = trace.spans[i];
    if (!is_op(s)) continue;
    const int64_t self = s.duration_ns() - child_ns[i];
    if (self < kComputeOpMinNs || scope_role(trace.name(s)) != ScopeRole::kNone) continue;
    auto it = std::upper_bound(windows.begin(), windows.end(), s.start_ns,
                               [](int64_t v, const std::pair<int64_t, int64_t>& w) { return v < w.first; });
    if (it == windows.begin()) continue;
    const size_t w = static_cast<size_t>(std::prev(it) - windows.begin());
    if (s.start_ns >= windows[w].second) continue;
    if (run.has_steps()) {
      const Step& st = run.steps[w];
      if (st.eval && s.start_ns >= st.eval_start_ns && s.start_ns < st.eval_end_ns) continue;
    }
    out->steps[w].compute_op_ns += self;
  }
}

}  // namespace

std::string_view phase_name(Phase phase) {
  static constexpr std::string_view kNames[kPhaseCount] = {"data", "forward",       "backward", "optimizer",
                                                           "eval", "communication", "other"};
  return kNames[static_cast<size_t>(phase)];
}

Breakdown step_breakdown(const trace::Trace& trace, const trace::SpanTree& tree, const RunRecognition& run) {
  Breakdown out;
  const auto windows = run.windows();
  out.steps.resize(windows.size());
  if (run.main_process < 0 || windows.empty()) return out;
  const uint16_t main = static_cast<uint16_t>(run.main_process);
  out.device_process = main;
  std::vector<WindowInfo> info(windows.size());
  std::vector<Event> events;
  events.reserve(2 * (run.main_tops.size() + windows.size()));
  for (size_t w = 0; w < windows.size(); ++w) {
    events.push_back({windows[w].first, static_cast<int32_t>(w), +1, kWindow});
    events.push_back({windows[w].second, static_cast<int32_t>(w), -1, kWindow});
    if (run.has_steps()) {
      const Step& st = run.steps[w];
      info[w].first_backward_ns = st.first_backward_ns;
      info[w].optimizer_end_ns = st.optimizer_end_ns;
      if (st.eval && st.eval_end_ns > st.eval_start_ns) {
        events.push_back({st.eval_start_ns, static_cast<int32_t>(w), +1, kEvalSection});
        events.push_back({st.eval_end_ns, static_cast<int32_t>(w), -1, kEvalSection});
      }
    }
  }
  for (uint32_t i : run.main_tops) {
    const SpanRecord& s = trace.spans[i];
    if (s.end_ns <= s.start_ns) continue;
    const ScopeRole role = scope_role(trace.name(s));
    const uint8_t kind = host_kind(role);
    events.push_back({s.start_ns, -1, +1, kind});
    events.push_back({s.end_ns, -1, -1, kind});
    if (!run.has_steps() && role == ScopeRole::kBackward)
      info[0].first_backward_ns = std::min(info[0].first_backward_ns, s.start_ns);
  }
  // Leaf framework ops long enough to be computing, and the main process's device work.
  const size_t n = trace.spans.size();
  for (size_t i = 0; i < n; ++i) {
    const SpanRecord& s = trace.spans[i];
    if (s.process != main || s.end_ns <= s.start_ns) continue;
    const int dk = device_kind(s);
    if (dk < 0) continue;
    out.has_device = true;
    out.has_collectives = out.has_collectives || dk == kDevCollective;
    events.push_back({s.start_ns, -1, +1, static_cast<uint8_t>(dk)});
    events.push_back({s.end_ns, -1, -1, static_cast<uint8_t>(dk)});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.t < b.t; });
  int32_t open[kKindCount] = {};
  std::vector<int32_t> open_windows;  // windows open now (the innermost last)
  std::vector<uint8_t> eval_open(windows.size(), 0);
  for (size_t e = 0; e < events.size();) {
    const int64_t t = events[e].t;
    for (; e < events.size() && events[e].t == t; ++e) {
      const Event& ev = events[e];
      if (ev.kind == kWindow) {
        if (ev.delta > 0)
          open_windows.push_back(ev.window);
        else
          std::erase(open_windows, ev.window);
      } else if (ev.kind == kEvalSection) {
        eval_open[static_cast<size_t>(ev.window)] = ev.delta > 0;
      } else {
        open[ev.kind] += ev.delta;
      }
    }
    if (e == events.size() || open_windows.empty()) continue;
    const size_t w = static_cast<size_t>(open_windows.back());
    account(open, t, events[e].t - t, eval_open[w] != 0, info[w], &out.steps[w]);
  }
  add_compute_time(trace, tree, run, windows, &out);
  for (const StepTime& st : out.steps) {
    out.total.wall_ns += st.wall_ns;
    for (size_t p = 0; p < kPhaseCount; ++p) out.total.phase_ns[p] += st.phase_ns[p];
    out.total.compute_op_ns += st.compute_op_ns;
    out.total.device.busy_ns += st.device.busy_ns;
    out.total.device.kernel_ns += st.device.kernel_ns;
    out.total.device.memcpy_ns += st.device.memcpy_ns;
    out.total.device.memset_ns += st.device.memset_ns;
  }
  return out;
}

}  // namespace strata::analysis
