#include "lowerbound/harness/bench_runner.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <thread>
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

bool suspicious(const std::vector<BenchRecord>& rows, double max_spread) {
  for (const BenchRecord& r : rows) {
    if (r.median_ns < 0) continue;  // an unsupported marker: nothing was timed
    if (!r.trusted()) return true;
    double spread = r.relative_spread >= 0 ? r.relative_spread
                    : r.median_ns > 0      ? r.spread_ns / r.median_ns
                                           : 1;
    if (spread > max_spread) return true;
  }
  return false;
}

namespace {

using ItemKey = std::tuple<std::string, std::string, std::string>;  // dtype, layout, signature

// One item's measurement: its rows, or why it is not stored.
struct ItemResult {
  std::vector<BenchRecord> rows;
  bool refused = false;
  bool any_supported = false;
  std::string last_why;  // the library's last rejection
};

std::string describe(const WorkItem& item, const std::string& algorithm) {
  return item.layer->op_type + " (" + item.layer->name + ") " + item.dtype + " " + item.layout +
         (item.post_ops.empty() ? "" : " +" + item.post_ops) + (algorithm.empty() ? "" : " " + algorithm);
}

std::string percent(double f) { return std::to_string(static_cast<int>(std::lround(f * 100))) + "%"; }

class Runner {
 public:
  Runner(const BenchOptions& options, const MeasureOptions& measure, std::string system, BenchRunStats* stats)
      : options_(options), measure_(measure), system_(std::move(system)), stats_(*stats) {}

  // Measures every case of the item; a case whose measurement stays unstable after every attempt
  // leaves the whole item unstored (its best algorithm would otherwise be chosen among the rest).
  ItemResult measure_item(const WorkItem& item, const LayerPlan& plan) {
    ItemResult out;
    for (const BenchCase& c : plan.cases) {
      Measurement m;
      std::string implementation, why, first_why;
      int attempt = 0;
      bool supported = true;
      while (attempt < std::max(1, measure_.attempts)) {
        ++attempt;
        if (!measure_case(options_.backend, c, measure_, &m, &implementation, &why)) {
          supported = false;
          break;
        }
        if (m.stable) break;
        if (first_why.empty()) first_why = m.why_unstable;
        // A short pause: a burst of other work (a link step, a test) often passes.
        std::this_thread::sleep_for(std::chrono::milliseconds(50 * attempt));
      }
      if (!supported) {
        ++stats_.cases_unsupported;
        out.last_why = why;
        continue;
      }
      out.any_supported = true;
      ++stats_.cases_run;
      if (!m.stable) {
        out.refused = true;
        stats_.refused_entries.push_back(describe(item, c.algorithm) + ": not stored: " + m.why_unstable +
                                         " after " + std::to_string(attempt) + " attempts (" +
                                         machine_load().text() +
                                         "); re-run when the machine is quieter, or allow more noise with "
                                         "--max-spread");
        return out;
      }
      if (attempt > 1) {
        ++stats_.remeasured;
        stats_.remeasured_entries.push_back(describe(item, c.algorithm) + ": re-measured: attempt 1 " +
                                            first_why + "; stable on attempt " + std::to_string(attempt) +
                                            " (spread " + percent(m.relative_spread) + ")");
      }
      out.rows.push_back(record(item, plan, c.algorithm, implementation, m, attempt));
    }
    return out;
  }

  BenchRecord record(const WorkItem& item, const LayerPlan& plan, const std::string& algorithm,
                     const std::string& implementation, const Measurement& m, int attempts) const {
    BenchRecord r{system_,       options_.backend,  item.dtype,       item.layout, item.signature,
                  algorithm,     plan.library_call, implementation,   m.median_ns, m.spread_ns,
                  m.repetitions, m.iterations,      utc_now_iso8601()};
    r.threads = measure_.threads;
    r.timer = m.timer;
    r.disturbed = m.disturbed;
    r.relative_spread = m.relative_spread;
    r.load_avg = machine_load().load_avg;
    r.attempts = attempts;
    r.quality = "good";
    return r;
  }

  // The row that remembers an item no algorithm supports, so incremental runs do not retry it.
  BenchRecord unsupported(const WorkItem& item, const LayerPlan& plan, const std::string& why) const {
    BenchRecord r{system_,
                  options_.backend,
                  item.dtype,
                  item.layout,
                  item.signature,
                  "unsupported",
                  plan.library_call,
                  why,
                  -1,
                  0,
                  0,
                  0,
                  utc_now_iso8601()};
    r.threads = measure_.threads;
    r.quality = "n/a";
    return r;
  }

 private:
  const BenchOptions& options_;
  const MeasureOptions& measure_;
  std::string system_;
  BenchRunStats& stats_;
};

double best_median(const std::vector<BenchRecord>& rows) {
  double best = -1;
  for (const BenchRecord& r : rows)
    if (r.median_ns >= 0 && (best < 0 || r.median_ns < best)) best = r.median_ns;
  return best;
}

}  // namespace

bool run_benchmarks(const std::vector<LayerModel>& models, const BenchOptions& options,
                    const MeasureOptions& measure, PerfDb* db, BenchRunStats* stats, std::string* error,
                    FILE* progress) {
  auto t0 = std::chrono::steady_clock::now();
  std::string why;
  if (options.backend == "cpu" && !set_library_threads(measure.threads, &why)) {
    *error = why;
    return false;
  }
  std::string system = system_key(options.backend, measure.threads, &why);
  if (system.empty()) {
    *error = why;
    return false;
  }
  if (!options.system_tag.empty()) system += "|tag=" + options.system_tag;
  stats->threads = measure.threads;
  stats->load_before = machine_load();
  std::vector<BenchRecord> existing;
  if (!db->load(system, options.backend, &existing, error)) return false;
  std::map<ItemKey, std::vector<BenchRecord>> have;
  for (const BenchRecord& r : existing) have[{r.dtype, r.layout, r.signature}].push_back(r);

  std::vector<WorkItem> items = enumerate_work(models, options, &stats->free_layers);
  if (progress && !isatty(fileno(progress))) progress = nullptr;  // a progress line is for terminals only
  stats->work_items = items.size();
  Runner runner(options, measure, system, stats);
  size_t done = 0;
  for (const WorkItem& item : items) {
    ++done;
    auto old = have.find({item.dtype, item.layout, item.signature});
    const bool recheck = old != have.end() && options.recheck && suspicious(old->second, measure.max_spread);
    if (old != have.end() && !recheck) {
      ++stats->already_in_db;
      continue;
    }
    LayerPlan plan = plan_layer(*item.layer, options.backend, item.dtype, item.layout, item.post_ops);
    if (plan.cost != LayerCost::kBenchmarked) {
      ++stats->unmapped;
      stats->warnings.push_back(item.layer->op_type + " (" + item.layer->name + "): " + plan.why);
      continue;
    }
    ItemResult result = runner.measure_item(item, plan);
    if (result.refused) {
      ++stats->refused;
      if (recheck) stats->refused_entries.back() += " (the old rows stay, flagged)";
      continue;
    }
    if (!result.any_supported) {
      result.rows.push_back(runner.unsupported(item, plan, result.last_why));
      stats->warnings.push_back(item.layer->op_type + " (" + item.layer->name + ", " + item.dtype + ", " +
                                item.layout + "): no implementation: " + result.last_why);
    }
    if (!db->begin(error)) return false;
    if (recheck && !db->erase_item(result.rows[0], error)) return false;
    for (const BenchRecord& r : result.rows)
      if (!db->put(r, error)) return false;
    if (!db->commit(error)) return false;
    ++stats->benchmarked;
    if (recheck) {
      ++stats->rechecked;
      char line[96];
      std::snprintf(line, sizeof line, ": rechecked: best %.2f us (was %.2f us)",
                    best_median(result.rows) / 1e3, best_median(old->second) / 1e3);
      stats->remeasured_entries.push_back(describe(item, "") + line);
    }
    if (progress)
      std::fprintf(progress, "\r[%zu/%zu] %-20s %s %s%s%-10s", done, items.size(),
                   item.layer->op_type.c_str(), item.dtype.c_str(), item.layout.c_str(),
                   item.post_ops.empty() ? "" : " +", item.post_ops.c_str());
  }
  // The progress line is erased: the summary that follows starts on a clean line.
  if (progress && stats->benchmarked) std::fprintf(progress, "\r\033[K");
  stats->load_after = machine_load();
  stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return true;
}

}  // namespace strata::lowerbound
