// gpu_stalls: where GPU warps stalled, from GPU PC samples (activity gpu_pc_sample: one record per
// sampled PC of a kernel function, with a sample count per stall reason; `strata record
// --gpu-pc-sampling`). Tables:
//   gpu_stalls_by_kernel  per kernel: samples, share of all samples, share of each culprit category
//                         (core/stall_reasons.h), the top reason and the hottest PC with its source line
//   gpu_stalls_by_reason  per kernel and stall reason: samples and share within the kernel
//   gpu_stalls_top_pcs    the PCs with the most samples: kernel, PC offset, source line, top reason
//   gpu_stalls_by_line    per kernel and source line (PCs sharing a line summed; needs -lineinfo)
//   gpu_stalls_by_op      samples per launching op (the innermost layer-level ancestor of the kernel
//                         executions): exact where a sample names its launch (serialized mode,
//                         kernel_correlation_id), else split over the ops that launched a kernel of
//                         that name in proportion to their kernels' execution time ("time_share":
//                         continuous sampling is time-proportional, so this is its expected split)
// Only the plain reasons count: the "_not_issued" variants are subsets of them.
#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <set>

#include "analysis/analysis.h"
#include "analysis/analysis_util.h"
#include "core/attr_keys.h"
#include "core/stall_reasons.h"

namespace strata::analysis {
namespace {

using Categories = std::array<double, kStallCategoryCount>;

struct PcSample {
  std::string kernel;
  int64_t pc = 0;
  std::string line;  // "file:line", empty without line info
  int64_t correlation = 0;
  double samples = 0;
  std::map<std::string, double> reasons;  // plain reasons only
};

struct Group {
  double samples = 0;
  Categories categories{};
  std::map<std::string, double> reasons;
  const PcSample* hottest = nullptr;
  bool exact = false, estimated = false;
  void add(const PcSample& s, double weight) {
    samples += s.samples * weight;
    for (const auto& [reason, n] : s.reasons) {
      categories[static_cast<size_t>(classify_stall_reason(reason))] += n * weight;
      reasons[reason] += n * weight;
    }
    if (hottest == nullptr || s.samples > hottest->samples) hottest = &s;
  }
  std::string top_reason() const {
    const std::pair<const std::string, double>* top = nullptr;
    for (const auto& r : reasons)
      if (top == nullptr || r.second > top->second) top = &r;
    return top != nullptr ? top->first : "";
  }
};

std::vector<PcSample> read_samples(const trace::Trace& trace) {
  std::vector<PcSample> out;
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    if (trace.spans[i].activity_type() != ActivityType::kGpuPcSample) continue;
    PcSample s;
    s.kernel = std::string(trace.name(trace.spans[i]));
    std::string file;
    int64_t line = 0;
    for (const AttrRecord& a : trace.attributes(i)) {
      std::string_view key = trace.strings.get(a.key);
      const bool is_int = a.type == static_cast<uint8_t>(AttrType::kInt);
      if (key.starts_with(attr_keys::kStallPrefix) && is_int) {
        std::string reason(key.substr(attr_keys::kStallPrefix.size()));
        if (!is_not_issued_variant(reason) && a.value.i > 0) {
          s.reasons[reason] += static_cast<double>(a.value.i);
          s.samples += static_cast<double>(a.value.i);
        }
      } else if (key == attr_keys::kPcOffset && is_int) {
        s.pc = a.value.i;
      } else if (key == attr_keys::kKernelCorrelationId && is_int) {
        s.correlation = a.value.i;
      } else if (key == attr_keys::kSourceLine && is_int) {
        line = a.value.i;
      } else if (key == attr_keys::kSourceFile && a.type == static_cast<uint8_t>(AttrType::kString)) {
        file = trace.attr_value_string(a);
      }
    }
    if (line > 0) s.line = file + ":" + std::to_string(line);
    if (s.samples > 0) out.push_back(std::move(s));
  }
  return out;
}

std::string hex(int64_t pc) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(pc));
  return buf;
}

std::vector<std::string> category_columns() {
  std::vector<std::string> c;
  for (int k = 0; k < kStallCategoryCount; ++k)
    c.push_back(std::string(stall_category_name(static_cast<StallCategory>(k))) + "_pct");
  return c;
}

void add_category_cells(const Group& g, std::vector<Cell>* row) {
  for (double n : g.categories) row->push_back(Cell::real(g.samples > 0 ? 100.0 * n / g.samples : 0, 1));
}

// The op that launched kernel execution i: its innermost layer-level ancestor.
std::string launching_op(const trace::Trace& trace, const trace::SpanTree& tree, size_t i) {
  for (int32_t p = tree.parent(i); p != trace::kNoParent; p = tree.parent(static_cast<size_t>(p)))
    if (trace.spans[static_cast<size_t>(p)].level == static_cast<uint8_t>(Level::kLayer))
      return std::string(trace.name(trace.spans[static_cast<size_t>(p)]));
  return "<no op>";
}

std::map<std::string, Group> by_op(const AnalysisInput& in, const std::vector<PcSample>& samples) {
  const trace::Trace& trace = in.trace;
  std::map<std::string, std::map<std::string, double>> time_by_kernel;  // kernel -> op -> ns
  std::map<uint64_t, std::string> op_by_correlation;
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    if (s.kind != static_cast<uint8_t>(SpanKind::kExecution) ||
        (s.activity_type() != ActivityType::kKernel && s.activity_type() != ActivityType::kCollective))
      continue;
    std::string op = launching_op(trace, in.tree, i);
    time_by_kernel[std::string(trace.name(s))][op] +=
        static_cast<double>(std::max<int64_t>(s.duration_ns(), 0));
    if (s.correlation_id != 0) op_by_correlation[s.correlation_id] = op;
  }
  std::map<std::string, Group> ops;
  for (const PcSample& s : samples) {
    if (auto it = op_by_correlation.find(static_cast<uint64_t>(s.correlation));
        s.correlation != 0 && it != op_by_correlation.end()) {
      ops[it->second].add(s, 1.0);
      ops[it->second].exact = true;
      continue;
    }
    auto k = time_by_kernel.find(s.kernel);
    double total = 0;
    if (k != time_by_kernel.end())
      for (const auto& [op, ns] : k->second) total += ns;
    if (total <= 0) {
      Group& g = ops["<kernel not traced>"];
      g.add(s, 1.0);
      g.estimated = true;
      continue;
    }
    for (const auto& [op, ns] : k->second) {
      ops[op].add(s, ns / total);
      ops[op].estimated = true;
    }
  }
  return ops;
}

class GpuStalls final : public Analysis {
 public:
  std::string_view name() const override { return "gpu_stalls"; }
  std::string_view description() const override {
    return "GPU warp stall reasons from PC sampling, per kernel, PC/source line and launching op";
  }
  AnalysisResult run(const AnalysisInput& in) const override {
    std::vector<PcSample> samples = read_samples(in.trace);
    if (samples.empty())
      return missing(
          "no GPU PC samples in the trace: record with strata record --level device --gpu-pc-sampling -- "
          "CMD");
    double all = 0;
    std::map<std::string, Group> kernels;
    for (const PcSample& s : samples) {
      kernels[s.kernel].add(s, 1.0);
      all += s.samples;
    }
    AnalysisResult r;
    r.tables.push_back(kernel_table(kernels, all, in.params));
    r.tables.push_back(reason_table(kernels, in.params));
    r.tables.push_back(pc_table(samples, all, in.params));
    r.tables.push_back(line_table(samples, all, in.params));
    r.tables.push_back(op_table(by_op(in, samples), all, in.params));
    return r;
  }

 private:
  static Table kernel_table(const std::map<std::string, Group>& kernels, double all, const Params& params) {
    std::vector<std::string> columns = {"kernel", "samples", "share_pct"};
    for (auto& c : category_columns()) columns.push_back(c);
    for (const char* c : {"top_reason", "hottest_pc", "hottest_line"}) columns.emplace_back(c);
    Table t = make_table("gpu_stalls_by_kernel", "GPU stall reasons by kernel (PC sampling)", columns);
    for (const auto& [kernel, g] : kernels) {
      std::vector<Cell> row = {Cell::text(kernel), Cell::integer(static_cast<int64_t>(g.samples)),
                               Cell::real(all > 0 ? 100.0 * g.samples / all : 0, 1)};
      add_category_cells(g, &row);
      row.push_back(Cell::text(g.top_reason()));
      row.push_back(Cell::text(hex(g.hottest->pc)));
      row.push_back(Cell::text(g.hottest->line));
      t.rows.push_back(std::move(row));
    }
    sort_rows_desc(&t, 1);
    keep_top(&t, params, 20);
    t.notes.push_back(
        "categories: core/stall_reasons.h; shares of each kernel's samples (all reasons, issued too)");
    return t;
  }

  static Table reason_table(const std::map<std::string, Group>& kernels, const Params& params) {
    Table t = make_table("gpu_stalls_by_reason", "GPU stall reasons per kernel",
                         {"kernel", "reason", "category", "samples", "share_pct"});
    std::vector<std::pair<double, const std::string*>> order;
    for (const auto& [kernel, g] : kernels) order.emplace_back(g.samples, &kernel);
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    const int64_t top = params.get_int("top", 20);
    for (size_t k = 0; k < order.size() && (top <= 0 || static_cast<int64_t>(k) < top); ++k) {
      const Group& g = kernels.at(*order[k].second);
      std::vector<std::pair<std::string, double>> reasons(g.reasons.begin(), g.reasons.end());
      std::stable_sort(reasons.begin(), reasons.end(),
                       [](const auto& a, const auto& b) { return a.second > b.second; });
      for (const auto& [reason, n] : reasons)
        t.rows.push_back({Cell::text(*order[k].second), Cell::text(reason),
                          Cell::text(std::string(stall_category_name(classify_stall_reason(reason)))),
                          Cell::integer(static_cast<int64_t>(n)), Cell::real(100.0 * n / g.samples, 1)});
    }
    if (top > 0 && order.size() > static_cast<size_t>(top))
      t.notes.push_back("the " + std::to_string(top) + " kernels with the most samples of " +
                        std::to_string(order.size()) + " (--param top)");
    return t;
  }

  static Table pc_table(const std::vector<PcSample>& samples, double all, const Params& params) {
    Table t = make_table("gpu_stalls_top_pcs", "GPU PCs with the most samples",
                         {"kernel", "pc", "line", "samples", "share_pct", "top_reason", "top_category"});
    for (const PcSample& s : samples) {
      Group g;
      g.add(s, 1.0);
      std::string reason = g.top_reason();
      t.rows.push_back({Cell::text(s.kernel), Cell::text(hex(s.pc)), Cell::text(s.line),
                        Cell::integer(static_cast<int64_t>(s.samples)),
                        Cell::real(100.0 * s.samples / all, 1), Cell::text(reason),
                        Cell::text(std::string(stall_category_name(classify_stall_reason(reason))))});
    }
    sort_rows_desc(&t, 3);
    keep_top(&t, params, 20);
    return t;
  }

  // Samples per source line: the PCs of one kernel that share a line, summed (PCs without line info
  // are left out; the note counts them).
  static Table line_table(const std::vector<PcSample>& samples, double all, const Params& params) {
    std::map<std::pair<std::string, std::string>, Group> lines;
    double without = 0;
    for (const PcSample& s : samples) {
      if (s.line.empty())
        without += s.samples;
      else
        lines[{s.kernel, s.line}].add(s, 1.0);
    }
    std::vector<std::string> columns = {"kernel", "line", "samples", "share_pct"};
    for (auto& c : category_columns()) columns.push_back(c);
    columns.emplace_back("top_reason");
    Table t = make_table("gpu_stalls_by_line", "GPU stall reasons by source line", columns);
    for (const auto& [key, g] : lines) {
      std::vector<Cell> row = {Cell::text(key.first), Cell::text(key.second),
                               Cell::integer(static_cast<int64_t>(g.samples)),
                               Cell::real(all > 0 ? 100.0 * g.samples / all : 0, 1)};
      add_category_cells(g, &row);
      row.push_back(Cell::text(g.top_reason()));
      t.rows.push_back(std::move(row));
    }
    sort_rows_desc(&t, 2);
    keep_top(&t, params, 20);
    if (without > 0)
      t.notes.push_back(std::to_string(static_cast<int64_t>(without)) +
                        " samples at PCs without line info (compile with -lineinfo) are not in this table");
    return t;
  }

  static Table op_table(const std::map<std::string, Group>& ops, double all, const Params& params) {
    std::vector<std::string> columns = {"op", "samples", "share_pct"};
    for (auto& c : category_columns()) columns.push_back(c);
    columns.emplace_back("top_reason");
    columns.emplace_back("attribution");
    Table t = make_table("gpu_stalls_by_op", "GPU stall reasons by launching op", columns);
    for (const auto& [op, g] : ops) {
      std::vector<Cell> row = {Cell::text(op), Cell::real(g.samples, 1),
                               Cell::real(all > 0 ? 100.0 * g.samples / all : 0, 1)};
      add_category_cells(g, &row);
      row.push_back(Cell::text(g.top_reason()));
      row.push_back(Cell::text(g.exact && g.estimated ? "mixed" : g.exact ? "correlation" : "time_share"));
      t.rows.push_back(std::move(row));
    }
    sort_rows_desc(&t, 1);
    keep_top(&t, params, 20);
    t.notes.push_back(
        "time_share: a kernel's samples split over the ops that launched it by their kernels' execution time "
        "(continuous sampling); correlation: the samples' own launch (serialized sampling)");
    return t;
  }
};

}  // namespace

std::unique_ptr<Analysis> make_gpu_stalls() { return std::make_unique<GpuStalls>(); }
STRATA_REGISTER_ANALYSIS(make_gpu_stalls, 3100);

}  // namespace strata::analysis
