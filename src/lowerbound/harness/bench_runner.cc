#include "lowerbound/harness/bench_runner.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <set>
#include <tuple>

namespace strata::lowerbound {

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::vector<WorkItem> enumerate_work(const std::vector<LayerModel>& models, const BenchOptions& options,
                                     uint64_t* free_layers) {
  std::vector<WorkItem> items;
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  uint64_t free_count = 0;
  for (const std::string& dtype : options.dtypes)
    for (const std::string& layout : options.layouts)
      for (const LayerModel& model : models)
        for (size_t i = 0; i < model.layers.size(); ++i) {
          const Layer& layer = model.layers[i];
          if (layer.inputs.empty() || plan_layer(layer, "cpu", "f32", "nchw").cost == LayerCost::kFree) {
            if (dtype == options.dtypes[0] && layout == options.layouts[0]) ++free_count;
            continue;
          }
          if (seen.emplace(dtype, layout, layer.signature()).second)
            items.push_back(WorkItem{dtype, layout, layer.signature(), &layer, ""});
          if (!options.fusion) continue;
          if (std::optional<FusionChain> chain = fusion_chain(model, i)) {
            std::string signature = fused_signature(layer, chain->post_ops);
            if (seen.emplace(dtype, layout, signature).second)
              items.push_back(WorkItem{dtype, layout, signature, &layer, chain->post_ops});
          }
        }
  if (free_layers) *free_layers = free_count;
  return items;
}

bool run_benchmarks(const std::vector<LayerModel>& models, const BenchOptions& options,
                    const MeasureOptions& measure, PerfDb* db, BenchRunStats* stats, std::string* error,
                    FILE* progress) {
  auto t0 = std::chrono::steady_clock::now();
  std::string why;
  std::string system = system_key(options.backend, &why);
  if (system.empty()) {
    *error = why;
    return false;
  }
  if (!options.system_tag.empty()) system += "|tag=" + options.system_tag;
  std::vector<BenchRecord> existing;
  if (!db->load(system, options.backend, &existing, error)) return false;
  std::set<std::tuple<std::string, std::string, std::string>> have;
  for (const BenchRecord& r : existing) have.emplace(r.dtype, r.layout, r.signature);

  std::vector<WorkItem> items = enumerate_work(models, options, &stats->free_layers);
  if (progress && !isatty(fileno(progress))) progress = nullptr;  // a progress line is for terminals only
  stats->work_items = items.size();
  size_t done = 0;
  for (const WorkItem& item : items) {
    ++done;
    if (have.count({item.dtype, item.layout, item.signature})) {
      ++stats->already_in_db;
      continue;
    }
    LayerPlan plan = plan_layer(*item.layer, options.backend, item.dtype, item.layout, item.post_ops);
    if (plan.cost != LayerCost::kBenchmarked) {
      ++stats->unmapped;
      stats->warnings.push_back(item.layer->op_type + " (" + item.layer->name + "): " + plan.why);
      continue;
    }
    if (!db->begin(error)) return false;
    bool any_supported = false;
    std::string last_why;
    for (const BenchCase& c : plan.cases) {
      Measurement m;
      std::string implementation;
      if (!measure_case(options.backend, c, measure, &m, &implementation, &why)) {
        ++stats->cases_unsupported;
        last_why = why;
        continue;
      }
      any_supported = true;
      ++stats->cases_run;
      BenchRecord r{system,        options.backend,   item.dtype,       item.layout, item.signature,
                    c.algorithm,   plan.library_call, implementation,   m.median_ns, m.spread_ns,
                    m.repetitions, m.iterations,      utc_now_iso8601()};
      if (!db->put(r, error)) return false;
    }
    if (!any_supported) {  // remembered, so an incremental run does not retry it
      BenchRecord r{system,
                    options.backend,
                    item.dtype,
                    item.layout,
                    item.signature,
                    "unsupported",
                    plan.library_call,
                    last_why,
                    -1,
                    0,
                    0,
                    0,
                    utc_now_iso8601()};
      if (!db->put(r, error)) return false;
      stats->warnings.push_back(item.layer->op_type + " (" + item.layer->name + ", " + item.dtype + ", " +
                                item.layout + "): no implementation: " + last_why);
    }
    if (!db->commit(error)) return false;
    ++stats->benchmarked;
    if (progress)
      std::fprintf(progress, "\r[%zu/%zu] %-20s %s %s%s%-10s", done, items.size(),
                   item.layer->op_type.c_str(), item.dtype.c_str(), item.layout.c_str(),
                   item.post_ops.empty() ? "" : " +", item.post_ops.c_str());
  }
  if (progress && stats->benchmarked) std::fprintf(progress, "\n");
  stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return true;
}

}  // namespace strata::lowerbound
