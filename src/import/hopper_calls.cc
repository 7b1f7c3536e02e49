#include <string>
#include <unordered_map>

#include "core/attr_keys.h"
#include "core/kernel_names.h"
#include "import/converters.h"

namespace strata::import {

void mark_hopper_calls(ImportBuilder& b) {
  auto& spans = b.spans();
  trace::Trace& t = b.trace();
  std::unordered_map<uint64_t, std::string> ex_launches;  // correlation id -> launch name
  for (size_t i = 0; i < spans.size(); ++i) {
    const SpanRecord& r = spans[i].record;
    if (r.level != static_cast<uint8_t>(Level::kRuntimeApi)) continue;
    const std::string_view name = t.name(r);
    if (is_tma_descriptor_call(name))
      b.add_late_attr(i, t.string_attr(attr_keys::kApiClass, "tma_descriptor"));
    else if (r.correlation_id && is_extensible_launch(name))
      ex_launches.emplace(r.correlation_id, std::string(name));
  }
  if (ex_launches.empty()) return;
  uint64_t kernels = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    const SpanRecord& r = spans[i].record;
    if (r.kind != static_cast<uint8_t>(SpanKind::kExecution) || !r.correlation_id) continue;
    auto it = ex_launches.find(r.correlation_id);
    if (it == ex_launches.end()) continue;
    b.add_late_attr(i, t.string_attr(attr_keys::kLaunchApi, it->second));
    ++kernels;
  }
  if (kernels) b.note("kernels_of_extensible_launches", kernels);
}

}  // namespace strata::import
