// `strata summary`: the answer first. What ran (process roles, the unit of work and how it was
// found), where each step's time goes (step_breakdown.h), the bottleneck with the numbers that decide
// it, ranked findings from named rules, and the top ops by self time. docs/summary.md is the contract
// of its JSON form and documents every rule's threshold.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/run_recognition.h"
#include "analysis/step_breakdown.h"
#include "trace/span_tree.h"
#include "trace/trace.h"

namespace strata::analysis {

struct Finding {
  std::string rule;      // the rule's name (docs/summary.md)
  std::string severity;  // high, medium, low, info
  std::string message;   // what it means and what to do
  std::string evidence;  // the numbers that fired it
  double weight = 0;     // ranking: severity first, then the share of step time at stake
};

struct Bottleneck {
  // input, framework_overhead, cpu_compute, gpu_compute, gpu_idle, memcpy, communication, sync; "none"
  // when the trace has no unit of work and no host work to judge.
  std::string kind = "none";
  std::string confidence = "low";  // high, medium, low
  std::string evidence;
};

struct TopOp {
  std::string name;
  double self_ms = 0;
  double self_pct = 0;  // of the top ops' summed self time
  int64_t count = 0;
  std::optional<double> alloc_mb;  // gross allocations (attr alloc_bytes), when the trace has them
};

struct RunSummary {
  RunRecognition run;
  Breakdown breakdown;
  double step_median_ms = 0, step_p90_ms = 0;
  Bottleneck bottleneck;
  std::vector<Finding> findings;  // ranked
  std::vector<TopOp> top_ops;
  int64_t host_cores = 0;  // cores of the recording machine, when the trace says (0: unknown)
};

struct SummaryOptions {
  size_t top_ops = 10;
};

RunSummary summarize_run(const trace::Trace& trace, const trace::SpanTree& tree,
                         const SummaryOptions& options = {});

// The verdict and the findings (summary_rules.cc), from the breakdown and the trace.
void judge(const trace::Trace& trace, const trace::SpanTree& tree, RunSummary* summary);

}  // namespace strata::analysis
