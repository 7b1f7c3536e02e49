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
  out->system = system_key(request.backend, &why);
  if (out->system.empty()) {
    *error = why;
    return false;
  }
  if (!request.system_tag.empty()) out->system += "|tag=" + request.system_tag;
  if (!db->load(out->system, request.backend, &out->records, error)) return false;
  for (const BenchRecord& r : out->records) out->index.add(r);
  return true;
}

}  // namespace strata::lowerbound
