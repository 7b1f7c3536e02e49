#include "analysis/run_summary.h"

#include <algorithm>
#include <unordered_map>

#include "analysis/stats.h"
#include "core/attr_keys.h"
#include "core/level.h"
#include "format/payloads.h"

namespace strata::analysis {
namespace {

bool is_op(const SpanRecord& s) {
  const ActivityType t = s.activity_type();
  return (t == ActivityType::kCpuOp || t == ActivityType::kTensorCopy || t == ActivityType::kLibraryCall) &&
         s.kind == static_cast<uint8_t>(SpanKind::kSpan);
}

// Ops of the main process inside the analysed windows, by name: self time (duration less the
// durations of its op children), count and gross allocations.
std::vector<TopOp> top_ops(const trace::Trace& trace, const trace::SpanTree& tree, const RunRecognition& run,
                           size_t keep) {
  std::vector<TopOp> out;
  if (run.main_process < 0 || keep == 0) return out;
  const uint16_t main = static_cast<uint16_t>(run.main_process);
  const auto windows = run.windows();
  auto inside = [&](int64_t t) {
    auto it = std::upper_bound(windows.begin(), windows.end(), t,
                               [](int64_t v, const std::pair<int64_t, int64_t>& w) { return v < w.first; });
    return it != windows.begin() && t < std::prev(it)->second;
  };
  const size_t n = trace.spans.size();
  std::vector<int64_t> child_ns(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const SpanRecord& s = trace.spans[i];
    const int32_t p = tree.parent(i);
    if (p >= 0 && s.process == main && is_op(s) && is_op(trace.spans[static_cast<size_t>(p)]))
      child_ns[static_cast<size_t>(p)] += s.duration_ns();
  }
  const uint32_t alloc_key = trace.strings.find(attr_keys::kAllocBytes);
  struct Agg {
    int64_t self_ns = 0, count = 0;
    double alloc = 0;
    bool has_alloc = false;
  };
  std::unordered_map<uint32_t, Agg> by_name;
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const SpanRecord& s = trace.spans[i];
    if (s.process != main || !is_op(s) || !inside(s.start_ns)) continue;
    const int64_t self = std::max<int64_t>(0, s.duration_ns() - child_ns[i]);
    Agg& a = by_name[s.name];
    a.self_ns += self;
    ++a.count;
    total += self;
    if (alloc_key == UINT32_MAX) continue;
    for (const AttrRecord& attr : trace.attributes(i))
      if (attr.key == alloc_key && attr.type == static_cast<uint8_t>(AttrType::kInt))
        a.alloc += static_cast<double>(attr.value.i), a.has_alloc = true;
  }
  std::vector<std::pair<uint32_t, Agg>> rows(by_name.begin(), by_name.end());
  std::sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    return a.second.self_ns != b.second.self_ns ? a.second.self_ns > b.second.self_ns
                                                : trace.strings.get(a.first) < trace.strings.get(b.first);
  });
  for (size_t r = 0; r < rows.size() && r < keep; ++r) {
    TopOp op;
    op.name = std::string(trace.strings.get(rows[r].first));
    op.self_ms = static_cast<double>(rows[r].second.self_ns) / 1e6;
    op.self_pct =
        total > 0 ? 100.0 * static_cast<double>(rows[r].second.self_ns) / static_cast<double>(total) : 0;
    op.count = rows[r].second.count;
    if (rows[r].second.has_alloc) op.alloc_mb = rows[r].second.alloc / 1e6;
    out.push_back(std::move(op));
  }
  return out;
}

}  // namespace

RunSummary summarize_run(const trace::Trace& trace, const trace::SpanTree& tree,
                         const SummaryOptions& options) {
  RunSummary s;
  s.run = recognize_run(trace, tree);
  s.breakdown = step_breakdown(trace, tree, s.run);
  if (s.run.has_steps()) {
    std::vector<double> ms;
    ms.reserve(s.run.steps.size());
    for (const Step& st : s.run.steps) ms.push_back(static_cast<double>(st.duration_ns()) / 1e6);
    std::sort(ms.begin(), ms.end());
    s.step_median_ms = percentile_sorted(ms, 50);
    s.step_p90_ms = percentile_sorted(ms, 90);
  }
  for (const trace::Process& p : trace.processes)
    if (auto cpus = p.properties.get_int("end." + std::string(format::keys::kEndCpus)); cpus && *cpus > 0)
      s.host_cores = std::max(s.host_cores, *cpus);
  s.top_ops = top_ops(trace, tree, s.run, options.top_ops);
  judge(trace, tree, &s);
  return s;
}

}  // namespace strata::analysis
