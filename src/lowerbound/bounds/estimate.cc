#include "lowerbound/bounds/estimate.h"

#include <map>
#include <optional>

#include "lowerbound/harness/bench_plan.h"

namespace strata::lowerbound {

using table::Cell;
using table::Table;

void LatencyIndex::add(const BenchRecord& record) {
  rows_[{record.dtype, record.layout, record.signature}].push_back(record);
}

const std::vector<BenchRecord>* LatencyIndex::rows(const std::string& dtype, const std::string& layout,
                                                   const std::string& signature) const {
  auto it = rows_.find({dtype, layout, signature});
  return it == rows_.end() ? nullptr : &it->second;
}

bool LatencyIndex::has(const std::string& dtype, const std::string& layout,
                       const std::string& signature) const {
  return rows(dtype, layout, signature) != nullptr;
}

const BenchRecord* LatencyIndex::best(const std::string& dtype, const std::string& layout,
                                      const std::string& signature) const {
  const std::vector<BenchRecord>* all = rows(dtype, layout, signature);
  if (!all) return nullptr;
  const BenchRecord* best = nullptr;
  for (const BenchRecord& r : *all)
    if (r.median_ns >= 0 && (!best || r.median_ns < best->median_ns)) best = &r;
  return best;
}

ModelEstimate estimate_model(const LayerModel& model, const LatencyIndex& index, const std::string& dtype,
                             const std::string& layout, bool fused) {
  ModelEstimate e;
  e.dtype = dtype;
  e.layout = layout;
  e.fused = fused;
  const size_t n = model.layers.size();
  e.latency_ns.assign(n, 0);
  e.status.assign(n, LayerStatus::kMissing);
  e.best.assign(n, nullptr);
  std::vector<bool> absorbed(n, false);  // an activation or residual Add folded into a fused conv
  for (size_t i = 0; i < n; ++i) {
    const Layer& layer = model.layers[i];
    if (absorbed[i]) {
      e.status[i] = LayerStatus::kFree;
      ++e.free;
      continue;
    }
    LayerCost cost = plan_layer(layer, "cpu", "f32", "nchw").cost;
    if (cost == LayerCost::kFree) {
      e.status[i] = LayerStatus::kFree;
      ++e.free;
      continue;
    }
    if (cost == LayerCost::kUnsupported) {  // no library-call mapping: `bench run` cannot fill it
      e.status[i] = LayerStatus::kUnsupported;
      ++e.unsupported;
      continue;
    }
    const BenchRecord* best = nullptr;
    if (fused)
      if (std::optional<FusionChain> chain = fusion_chain(model, i)) {
        // A bound is the minimum over the options: the fused call only where it beats the separate
        // calls it replaces (the conv's and each absorbed layer's best; a missing one counts 0, as
        // in the unfused bound), so fusing never raises the bound.
        const BenchRecord* one_call = index.best(dtype, layout, fused_signature(layer, chain->post_ops));
        const BenchRecord* conv = index.best(dtype, layout, layer.signature());
        double separate = conv ? conv->median_ns : 0;
        for (uint32_t a : chain->absorbed)
          if (const BenchRecord* r = index.best(dtype, layout, model.layers[a].signature()))
            separate += r->median_ns;
        if (one_call && (!conv || one_call->median_ns < separate)) {
          best = one_call;
          ++e.fused_chains;
          for (uint32_t a : chain->absorbed) absorbed[a] = true;
        } else if (one_call) {
          ++e.chains_kept_separate;
        }
      }
    if (!best) best = index.best(dtype, layout, layer.signature());
    if (best) {
      e.latency_ns[i] = best->median_ns;
      e.best[i] = best;
      e.status[i] = LayerStatus::kMeasured;
      ++e.measured;
    } else if (index.has(dtype, layout, layer.signature())) {
      e.status[i] = LayerStatus::kUnsupported;
      ++e.unsupported;
    } else {
      ++e.missing;
    }
  }
  e.bounds = compute_bounds(model, e.latency_ns);
  return e;
}

Table bounds_table(const LayerModel& model, const std::vector<ModelEstimate>& estimates) {
  Table t;
  t.name = "lower_bounds";
  t.title = "Lower-bound latency of " + model.name + " (from the performance database)";
  t.columns = {"model", "dtype",   "layout",      "fused",         "layers",      "measured",
               "free",  "missing", "unsupported", "sequential_ms", "parallel_ms", "critical_path_layers"};
  for (const ModelEstimate& e : estimates)
    t.rows.push_back(
        {Cell::text(model.name), Cell::text(e.dtype), Cell::text(e.layout),
         Cell::text(e.fused ? "yes" : "no"), Cell::integer(static_cast<int64_t>(model.layers.size())),
         Cell::integer(static_cast<int64_t>(e.measured)), Cell::integer(static_cast<int64_t>(e.free)),
         Cell::integer(static_cast<int64_t>(e.missing)), Cell::integer(static_cast<int64_t>(e.unsupported)),
         Cell::real(e.bounds.sequential_ns / 1e6, 3), Cell::real(e.bounds.parallel_ns / 1e6, 3),
         Cell::integer(static_cast<int64_t>(e.bounds.critical_path.size()))});
  t.notes.push_back("free: layers with no library call (reshape, flatten, identity, constants) cost 0");
  t.notes.push_back("missing/unsupported layers count 0: the bound is then lower than it should be");
  for (const ModelEstimate& e : estimates)
    if (e.fused)
      t.notes.push_back(
          "fused: " + std::to_string(e.fused_chains) + " chains as one call; " +
          std::to_string(e.chains_kept_separate) +
          " kept as separate calls, their fused call measured slower (a bound takes the faster)");
  return t;
}

Table layer_table(const LayerModel& model, const ModelEstimate& e) {
  Table t;
  t.name = "layer_latencies";
  t.title = "Best benchmarked latency per layer (" + e.dtype + ", " + e.layout + ")";
  t.columns = {"index",          "layer",          "type",       "output",          "status",
               "best_algorithm", "implementation", "latency_us", "on_critical_path"};
  std::vector<bool> critical(model.layers.size(), false);
  for (uint32_t i : e.bounds.critical_path) critical[i] = true;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const Layer& l = model.layers[i];
    const char* status = e.status[i] == LayerStatus::kMeasured  ? "measured"
                         : e.status[i] == LayerStatus::kFree    ? "free"
                         : e.status[i] == LayerStatus::kMissing ? "missing"
                                                                : "unsupported";
    t.rows.push_back({Cell::integer(static_cast<int64_t>(i)), Cell::text(l.name), Cell::text(l.op_type),
                      Cell::text(l.output_shapes.empty() ? "" : shape_text(l.output_shapes[0])),
                      Cell::text(status), Cell::text(e.best[i] ? e.best[i]->algorithm : ""),
                      Cell::text(e.best[i] ? e.best[i]->implementation : ""),
                      Cell::real(e.latency_ns[i] / 1e3, 2), Cell::text(critical[i] ? "yes" : "")});
  }
  return t;
}

Table fusion_table(const LayerModel& model, const LatencyIndex& index, const std::string& dtype,
                   const std::string& layout) {
  Table t;
  t.name = "fusion";
  t.title =
      "Fusion profitability: each convolution with its fusable consumers as one call vs separate calls (" +
      dtype + ", " + layout + ")";
  t.columns = {"conv", "fused_layers", "post_ops", "separate_us", "fused_us", "saving_us", "speedup"};
  double separate_total = 0, fused_total = 0;
  uint64_t chains = 0, unmeasured = 0;
  std::map<std::string, uint64_t> by_pattern;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    std::optional<FusionChain> chain = fusion_chain(model, i);
    if (!chain) continue;
    ++chains;
    ++by_pattern[chain->post_ops];
    const Layer& conv = model.layers[i];
    const BenchRecord* f = index.best(dtype, layout, fused_signature(conv, chain->post_ops));
    const BenchRecord* c = index.best(dtype, layout, conv.signature());
    double separate = c ? c->median_ns : 0;
    std::string names;
    bool complete = c && f;
    for (uint32_t a : chain->absorbed) {
      const Layer& l = model.layers[a];
      names += (names.empty() ? "" : ", ") + l.name;
      const BenchRecord* r = index.best(dtype, layout, l.signature());
      if (r)
        separate += r->median_ns;
      else
        complete = false;
    }
    if (!complete) {
      ++unmeasured;
      continue;
    }
    separate_total += separate;
    fused_total += f->median_ns;
    t.rows.push_back({Cell::text(conv.name), Cell::text(names), Cell::text(chain->post_ops),
                      Cell::real(separate / 1e3, 2), Cell::real(f->median_ns / 1e3, 2),
                      Cell::real((separate - f->median_ns) / 1e3, 2),
                      Cell::real(separate / f->median_ns, 2)});
  }
  if (fused_total > 0)
    t.rows.push_back({Cell::text("TOTAL"), Cell::text(""), Cell::text(""),
                      Cell::real(separate_total / 1e3, 2), Cell::real(fused_total / 1e3, 2),
                      Cell::real((separate_total - fused_total) / 1e3, 2),
                      Cell::real(separate_total / fused_total, 2)});
  std::string patterns;
  for (const auto& [post_ops, count] : by_pattern)
    patterns += (patterns.empty() ? " (" : ", ") + post_ops + ": " + std::to_string(count);
  t.notes.push_back(std::to_string(chains) +
                    " convolutions with fusable consumers (an activation, or a residual Add with an optional "
                    "activation, that is the only consumer)" +
                    (patterns.empty() ? "" : patterns + ")"));
  t.notes.push_back(
      "separate = the conv's best call + each fused layer's own best call; fused = the conv with "
      "its post-ops (oneDNN sum/eltwise)");
  if (unmeasured)
    t.notes.push_back(std::to_string(unmeasured) +
                      " convolutions lack a fused or unfused measurement: run `strata bench run " +
                      model.path + " --fusion --dtype " + dtype + " --layout " + layout + "`");
  return t;
}

Table precision_table(const LayerModel& model, const LatencyIndex& index, const std::string& layout,
                      const std::vector<std::string>& dtypes) {
  Table t;
  t.name = "precision";
  t.title = "Low-precision profitability (" + layout + "): bounds per data type vs f32";
  t.columns = {"dtype",         "measured_layers", "missing_or_unsupported",
               "sequential_ms", "parallel_ms",     "speedup_vs_f32"};
  double f32_seq = 0;
  std::vector<ModelEstimate> estimates;
  for (const std::string& d : dtypes) estimates.push_back(estimate_model(model, index, d, layout, false));
  for (const ModelEstimate& e : estimates)
    if (e.dtype == "f32") f32_seq = e.bounds.sequential_ns;
  for (const ModelEstimate& e : estimates) {
    Cell speedup = (f32_seq > 0 && e.bounds.sequential_ns > 0 && e.missing + e.unsupported == 0)
                       ? Cell::real(f32_seq / e.bounds.sequential_ns, 2)
                       : Cell::empty();
    t.rows.push_back({Cell::text(e.dtype), Cell::integer(static_cast<int64_t>(e.measured)),
                      Cell::integer(static_cast<int64_t>(e.missing + e.unsupported)),
                      Cell::real(e.bounds.sequential_ns / 1e6, 3), Cell::real(e.bounds.parallel_ns / 1e6, 3),
                      speedup});
  }
  t.notes.push_back(
      "speedup is left empty when a data type has missing or unsupported layers (not comparable)");
  return t;
}

}  // namespace strata::lowerbound
