// Zins & Dagenais III-F/G: per-op statistics over every instance in the trace (nested ops
// included, as framework profilers count them): count, total (inclusive) and self (exclusive)
// time, their shares of the top-level op time, mean, standard deviation and percentiles; top N.
#include <algorithm>

#include "analysis/analysis_util.h"

namespace strata::analysis {
namespace {

constexpr uint8_t kDeviceLevel = static_cast<uint8_t>(Level::kDevice);

// The level op_stats reads: --param level, else layers when recorded, else the kernel role.
std::optional<Level> default_level(const trace::Trace& trace) {
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

struct OpTimes {
  uint32_t name = 0;
  std::vector<double> total_ms;  // one per instance (inclusive)
  double self_ms = 0;
};

struct Collected {
  std::vector<OpTimes> ops;  // one per name, in first-seen order
  double top_level_ms = 0;   // instances with no op of the same level around them
  size_t skipped = 0;        // device spans that are not executions
  size_t clamped = 0;        // instances whose nested ops ran past them (other threads)
};

Collected collect(const trace::Trace& trace, const trace::SpanTree& tree, uint8_t want) {
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
  // State is kept for the counted spans only (ids: their indexes, ascending; slot k of ids[k]), not
  // for every span of the trace: at the peak of `strata analyze` this is memory beside the trace.
  // Every vector here is sized exactly before it is filled: growth by doubling would leave up to
  // half of each unused at the peak (trace_memory_test holds analyze within 1.5x the file).
  size_t counted_spans = 0;
  for (size_t i = 0; i < n; ++i) counted_spans += counted(i);
  std::vector<uint32_t> ids;
  ids.reserve(counted_spans);
  for (size_t i = 0; i < n; ++i) {
    if (counted(i)) {
      ids.push_back(static_cast<uint32_t>(i));
      continue;
    }
    const SpanRecord& s = trace.spans[i];
    if (want == kDeviceLevel && s.level == want && s.kind != static_cast<uint8_t>(SpanKind::kCounter) &&
        s.kind != static_cast<uint8_t>(SpanKind::kInstant))
      ++c.skipped;
  }
  const size_t m = ids.size();
  auto slot_of = [&](uint32_t i) { return static_cast<size_t>(std::lower_bound(ids.begin(), ids.end(), i) - ids.begin()); };
  // Visit counted spans by start time (the loader's order; sorted here only if a builder left them
  // unsorted), so each op's nested ops arrive in start order and the union of their intervals, clipped
  // to the op, is one sweep: nested_ns[a] grows by the part of each nested op past reach[a].
  std::vector<uint32_t> order;
  const bool sorted = std::is_sorted(trace.spans.begin(), trace.spans.end(),
                                     [](const SpanRecord& x, const SpanRecord& y) { return x.start_ns < y.start_ns; });
  if (!sorted) {
    order = ids;
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t x, uint32_t y) { return trace.spans[x].start_ns < trace.spans[y].start_ns; });
  }
  std::vector<int64_t> nested_ns(m, 0), reach(m, INT64_MIN);
  std::vector<uint8_t> is_top(m, 0), overrun(m, 0);
  for (size_t k = 0; k < m; ++k) {
    const uint32_t i = sorted ? ids[k] : order[k];
    const SpanRecord& s = trace.spans[i];
    int32_t a = tree.parent(i);  // the nearest counted ancestor
    while (a >= 0 && !counted(static_cast<size_t>(a))) a = tree.parent(static_cast<size_t>(a));
    if (a < 0) {
      is_top[sorted ? k : slot_of(i)] = 1;
      continue;
    }
    const size_t p = slot_of(static_cast<uint32_t>(a));
    const SpanRecord& outer = trace.spans[static_cast<size_t>(a)];
    if (s.end_ns > outer.end_ns || s.start_ns < outer.start_ns) overrun[p] = 1;
    const int64_t from = std::max({s.start_ns, reach[p], outer.start_ns}), to = std::min(s.end_ns, outer.end_ns);
    if (to > from) nested_ns[p] += to - from;
    reach[p] = std::max(reach[p], to);
  }
  std::vector<int32_t> slot_of_name(trace.strings.size(), -1);
  std::vector<size_t> instances;
  for (size_t k = 0; k < m; ++k) {
    const uint32_t name = trace.spans[ids[k]].name;
    if (name >= slot_of_name.size()) slot_of_name.resize(name + 1, -1);
    int32_t& slot = slot_of_name[name];
    if (slot < 0) {
      slot = static_cast<int32_t>(c.ops.size());
      c.ops.emplace_back().name = name;
      instances.push_back(0);
    }
    ++instances[static_cast<size_t>(slot)];
  }
  for (size_t o = 0; o < c.ops.size(); ++o) c.ops[o].total_ms.reserve(instances[o]);
  for (size_t k = 0; k < m; ++k) {
    const size_t i = ids[k];
    const SpanRecord& s = trace.spans[i];
    const int64_t duration = s.duration_ns();
    OpTimes& op = c.ops[static_cast<size_t>(slot_of_name[s.name])];
    op.total_ms.push_back(ns_to_ms(duration));
    op.self_ms += ns_to_ms(std::max<int64_t>(0, duration - nested_ns[k]));
    c.clamped += overrun[k];
    if (is_top[k]) c.top_level_ms += ns_to_ms(duration);
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
    const trace::Trace& trace = input.trace;
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
    if (c.ops.empty())
      return missing(("no spans at level " + level_name(*level) + " in the trace: record with --level " +
                      level_name(*level) + " or deeper")
                         .c_str());
    Table t = make_table("op_stats", "Per-op statistics (" + level_name(*level) + " spans)",
                         {"name", "count", "total_ms", "self_ms", "total_pct", "self_pct", "mean_ms", "stddev_ms",
                          "min_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms"});
    auto share = [&](double ms) { return Cell::real(c.top_level_ms > 0 ? 100 * ms / c.top_level_ms : 0, 2); };
    for (OpTimes& op : c.ops) {
      std::sort(op.total_ms.begin(), op.total_ms.end());
      Summary s = summarize(op.total_ms, 0);
      t.rows.push_back({Cell::text(std::string(trace.strings.get(op.name))),
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
STRATA_REGISTER_ANALYSIS(make_op_stats, 900);

}  // namespace strata::analysis
