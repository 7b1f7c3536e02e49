// Rank analyses split into a per-rank partial and a combine (issue 17 item 5: strata.dask runs the
// partial on the worker that loads a rank and the combine on the driver). The local run goes through
// the same two steps (partial of the whole trace, combine of that one partial), so the split run and
// the local run cannot drift. A partial is opaque bytes: compact per-rank records whose size does not
// grow with the rank's span count (kernel_distribution: one record per kernel name and rank).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "analysis/analysis.h"

namespace strata::analysis {

struct RankPartial {
  std::string_view analysis;
  // The records of every owner (rank) in `trace`; they depend on that owner's spans and the --param
  // values only (the same `params` the combine gets).
  std::string (*partial)(const trace::Trace& trace, const Params& params);
  // The analysis's result over the owners of all `partials` (each owner in one partial), with the
  // --param values `params` (validated by the caller as for the local run).
  AnalysisResult (*combine)(std::span<const std::string_view> partials, const Params& params);
};

// The analyses that have a partial; nullptr for any other name (those ship the rank's trace).
const RankPartial* find_rank_partial(std::string_view analysis);

}  // namespace strata::analysis
