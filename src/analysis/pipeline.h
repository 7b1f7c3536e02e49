// The analysis pipeline as `strata analyze` runs it: the trace's span tree (built once when it was
// opened), the shared workload, the chosen analyses.
// Shared by the CLI and the pipeline benchmark so both measure and run the same thing.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/run_recognition.h"

namespace strata::analysis {

// What runs when no --analysis is given: XSP's model/layer summary, kernels, per-op statistics.
std::span<const std::string_view> default_analyses();

struct PipelineResult {
  std::vector<std::pair<const Analysis*, AnalysisResult>> results;  // in the order asked
};

// Checks the values of the --param keys these analyses read (numbers where numbers are expected,
// stat names, trim in [0, 0.5)); returns one line naming the key, the value and what is expected.
std::optional<std::string> validate_params(const Params& params);

// Which analyses read the --param keys given: a key that none of the chosen analyses reads is an
// error (a typo, or a key of an analysis not chosen), named with the keys they do read; a key that
// only some of them read gives a note naming the others.
struct ParamKeyCheck {
  std::optional<std::string> error;
  std::vector<std::string> notes;
};
ParamKeyCheck check_param_keys(const Params& params, std::span<const Analysis* const> analyses);

// `run`: the trace's recognition when the caller has it already (strata report: the summary's), so
// the workload does not recognize the run again; it must be recognize_run(trace, trace.tree()). A
// leveled trace's run views recognize their own.
PipelineResult run_pipeline(const trace::Trace& trace, std::span<const Analysis* const> analyses,
                            const Params& params, const RunRecognition* run = nullptr);

}  // namespace strata::analysis
