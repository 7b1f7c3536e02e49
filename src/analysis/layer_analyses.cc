// XSP Table I, layer level: the layer information table, latency and memory in execution order,
// the layer type distribution, latency and memory by type, stages of the run, convolution share.
#include <algorithm>
#include <cstdio>
#include <map>

#include "analysis/layer_stats.h"

namespace strata::analysis {
namespace {

constexpr const char* kMemNote =
    "allocated memory not recorded (no alloc_bytes attribute on layer spans): `strata record --level layer` "
    "records it; a torch.profiler trace has it when profiled with profile_memory=True";

AnalysisResult one_table(Table t) {
  AnalysisResult r;
  r.tables.push_back(std::move(t));
  return r;
}

// net_mb, self_net_mb, peak_mb of a layer (empty where not recorded).
void append_memory_cells(const LayerRow& r, std::vector<Cell>* row) {
  for (double mb : {r.net_mb, r.self_net_mb, r.peak_mb})
    row->push_back(r.has_net ? Cell::real(mb, 3) : Cell::empty());
}

class LayerTable : public Analysis {
 public:
  std::string_view name() const override { return "layer_table"; }
  std::optional<Level> timed_level(const Params&) const override { return Level::kLayer; }
  std::string_view description() const override {
    return "layer information table: index, name, type, shape, latency, memory: gross allocated, net "
           "(torch.profiler CPU Mem), self net, peak (--param sort=latency, top=N, batch=N)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_layers()) return missing(kNeedLayer);
    LayerStats s = compute_layer_stats(*w, input.params);
    Table t = make_table("layer_table", "Layer information",
                         {"index", "name", "type", "shape", "latency_ms", "median_ms", "min_ms", "max_ms",
                          "stddev_ms", "alloc_mb", "net_mb", "self_net_mb", "peak_mb"});
    for (const LayerRow& r : s.rows) {
      t.rows.push_back({Cell::integer(static_cast<int64_t>(r.index)), Cell::text(r.name), Cell::text(r.type),
                        Cell::text(r.shape), Cell::real(r.latency, 4), Cell::real(r.latency_ms.median, 4),
                        Cell::real(r.latency_ms.min, 4), Cell::real(r.latency_ms.max, 4),
                        Cell::real(r.latency_ms.stddev, 4),
                        r.has_alloc ? Cell::real(r.alloc_mb, 3) : Cell::empty()});
      append_memory_cells(r, &t.rows.back());
    }
    if (input.params.get("sort", "index") == "latency") sort_rows_desc(&t, 4);
    keep_largest(&t, input.params, 4);
    for (std::string& note : memory_notes(s)) t.notes.push_back(std::move(note));
    add_common_notes(&t, s.selection.notes, s.param_error);
    return one_table(std::move(t));
  }
};

class LayerSequence : public Analysis {
 public:
  std::string_view name() const override { return "layer_sequence"; }
  std::optional<Level> timed_level(const Params&) const override { return Level::kLayer; }
  std::string_view description() const override {
    return "layer latency and allocated memory in execution order (XSP Fig. 5)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_layers()) return missing(kNeedLayer);
    LayerStats s = compute_layer_stats(*w, input.params);
    Table t = make_table("layer_sequence", "Layer latency and memory in execution order",
                         {"index", "type", "latency_ms", "alloc_mb", "net_mb", "self_net_mb", "peak_mb"});
    for (const LayerRow& r : s.rows) {
      t.rows.push_back({Cell::integer(static_cast<int64_t>(r.index)), Cell::text(r.type),
                        Cell::real(r.latency, 4), r.has_alloc ? Cell::real(r.alloc_mb, 3) : Cell::empty()});
      append_memory_cells(r, &t.rows.back());
    }
    keep_largest(&t, input.params, 2);
    for (std::string& note : memory_notes(s)) t.notes.push_back(std::move(note));
    add_common_notes(&t, s.selection.notes, s.param_error);
    return one_table(std::move(t));
  }
};

struct TypeTotals {
  int64_t count = 0;
  double latency = 0;
  double alloc = 0;
  bool has_alloc = false;
  // Sums of net and self net over the type's layers, the highest peak among them.
  double net = 0, self_net = 0, peak = 0;
  bool has_net = false;
};

std::map<std::string, TypeTotals> by_type(const LayerStats& s, double* total_latency, double* total_alloc) {
  std::map<std::string, TypeTotals> types;
  *total_latency = *total_alloc = 0;
  for (const LayerRow& r : s.rows) {
    TypeTotals& t = types[r.type];
    ++t.count;
    t.latency += r.latency;
    *total_latency += r.latency;
    if (r.has_alloc) {
      t.alloc += r.alloc_mb;
      t.has_alloc = true;
      *total_alloc += r.alloc_mb;
    }
    if (r.has_net) {
      t.net += r.net_mb;
      t.self_net += r.self_net_mb;
      t.peak = t.has_net ? std::max(t.peak, r.peak_mb) : r.peak_mb;
      t.has_net = true;
    }
  }
  return types;
}

double percent(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0; }

class LayerTypeDistribution : public Analysis {
 public:
  std::string_view name() const override { return "layer_type_distribution"; }
  std::optional<Level> timed_level(const Params&) const override { return Level::kLayer; }
  std::string_view description() const override {
    return "how many layers of each type one evaluation executes";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_layers()) return missing(kNeedLayer);
    LayerStats s = compute_layer_stats(*w, input.params);
    double lat = 0, mem = 0;
    auto types = by_type(s, &lat, &mem);
    Table t =
        make_table("layer_type_distribution", "Layer type distribution", {"type", "count", "count_pct"});
    for (const auto& [type, tot] : types)
      t.rows.push_back(
          {Cell::text(type), Cell::integer(tot.count),
           Cell::real(percent(static_cast<double>(tot.count), static_cast<double>(s.rows.size())), 2)});
    sort_rows_desc(&t, 1);
    keep_top(&t, input.params, 0);
    add_common_notes(&t, s.selection.notes, s.param_error);
    return one_table(std::move(t));
  }
};

class LayerTypeAggregate : public Analysis {
 public:
  std::string_view name() const override { return "layer_type_aggregate"; }
  std::optional<Level> timed_level(const Params&) const override { return Level::kLayer; }
  std::string_view description() const override {
    return "layer latency and allocated memory aggregated by type";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_layers()) return missing(kNeedLayer);
    LayerStats s = compute_layer_stats(*w, input.params);
    double lat = 0, mem = 0;
    auto types = by_type(s, &lat, &mem);
    Table t = make_table("layer_type_aggregate", "Latency and memory by layer type",
                         {"type", "count", "latency_ms", "latency_pct", "alloc_mb", "alloc_pct", "net_mb",
                          "self_net_mb", "peak_mb"});
    for (const auto& [type, tot] : types)
      t.rows.push_back({Cell::text(type), Cell::integer(tot.count), Cell::real(tot.latency, 4),
                        Cell::real(percent(tot.latency, lat), 2),
                        tot.has_alloc ? Cell::real(tot.alloc, 3) : Cell::empty(),
                        tot.has_alloc ? Cell::real(percent(tot.alloc, mem), 2) : Cell::empty(),
                        tot.has_net ? Cell::real(tot.net, 3) : Cell::empty(),
                        tot.has_net ? Cell::real(tot.self_net, 3) : Cell::empty(),
                        tot.has_net ? Cell::real(tot.peak, 3) : Cell::empty()});
    sort_rows_desc(&t, 2);
    keep_top(&t, input.params, 0);
    for (std::string& note : memory_notes(s)) t.notes.push_back(std::move(note));
    add_common_notes(&t, s.selection.notes, s.param_error);
    return one_table(std::move(t));
  }
};

class Stages : public Analysis {
 public:
  std::string_view name() const override { return "stages"; }
  std::optional<Level> timed_level(const Params&) const override { return Level::kLayer; }
  std::string_view description() const override {
    return "latency and memory of the beginning, middle and end of an evaluation (layers split in equal "
           "thirds; "
           "--param stages=N)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_layers()) return missing(kNeedLayer);
    LayerStats s = compute_layer_stats(*w, input.params);
    int64_t stages = std::clamp<int64_t>(input.params.get_int("stages", 3), 1, 100);
    const size_t n = s.rows.size();
    std::vector<TypeTotals> totals(static_cast<size_t>(stages));
    double lat = 0, mem = 0;
    for (size_t k = 0; k < n; ++k) {
      // Layer k falls in stage floor(k * stages / n): stage sizes differ by at most one layer.
      TypeTotals& t = totals[k * static_cast<size_t>(stages) / n];
      ++t.count;
      t.latency += s.rows[k].latency;
      lat += s.rows[k].latency;
      if (s.rows[k].has_alloc) {
        t.alloc += s.rows[k].alloc_mb;
        t.has_alloc = true;
        mem += s.rows[k].alloc_mb;
      }
    }
    Table t =
        make_table("stages", "Stages of an evaluation",
                   {"stage", "first_layer", "layers", "latency_ms", "latency_pct", "alloc_mb", "alloc_pct"});
    size_t first = 0;
    for (int64_t i = 0; i < stages; ++i) {
      const TypeTotals& tot = totals[static_cast<size_t>(i)];
      std::string label = stages == 3 ? (i == 0   ? "beginning"
                                         : i == 1 ? "middle"
                                                  : "end")
                                      : std::to_string(i + 1);
      t.rows.push_back({Cell::text(label), Cell::integer(static_cast<int64_t>(first)),
                        Cell::integer(tot.count), Cell::real(tot.latency, 4),
                        Cell::real(percent(tot.latency, lat), 2),
                        tot.has_alloc ? Cell::real(tot.alloc, 3) : Cell::empty(),
                        tot.has_alloc ? Cell::real(percent(tot.alloc, mem), 2) : Cell::empty()});
      first += static_cast<size_t>(tot.count);
    }
    if (!s.any_alloc) t.notes.push_back(kMemNote);
    add_common_notes(&t, s.selection.notes, s.param_error);
    return one_table(std::move(t));
  }
};

class ConvShare : public Analysis {
 public:
  std::string_view name() const override { return "conv_share"; }
  std::optional<Level> timed_level(const Params&) const override { return Level::kLayer; }
  std::string_view description() const override {
    return "share of layer latency spent in convolutions (type or name containing \"conv\")";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_layers()) return missing(kNeedLayer);
    LayerStats s = compute_layer_stats(*w, input.params);
    TypeTotals conv, other;
    for (const LayerRow& r : s.rows) {
      TypeTotals& t = is_convolution(r.type) || is_convolution(r.name) ? conv : other;
      ++t.count;
      t.latency += r.latency;
    }
    double lat = conv.latency + other.latency;
    Table t = make_table("conv_share", "Convolution share of latency",
                         {"group", "layers", "latency_ms", "latency_pct"});
    t.rows.push_back({Cell::text("convolution"), Cell::integer(conv.count), Cell::real(conv.latency, 4),
                      Cell::real(percent(conv.latency, lat), 2)});
    t.rows.push_back({Cell::text("other"), Cell::integer(other.count), Cell::real(other.latency, 4),
                      Cell::real(percent(other.latency, lat), 2)});
    add_common_notes(&t, s.selection.notes, s.param_error);
    return one_table(std::move(t));
  }
};

}  // namespace

std::unique_ptr<Analysis> make_layer_table() { return std::make_unique<LayerTable>(); }
STRATA_REGISTER_ANALYSIS(make_layer_table, 300);
std::unique_ptr<Analysis> make_layer_sequence() { return std::make_unique<LayerSequence>(); }
STRATA_REGISTER_ANALYSIS(make_layer_sequence, 400);
std::unique_ptr<Analysis> make_layer_type_distribution() { return std::make_unique<LayerTypeDistribution>(); }
STRATA_REGISTER_ANALYSIS(make_layer_type_distribution, 500);
std::unique_ptr<Analysis> make_layer_type_aggregate() { return std::make_unique<LayerTypeAggregate>(); }
STRATA_REGISTER_ANALYSIS(make_layer_type_aggregate, 600);
std::unique_ptr<Analysis> make_stages() { return std::make_unique<Stages>(); }
STRATA_REGISTER_ANALYSIS(make_stages, 700);
std::unique_ptr<Analysis> make_conv_share() { return std::make_unique<ConvShare>(); }
STRATA_REGISTER_ANALYSIS(make_conv_share, 800);

}  // namespace strata::analysis
