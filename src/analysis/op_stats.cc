// Zins & Dagenais III-F/G: per-op statistics over every instance in the trace (nested ops
// included, as framework profilers count them): count, total, mean, standard deviation, top-N.
#include <algorithm>
#include <unordered_map>

#include "analysis/analysis_util.h"

namespace strata::analysis {
namespace {

class OpStats : public Analysis {
 public:
  std::string_view name() const override { return "op_stats"; }
  std::string_view description() const override {
    return "per-op statistics over all instances: count, total, mean, stddev, min, max, share; top N by "
           "total "
           "(--param level=layer|library|device, top=20)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    const model::Trace& trace = input.trace;
    std::string level_text = input.params.get("level", "");
    std::optional<Level> level;
    if (!level_text.empty()) {
      level = parse_level(level_text);
      if (!level) {
        AnalysisResult r;
        r.missing_input =
            "--param level=" + level_text + " is not a level name (model, layer, library, device, ...)";
        return r;
      }
    } else {
      // Layers when recorded, else whatever plays the kernel role.
      bool layers = false, library = false, device = false;
      for (const SpanRecord& s : trace.spans) {
        layers |= s.level == static_cast<uint8_t>(Level::kLayer);
        library |= s.level == static_cast<uint8_t>(Level::kLibrary);
        device |= s.level == static_cast<uint8_t>(Level::kDevice);
      }
      if (layers)
        level = Level::kLayer;
      else if (device)
        level = Level::kDevice;
      else if (library)
        level = Level::kLibrary;
      else
        return missing(kNeedLayer);
    }
    const uint8_t want = static_cast<uint8_t>(*level);
    std::unordered_map<uint32_t, std::vector<double>> by_name;
    double total = 0;
    size_t skipped = 0;
    constexpr uint8_t kDeviceLevel = static_cast<uint8_t>(Level::kDevice);
    for (const SpanRecord& s : trace.spans) {
      if (s.level != want || s.kind == static_cast<uint8_t>(SpanKind::kCounter) ||
          s.kind == static_cast<uint8_t>(SpanKind::kInstant))
        continue;
      // On the device only executions are ops: synchronization and annotation spans share the level.
      if (want == kDeviceLevel && s.kind != static_cast<uint8_t>(SpanKind::kExecution)) {
        ++skipped;
        continue;
      }
      double ms = ns_to_ms(s.duration_ns());
      by_name[s.name].push_back(ms);
      total += ms;
    }
    if (by_name.empty()) {
      AnalysisResult r;
      r.missing_input = "no spans at level " + level_name(*level) + " in the trace: record with --level " +
                        level_name(*level) + " or deeper";
      return r;
    }
    Table t = make_table(
        "op_stats", "Per-op statistics (" + level_name(*level) + " spans)",
        {"name", "count", "total_ms", "mean_ms", "stddev_ms", "min_ms", "median_ms", "max_ms", "total_pct"});
    for (const auto& [name, values] : by_name) {
      Summary s = summarize(values, 0);
      t.rows.push_back({Cell::text(std::string(trace.strings.get(name))),
                        Cell::integer(static_cast<int64_t>(s.count)), Cell::real(s.total, 4),
                        Cell::real(s.mean, 4), Cell::real(s.stddev, 4), Cell::real(s.min, 4),
                        Cell::real(s.median, 4), Cell::real(s.max, 4),
                        Cell::real(total > 0 ? 100 * s.total / total : 0, 2)});
    }
    // Total descending; ties by name so the output does not depend on hash order.
    std::sort(t.rows.begin(), t.rows.end(), [](const auto& a, const auto& b) {
      double x = std::get<double>(a[2].value), y = std::get<double>(b[2].value);
      return x != y ? x > y : std::get<std::string>(a[0].value) < std::get<std::string>(b[0].value);
    });
    keep_top(&t, input.params, 20);
    t.notes.push_back(
        "nested ops are counted in their own row and in their caller's total (inclusive times)");
    if (skipped)
      t.notes.push_back(std::to_string(skipped) +
                        " device spans that are not executions (sync, annotations) left out");
    AnalysisResult r;
    r.tables.push_back(std::move(t));
    return r;
  }
};

}  // namespace

std::unique_ptr<Analysis> make_op_stats() { return std::make_unique<OpStats>(); }

}  // namespace strata::analysis
