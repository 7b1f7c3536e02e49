#include "analysis/rank_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "analysis/rank_partials.h"
#include "analysis/stats.h"
#include "core/attr_keys.h"
#include "trace/rank_align.h"

namespace strata::analysis::ranks {
namespace {
std::string fmt_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

std::vector<int64_t> owner_of_processes(const trace::Trace& trace) {
  std::vector<int64_t> owner(trace.processes.size());
  for (size_t p = 0; p < trace.processes.size(); ++p) {
    const int64_t rank = trace::process_rank(trace.processes[p]);
    owner[p] = rank >= 0 ? rank : -1 - static_cast<int64_t>(p);
  }
  return owner;
}

Cell rank_cell(int64_t owner) { return owner >= 0 ? Cell::integer(owner) : Cell::empty(); }

std::string owner_label(int64_t owner) {
  return owner >= 0 ? "rank " + std::to_string(owner) : "process " + std::to_string(-1 - owner);
}

bool occupies_stream(const SpanRecord& s) {
  if (s.kind != static_cast<uint8_t>(SpanKind::kExecution) || s.stream == kNoStream) return false;
  const ActivityType t = s.activity_type();
  return t == ActivityType::kKernel || t == ActivityType::kCollective || t == ActivityType::kGraph ||
         is_memory_transfer(t);
}

int32_t launch_call(const trace::Trace& trace, const trace::SpanTree& tree, size_t i) {
  if (tree.link(i) != trace::LinkKind::kCorrelation) return -1;
  const int32_t p = tree.parent(i);
  if (p < 0 || !is_host_call(trace.spans[static_cast<size_t>(p)].activity_type())) return -1;
  return p;
}

bool device_scope(const AnalysisInput& input, std::span<const int64_t> owners, std::vector<char>* in_scope,
                  std::string* error) {
  in_scope->clear();
  const std::string scope = input.params.get(kScopeParam, "trace");
  if (scope == "trace") return true;
  if (scope != "steps") {
    *error =
        "scope='" + scope + "': expected trace (all device work) or steps (HTA's: the steps before the last)";
    return false;
  }
  const trace::Trace& trace = input.trace;
  // Each owner's step marks (model-level spans with the step attribute): how many, the last start.
  struct Marks {
    std::set<int64_t> steps;  // distinct numbers: a step marked twice (nested spans) is one step
    int64_t last_start = INT64_MIN;
  };
  std::map<int64_t, Marks> marks;
  const uint32_t step_key = trace.strings.find(attr_keys::kStep);
  for (size_t i = 0; step_key != UINT32_MAX && i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    if (s.level != static_cast<uint8_t>(Level::kModel)) continue;
    for (const AttrRecord& a : trace.attributes(i))
      if (a.key == step_key) {
        Marks& m = marks[owners[s.process]];
        m.steps.insert(a.value.i);
        m.last_start = std::max(m.last_start, s.start_ns);
        break;
      }
  }
  in_scope->assign(trace.spans.size(), 1);
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    if (s.stream == kNoStream && s.device == kNoDevice) continue;  // host work: not scoped
    const auto m = marks.find(owners[s.process]);
    if (m == marks.end() || m->second.steps.size() < 2) continue;
    const int32_t call = launch_call(trace, input.tree, i);
    (*in_scope)[i] = call >= 0 && trace.spans[static_cast<size_t>(call)].start_ns < m->second.last_start;
  }
  return true;
}

int64_t trace_origin(const trace::Trace& trace) {
  int64_t origin = INT64_MAX;
  for (const SpanRecord& s : trace.spans) origin = std::min(origin, s.start_ns);
  return origin == INT64_MAX ? 0 : origin;
}

bool number_param(const Params& params, std::string_view key, double fallback, double min, double* out,
                  std::string* error) {
  const std::string text = params.get(key, "");
  if (text.empty()) {
    *out = fallback;
    return true;
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v < min) {
    *error = std::string(key) + "='" + text + "': expected a number >= " + fmt_number(min);
    return false;
  }
  *out = v;
  return true;
}

double percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return percentile_sorted(values, q);
}

MedianMad median_mad(std::vector<double> values) {
  MedianMad r;
  if (values.empty()) return r;
  r.median = percentile(values, 50);
  for (double& v : values) v = std::fabs(v - r.median);
  r.mad = percentile(std::move(values), 50);
  return r;
}

}  // namespace strata::analysis::ranks

namespace strata::analysis {
namespace {
// Function-local, so registrations from any file's static initialization find it constructed.
std::vector<RankPartial>& rank_partials() {
  static std::vector<RankPartial> partials;
  return partials;
}
}  // namespace

bool register_rank_partial(const RankPartial& partial) {
  rank_partials().push_back(partial);
  return true;
}

const RankPartial* find_rank_partial(std::string_view analysis) {
  for (const RankPartial& p : rank_partials())
    if (p.analysis == analysis) return &p;
  return nullptr;
}

}  // namespace strata::analysis
