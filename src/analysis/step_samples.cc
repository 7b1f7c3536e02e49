#include "analysis/step_samples.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include "analysis/leveled_view.h"
#include "core/attr_keys.h"
#include "core/level.h"
#include "format/payloads.h"

namespace strata::analysis {
namespace {

constexpr uint8_t kDeviceLevel = static_cast<uint8_t>(Level::kDevice);

// Framework work of the host: what run_recognition counts (is_host_work), or, in a file that does not
// state activity types (before format 1.1, traces assembled by hand), a span at the layer, library or
// runtime level.
bool host_item(const SpanRecord& s, std::string_view name) {
  if (s.kind != static_cast<uint8_t>(SpanKind::kSpan) && s.kind != static_cast<uint8_t>(SpanKind::kLaunch))
    return false;
  if (s.level >= kDeviceLevel) return false;
  if (s.activity_type() == ActivityType::kUnknown)
    return s.level >= static_cast<uint8_t>(Level::kLayer) &&
           s.level <= static_cast<uint8_t>(Level::kRuntimeApi);
  return is_host_work(s, name);
}

// Work that ran on a device: kernels, copies, memsets, collectives, graphs (not the ranges drawn on a
// device timeline, nor the profiler's overhead records).
bool device_item(const SpanRecord& s) {
  if (s.level != kDeviceLevel || s.kind != static_cast<uint8_t>(SpanKind::kExecution)) return false;
  switch (s.activity_type()) {
    case ActivityType::kDeviceRange:
    case ActivityType::kOverhead:
    case ActivityType::kMemoryEvent:
    case ActivityType::kSync:
      return false;
    default:
      return true;
  }
}

std::string text_attr(const trace::Trace& trace, size_t i, std::string_view key) {
  auto a = trace.find_attr(i, key);
  return a ? trace.attr_value_string(*a) : std::string();
}

// Total length of the union of intervals (sorted here).
int64_t union_ns(std::vector<std::pair<int64_t, int64_t>>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  int64_t total = 0, open = INT64_MIN, close = INT64_MIN;
  for (auto [b, e] : intervals) {
    if (e <= b) continue;
    if (b > close) {
      if (close > open) total += close - open;
      open = b;
      close = e;
    } else {
      close = std::max(close, e);
    }
  }
  if (close > open) total += close - open;
  return total;
}

struct Collector {
  const trace::Trace& trace;
  const trace::SpanTree& tree;
  std::vector<std::pair<int64_t, int64_t>> windows;  // every step, warm-up included
  size_t dropped = 0;                                // leading windows left out
  RecordingSteps out;
  std::unordered_map<std::string, size_t> index;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> tops_in_step;
  uint32_t main_tid = 0;  // the thread that ran most of the steps' top-level host work

  // The step that time t falls in (relative to the kept steps), or -1.
  int64_t step_at(int64_t t) const {
    auto it = std::upper_bound(windows.begin(), windows.end(), t,
                               [](int64_t v, const std::pair<int64_t, int64_t>& w) { return v < w.first; });
    if (it == windows.begin()) return -1;
    --it;
    if (t >= it->second) return -1;
    const size_t k = static_cast<size_t>(it - windows.begin());
    return k < dropped ? -2 : static_cast<int64_t>(k - dropped);
  }

  size_t item(uint8_t level, bool device, std::string_view name, std::string shapes, std::string module) {
    std::string key(1, static_cast<char>(level));
    key.append(name).append(1, '\x1f').append(shapes).append(1, '\x1f').append(module);
    auto [it, fresh] = index.try_emplace(std::move(key), out.items.size());
    if (fresh) {
      StepItem& made = out.items.emplace_back();
      made.level = level;
      made.device = device;
      made.name = std::string(name);
      made.shapes = std::move(shapes);
      made.module = std::move(module);
      pending.emplace_back();
    }
    return it->second;
  }

  // Each item's occurrences, gathered in span order and put in step order by finish().
  struct Occurrence {
    uint32_t step;
    double ns, parallel_ns;
  };
  std::vector<std::vector<Occurrence>> pending;
  void add(size_t item, int64_t step, double ns, double parallel_ns) {
    pending[item].push_back({static_cast<uint32_t>(step), ns, parallel_ns});
  }
  void finish();

  void add_host(size_t i, const std::vector<uint8_t>& is_host, bool top);
  void add_device(size_t i, const std::vector<uint8_t>& is_host);
};

// A host item: its self time (less the host work inside it on its own thread) in the step it started in.
void Collector::add_host(size_t i, const std::vector<uint8_t>& is_host, bool top) {
  const SpanRecord& s = trace.spans[i];
  const int64_t k = step_at(s.start_ns);
  if (k == -1) ++out.items_outside_steps;
  if (k < 0) return;
  std::vector<std::pair<int64_t, int64_t>> inside;
  for (uint32_t c : tree.children(i)) {
    const SpanRecord& cs = trace.spans[c];
    if (is_host[c] && cs.tid == s.tid && cs.process == s.process)
      inside.emplace_back(std::max(cs.start_ns, s.start_ns), std::min(cs.end_ns, s.end_ns));
  }
  const int64_t self = std::max<int64_t>(0, s.duration_ns() - union_ns(inside));
  const size_t it = item(s.level, false, trace.name(s), text_attr(trace, i, attr_keys::kShapes),
                         text_attr(trace, i, attr_keys::kModule));
  add(it, k, static_cast<double>(self), s.tid != main_tid ? static_cast<double>(self) : 0.0);
  if (top && s.tid == main_tid) {
    const auto& w = windows[static_cast<size_t>(k) + dropped];
    tops_in_step[static_cast<size_t>(k)].emplace_back(std::max(s.start_ns, w.first),
                                                      std::min(s.end_ns, w.second));
  }
}

// A device item: counted in the step of the host call that launched it (its own start without one),
// keyed by its name and the shapes and module path of the nearest framework op above it.
void Collector::add_device(size_t i, const std::vector<uint8_t>& is_host) {
  const SpanRecord& s = trace.spans[i];
  int32_t p = tree.parent(i);
  while (p >= 0 && trace.spans[static_cast<size_t>(p)].level >= kDeviceLevel)
    p = tree.parent(static_cast<size_t>(p));
  const int64_t k = step_at(p >= 0 ? trace.spans[static_cast<size_t>(p)].start_ns : s.start_ns);
  if (k == -1) ++out.items_outside_steps;
  if (k < 0) return;
  std::string shapes, module;
  for (int depth = 0; p >= 0 && depth < 16 && (shapes.empty() || module.empty()); ++depth) {
    const size_t a = static_cast<size_t>(p);
    if (is_host[a]) {
      if (shapes.empty()) shapes = text_attr(trace, a, attr_keys::kShapes);
      if (module.empty()) module = text_attr(trace, a, attr_keys::kModule);
    }
    p = tree.parent(a);
  }
  const double ns = static_cast<double>(std::max<int64_t>(0, s.duration_ns()));
  add(item(s.level, true, trace.name(s), std::move(shapes), std::move(module)), k, ns, 0.0);
  out.device_ns[static_cast<size_t>(k)] += ns;
  out.has_device = true;
}

void Collector::finish() {
  for (size_t n = 0; n < out.items.size(); ++n) {
    std::vector<Occurrence>& occ = pending[n];
    std::stable_sort(occ.begin(), occ.end(),
                     [](const Occurrence& a, const Occurrence& b) { return a.step < b.step; });
    StepItem& it = out.items[n];
    for (const Occurrence& o : occ) {
      if (it.steps.empty() || it.steps.back() != o.step) {
        it.steps.push_back(o.step);
        it.ns.push_back(0);
        it.calls.push_back(0);
        it.parallel_ns.push_back(0);
      }
      it.ns.back() += o.ns;
      it.calls.back() += 1;
      it.parallel_ns.back() += o.parallel_ns;
    }
    std::vector<Occurrence>().swap(occ);
  }
}

// The processes of one run (those tagged `tag`), with their spans and attributes.
trace::Trace run_subset(const trace::Trace& trace, int64_t tag) {
  trace::Trace out;
  // Same string ids: the pool holds each string once, so interning them in id order reproduces it.
  for (uint32_t id = 1; id < trace.strings.size(); ++id) out.strings.intern(trace.strings.get(id));
  std::vector<int32_t> process_map(trace.processes.size(), -1);
  for (size_t p = 0; p < trace.processes.size(); ++p)
    if (trace.processes[p].properties.get_int("run") == tag)
      process_map[p] = out.add_process(trace.processes[p]);
  size_t spans = 0;
  for (const SpanRecord& s : trace.spans)
    spans += s.process < process_map.size() && process_map[s.process] >= 0;
  out.reserve(spans, trace.attrs.size());
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    SpanRecord s = trace.spans[i];
    if (s.process >= process_map.size() || process_map[s.process] < 0) continue;
    s.process = static_cast<uint16_t>(process_map[s.process]);
    out.add_span(s, trace.attributes(i));
  }
  return out;
}

}  // namespace

RecordingSteps recording_steps(const trace::Trace& trace, std::string label) {
  const trace::SpanTree& tree = trace.tree();
  const RunRecognition run = recognize_run(trace, tree);
  Collector c{trace, tree, run.windows(), 0, {}, {}, {}, 0, {}};
  c.out.label = std::move(label);
  c.out.source = run.step_source;
  if (run.main_process < 0 || c.windows.empty()) return std::move(c.out);
  if (c.windows.size() >= kWarmupDropMinSteps) c.dropped = 1;
  c.out.warmup_dropped = c.dropped;
  for (size_t k = c.dropped; k < c.windows.size(); ++k)
    c.out.step_ns.push_back(static_cast<double>(c.windows[k].second - c.windows[k].first));
  const size_t steps = c.out.step_ns.size();
  c.out.device_ns.assign(steps, 0.0);
  c.tops_in_step.resize(steps);
  const size_t n = trace.spans.size();
  std::vector<uint8_t> is_host(n, 0), under_host(n, 0);
  for (size_t i = 0; i < n; ++i) is_host[i] = host_item(trace.spans[i], trace.name(trace.spans[i]));
  const uint16_t main = static_cast<uint16_t>(run.main_process);
  const std::vector<uint32_t> order = spans_parents_first(tree, n);
  std::vector<uint8_t> top(n, 0);
  std::map<uint32_t, int64_t> top_ns_by_thread;
  for (uint32_t i : order) {
    const int32_t p = tree.parent(i);
    const bool inherited = p >= 0 && under_host[static_cast<size_t>(p)] != 0;
    under_host[i] = inherited || is_host[i];
    top[i] = is_host[i] && !inherited;
    const SpanRecord& s = trace.spans[i];
    if (top[i] && s.process == main && c.step_at(s.start_ns) >= 0) top_ns_by_thread[s.tid] += s.duration_ns();
  }
  int64_t most = -1;
  for (auto [tid, ns] : top_ns_by_thread)
    if (ns > most) most = ns, c.main_tid = tid;
  for (uint32_t i : order) {
    const SpanRecord& s = trace.spans[i];
    if (s.process != main) {
      ++c.out.other_process_spans;
      continue;
    }
    if (is_host[i])
      c.add_host(i, is_host, top[i] != 0);
    else if (device_item(s))
      c.add_device(i, is_host);
  }
  // The step time outside every op: the wall time less the union of the top-level host work of the
  // main thread in it (so that the main thread's items and this add up to the step time).
  const size_t between = c.item(static_cast<uint8_t>(Level::kModel), false, kBetweenOps, "", "");
  for (size_t k = 0; k < steps; ++k)
    c.add(between, static_cast<int64_t>(k),
          std::max(0.0, c.out.step_ns[k] - static_cast<double>(union_ns(c.tops_in_step[k]))), 0.0);
  c.finish();
  return std::move(c.out);
}

std::vector<RecordingSteps> recordings_of(const trace::Trace& trace, const std::string& label,
                                          std::string* note) {
  const std::vector<int> levels = leveled_run_levels(trace);
  trace::Trace leveled;
  const trace::Trace* source = &trace;
  if (!levels.empty()) {
    int runs = 0;
    const int level = choose_run_level(levels, std::nullopt);
    leveled = runs_traced_to(trace, level, &runs);
    source = &leveled;
    *note = label + ": " + leveled_note(levels, level, runs, std::nullopt);
  }
  std::map<int64_t, size_t> tags;
  size_t untagged = 0;
  for (const trace::Process& p : source->processes) {
    if (auto tag = p.properties.get_int("run"))
      ++tags[*tag];
    else
      ++untagged;
  }
  std::vector<RecordingSteps> out;
  const std::string allocator{trace.record.get(format::keys::kRecordMalloc).value_or("")};
  if (tags.size() <= 1) {
    out.push_back(recording_steps(*source, label));
    out.back().allocator = allocator;
    return out;
  }
  if (untagged > 0)
    *note += (note->empty() ? "" : "; ") + label + ": " + std::to_string(untagged) +
             " process(es) without a run tag left out";
  for (const auto& [tag, count] : tags) {
    (void)count;
    out.push_back(recording_steps(run_subset(*source, tag), label + " run " + std::to_string(tag)));
    out.back().allocator = allocator;
  }
  return out;
}

}  // namespace strata::analysis
