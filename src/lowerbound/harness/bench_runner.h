// `strata bench run`: benchmarks the unique layers of a set of models that the database does not
// yet hold for this system (incremental, Benanza section III-B/C), and stores the results.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "lowerbound/harness/backend.h"
#include "lowerbound/harness/bench_plan.h"
#include "lowerbound/harness/measure.h"
#include "lowerbound/ir/layer_ir.h"
#include "lowerbound/perfdb/perf_db.h"

namespace strata::lowerbound {

// One (dtype, layout, layer signature) to benchmark; `post_ops` is set for a fused convolution
// (FusionChain::post_ops) and empty for a plain layer.
struct WorkItem {
  std::string dtype;
  std::string layout;
  std::string signature;
  const Layer* layer = nullptr;
  std::string post_ops;
};

// Every distinct work item of the models, in model and layer order; free layers (no library call)
// are counted in *free_layers and left out.
std::vector<WorkItem> enumerate_work(const std::vector<LayerModel>& models, const BenchOptions& options,
                                     uint64_t* free_layers = nullptr);

struct BenchRunStats {
  uint64_t work_items = 0;         // distinct (dtype, layout, signature) needing a library call
  uint64_t already_in_db = 0;      // skipped: the database has them for this system (and they look sound)
  uint64_t benchmarked = 0;        // items measured and stored now
  uint64_t cases_run = 0;          // (item, algorithm) pairs timed
  uint64_t cases_unsupported = 0;  // algorithms the library rejected for the shape
  uint64_t unmapped = 0;           // items with no library-call mapping (listed in warnings)
  uint64_t free_layers = 0;
  uint64_t remeasured = 0;  // cases whose first measurement was unstable and a later one stable
  uint64_t refused = 0;     // items not stored: a case stayed unstable after every attempt
  uint64_t rechecked = 0;   // --recheck: suspicious items measured again
  int threads = 0;          // library threads every case ran with
  MachineLoad load_before, load_after;
  double seconds = 0;
  std::vector<std::string> warnings;
  std::vector<std::string> remeasured_entries;  // one line per re-measured case or rechecked item
  std::vector<std::string> refused_entries;     // one line per item not stored, with why
};

// Whether stored rows of one item deserve a re-measurement (--recheck): measured before quality was
// recorded, or with a spread above `max_spread` of the median.
bool suspicious(const std::vector<BenchRecord>& rows, double max_spread);

std::string utc_now_iso8601();

bool run_benchmarks(const std::vector<LayerModel>& models, const BenchOptions& options,
                    const MeasureOptions& measure, PerfDb* db, BenchRunStats* stats, std::string* error,
                    FILE* progress);

}  // namespace strata::lowerbound
