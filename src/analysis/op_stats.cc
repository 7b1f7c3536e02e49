// Zins & Dagenais III-F/G: per-op statistics over every instance in the trace (nested ops
// included, as framework profilers count them): count, total (inclusive) and self (exclusive)
// time, their shares of the top-level op time, mean, standard deviation and percentiles; top N.
#include <algorithm>
#include <unordered_map>

#include "analysis/analysis_util.h"

namespace strata::analysis {
namespace {

constexpr uint8_t kDeviceLevel = static_cast<uint8_t>(Level::kDevice);

// The level op_stats reads: --param level, else layers when recorded, else the kernel role.
std::optional<Level> default_level(const model::Trace& trace) {
  bool layers = false, library = false, device = false;
  for (const SpanRecord& s : trace.spans) {
    layers |= s.level == static_cast<uint8_t>(Level::kLayer);
    library |= s.level == static_cast<uint8_t>(Level::kLibrary);
    device |= s.level == kDeviceLevel;
  }
  if (layers) return Level::kLayer;
  if (device) return Level::kDevice;
  if (library) return Level::kLibrary;
  return std::nullopt;
}

// Length of the union of intervals, each clipped to [lo, hi].
int64_t covered_ns(std::vector<std::pair<int64_t, int64_t>>& intervals, int64_t lo, int64_t hi) {
  std::sort(intervals.begin(), intervals.end());
  int64_t covered = 0, reach = lo;
  for (auto [start, end] : intervals) {
    start = std::max(start, reach);
    end = std::min(end, hi);
    if (end > start) covered += end - start, reach = end;
  }
  return covered;
}

struct OpTimes {
  std::vector<double> total_ms;  // one per instance (inclusive)
  double self_ms = 0;
};

struct Collected {
  std::unordered_map<uint32_t, OpTimes> by_name;
  double top_level_ms = 0;  // instances with no op of the same level around them
  size_t skipped = 0;       // device spans that are not executions
  size_t clamped = 0;       // instances whose nested ops overran them (other threads): self 0
};

Collected collect(const model::Trace& trace, const model::SpanTree& tree, uint8_t want) {
  Collected c;
  const size_t n = trace.spans.size();
  auto counted = [&](size_t i) {
    const SpanRecord& s = trace.spans[i];
    if (s.level != want || s.kind == static_cast<uint8_t>(SpanKind::kCounter) ||
        s.kind == static_cast<uint8_t>(SpanKind::kInstant))
      return false;
    // On the device only executions are ops: synchronization and annotation spans share the level.
    return want != kDeviceLevel || s.kind == static_cast<uint8_t>(SpanKind::kExecution);
  };
  // The nearest counted ancestor of each counted span (-1: a top-level op).
  std::vector<int32_t> outer(n, -1);
  std::vector<std::vector<std::pair<int64_t, int64_t>>> nested;  // per counted span with nested ops
  std::unordered_map<size_t, size_t> nested_slot;
  for (size_t i = 0; i < n; ++i) {
    if (!counted(i)) {
      const SpanRecord& s = trace.spans[i];
      if (want == kDeviceLevel && s.level == want && s.kind != static_cast<uint8_t>(SpanKind::kCounter) &&
          s.kind != static_cast<uint8_t>(SpanKind::kInstant))
        ++c.skipped;
      continue;
    }
    int32_t a = tree.parent(i);
    while (a >= 0 && !counted(static_cast<size_t>(a))) a = tree.parent(static_cast<size_t>(a));
    outer[i] = a;
    if (a < 0) continue;
    auto [it, inserted] = nested_slot.try_emplace(static_cast<size_t>(a), nested.size());
    if (inserted) nested.emplace_back();
    nested[it->second].emplace_back(trace.spans[i].start_ns, trace.spans[i].end_ns);
  }
  for (size_t i = 0; i < n; ++i) {
    if (!counted(i)) continue;
    const SpanRecord& s = trace.spans[i];
    const int64_t duration = s.duration_ns();
    int64_t self = duration;
    if (auto it = nested_slot.find(i); it != nested_slot.end()) {
      auto& intervals = nested[it->second];
      int64_t inner = covered_ns(intervals, s.start_ns, s.end_ns);
      int64_t outside = 0;  // nested ops running past this op's interval (on another thread)
      for (auto [start, end] : intervals) outside += std::max<int64_t>(0, end - s.end_ns) + std::max<int64_t>(0, s.start_ns - start);
      if (outside > 0) ++c.clamped;
      self = std::max<int64_t>(0, duration - inner);
    }
    OpTimes& op = c.by_name[s.name];
    op.total_ms.push_back(ns_to_ms(duration));
    op.self_ms += ns_to_ms(self);
    if (outer[i] < 0) c.top_level_ms += ns_to_ms(duration);
  }
  return c;
}

class OpStats : public Analysis {
 public:
  std::string_view name() const override { return "op_stats"; }
  std::string_view description() const override {
    return "per-op statistics over all instances: count, total (inclusive) and self (exclusive) time and "
           "their share of top-level op time, mean, stddev, min, p50, p90, p99, max; top N (--param "
           "level=layer|library|device, top=20, sort=total|self)";
  }
  std::optional<Level> timed_level(const Params& params) const override {
    auto level = parse_level(params.get("level", ""));
    return level ? level : std::optional<Level>(Level::kLayer);
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    const model::Trace& trace = input.trace;
    const std::string level_text = input.params.get("level", "");
    const std::string sort = input.params.get("sort", "total");
    if (sort != "total" && sort != "self")
      return missing(("--param sort=" + sort + " is not one of total, self (op_stats sorts by them)").c_str());
    std::optional<Level> level;
    if (!level_text.empty()) {
      level = parse_level(level_text);
      if (!level)
        return missing(
            ("--param level=" + level_text + " is not a level name (model, layer, library, device, ...)").c_str());
    } else {
      level = default_level(trace);
      if (!level) return missing(kNeedLayer);
    }
    Collected c = collect(trace, input.tree, static_cast<uint8_t>(*level));
    if (c.by_name.empty())
      return missing(("no spans at level " + level_name(*level) + " in the trace: record with --level " +
                      level_name(*level) + " or deeper")
                         .c_str());
    Table t = make_table("op_stats", "Per-op statistics (" + level_name(*level) + " spans)",
                         {"name", "count", "total_ms", "self_ms", "total_pct", "self_pct", "mean_ms", "stddev_ms",
                          "min_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms"});
    auto share = [&](double ms) { return Cell::real(c.top_level_ms > 0 ? 100 * ms / c.top_level_ms : 0, 2); };
    for (auto& [name, op] : c.by_name) {
      std::sort(op.total_ms.begin(), op.total_ms.end());
      Summary s = summarize(op.total_ms, 0);
      t.rows.push_back({Cell::text(std::string(trace.strings.get(name))),
                        Cell::integer(static_cast<int64_t>(s.count)), Cell::real(s.total, 4),
                        Cell::real(op.self_ms, 4), share(s.total), share(op.self_ms), Cell::real(s.mean, 4),
                        Cell::real(s.stddev, 4), Cell::real(s.min, 4),
                        Cell::real(percentile_sorted(op.total_ms, 50), 4),
                        Cell::real(percentile_sorted(op.total_ms, 90), 4),
                        Cell::real(percentile_sorted(op.total_ms, 99), 4), Cell::real(s.max, 4)});
    }
    // Descending by the chosen time; ties by name so the output does not depend on hash order.
    const size_t key = sort == "self" ? 3 : 2;
    std::sort(t.rows.begin(), t.rows.end(), [key](const auto& a, const auto& b) {
      double x = std::get<double>(a[key].value), y = std::get<double>(b[key].value);
      return x != y ? x > y : std::get<std::string>(a[0].value) < std::get<std::string>(b[0].value);
    });
    keep_top(&t, input.params, 20);
    char buf[200];
    std::snprintf(buf, sizeof(buf), "%.4f", c.top_level_ms);
    t.notes.push_back(std::string("total_pct and self_pct are shares of the top-level op time, ") + buf +
                      " ms (" + level_name(*level) +
                      " spans with no other one around them); total includes nested ops, so total_pct sums "
                      "past 100% where ops nest; self_pct sums to 100%");
    t.notes.push_back("percentiles (p50, p90, p99) are over the instances' total times");
    if (c.clamped)
      t.notes.push_back(std::to_string(c.clamped) +
                        " instances had nested ops running past their own end (another thread): their self time "
                        "counts only the part inside them");
    if (c.skipped)
      t.notes.push_back(std::to_string(c.skipped) +
                        " device spans that are not executions (sync, annotations) left out");
    AnalysisResult r;
    r.tables.push_back(std::move(t));
    return r;
  }
};

}  // namespace

std::unique_ptr<Analysis> make_op_stats() { return std::make_unique<OpStats>(); }

}  // namespace strata::analysis
