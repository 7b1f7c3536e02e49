// What every lower bound of one model reads: the model's layer IR and this system's rows of the
// performance database, indexed. Shared by `strata lowerbound` and the registered lower-bound
// analyses (`strata analyze --analysis framework_vs_bound --param onnx=MODEL.onnx`).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lowerbound/bounds/estimate.h"
#include "lowerbound/ir/layer_ir.h"
#include "lowerbound/perfdb/perf_db.h"

namespace strata::lowerbound {

struct BoundRequest {
  std::string onnx_path;
  std::string db_url;  // empty: default_perf_db_url()
  std::string backend = "cpu";
  std::string system_tag;
  int threads = 1;  // library threads the rows were measured with (the framework run's count)
  std::string dtype = "f32";
  std::string layout = "nchw";
  bool fusion = false;
};

struct BoundInputs {
  LayerModel model;
  std::string db_url;          // as given (may hold a password: never print it)
  std::string db_description;  // printable (password redacted)
  std::string system;          // system key the rows were loaded for
  std::vector<BenchRecord> records;
  LatencyIndex index;                      // copies of the rows
  std::vector<std::string> other_systems;  // system keys the database holds rows for, other than `system`
};

// Loads the model and the database rows; false with one error line (file, database, what to do).
bool load_bound_inputs(const BoundRequest& request, BoundInputs* out, std::string* error);

// When an estimate has no measured layer at all (an empty database, or rows only for other systems or
// thread counts): the one error line that says so and what to run; empty when some layer is measured.
// A bound of 0.000 ms is never a bound.
std::string no_measurement_error(const BoundRequest& request, const BoundInputs& in, const ModelEstimate& e);

// Rows behind the bound that are not trustworthy (measured before quality was recorded, or noisy):
// the warning line with the `bench run --recheck` command, empty when all are sound.
std::string untrusted_rows_warning(const BoundRequest& request, const BoundInputs& in,
                                   const ModelEstimate& e);

}  // namespace strata::lowerbound
