#include "lowerbound/bounds/bound_inputs.h"

#include "lowerbound/harness/backend.h"
#include "lowerbound/ir/onnx_loader.h"

namespace strata::lowerbound {

bool load_bound_inputs(const BoundRequest& request, BoundInputs* out, std::string* error) {
  if (!load_onnx_file(request.onnx_path, &out->model, error)) return false;
  out->db_url = request.db_url.empty() ? default_perf_db_url() : request.db_url;
  std::unique_ptr<PerfDb> db = open_perf_db(out->db_url, error);
  if (!db) return false;
  out->db_description = db->describe();
  std::string why;
  out->system = system_key(request.backend, request.threads, &why);
  if (out->system.empty()) {
    *error = why;
    return false;
  }
  if (!request.system_tag.empty()) out->system += "|tag=" + request.system_tag;
  if (!db->load(out->system, request.backend, &out->records, error)) return false;
  for (const BenchRecord& r : out->records) out->index.add(r);
  std::vector<std::string> systems;
  if (!db->systems(request.backend, &systems, error)) return false;
  for (const std::string& s : systems)
    if (s != out->system) out->other_systems.push_back(s);
  return true;
}

namespace {

std::string bench_command(const BoundRequest& request, const BoundInputs& in) {
  return "strata bench run " + in.model.path + " --db " + in.db_description + " --backend " +
         request.backend + " --dtype " + request.dtype + " --layout " + request.layout +
         (request.backend == "cpu" ? " --threads " + std::to_string(request.threads) : std::string()) +
         (request.fusion ? " --fusion" : "") +
         (request.system_tag.empty() ? "" : " --system-tag " + request.system_tag);
}

}  // namespace

std::string no_measurement_error(const BoundRequest& request, const BoundInputs& in, const ModelEstimate& e) {
  if (e.measured > 0 || e.missing + e.unsupported == 0) return "";
  std::string text = "no layer of " + in.model.name + " has a measurement for this system (" + in.system +
                     ", " + e.dtype + ", " + e.layout + ") in " + in.db_description + ": no bound to give";
  if (!in.other_systems.empty()) {
    text += "; the database holds rows for " + std::to_string(in.other_systems.size()) +
            " other system key(s), e.g. " + in.other_systems[0];
    if (in.other_systems[0].find("|omp_threads=") != std::string::npos)
      text += " (another --threads or --system-tag?)";
  }
  return text + ". Measure it with: " + bench_command(request, in);
}

std::string untrusted_rows_warning(const BoundRequest& request, const BoundInputs& in,
                                   const ModelEstimate& e) {
  uint64_t legacy = 0, other = 0;
  for (const BenchRecord* best : e.best) {
    if (!best || best->trusted()) continue;
    ++(best->quality == "legacy" ? legacy : other);
  }
  if (legacy + other == 0) return "";
  return std::to_string(legacy + other) + " of the " + std::to_string(e.measured) +
         " measured layers use rows without a verified quality (" + std::to_string(legacy) +
         " measured before quality was recorded): re-measure them with " + bench_command(request, in) +
         " --recheck";
}

}  // namespace strata::lowerbound
