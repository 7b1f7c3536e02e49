// Analyses over a --leveled trace (`strata record --leveled`): the trace holds every run of the
// command as recorded, each traced down to a different level (processes tagged "run.level"). An
// analysis reads only the runs where the level it times was the deepest traced (XSP III-C): the
// model table the model-only runs, layer tables the runs down to layers, kernel tables the runs
// down to the deepest level. Runs are never mixed into one timeline.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/level.h"
#include "trace/trace.h"

namespace strata::analysis {

// The levels the runs of a leveled trace were traced down to, ascending; empty for other traces.
std::vector<int> leveled_run_levels(const trace::Trace& trace);

// Which runs an analysis timing `wanted` reads: those traced down to exactly `wanted`, else the
// shallowest traced deeper, else the deepest (nullopt wanted: the deepest). `levels` is non-empty.
int choose_run_level(const std::vector<int>& levels, std::optional<Level> wanted);

// The processes of the runs traced down to `run_level`, with their spans and attributes (string
// ids unchanged). *runs is set to the number of runs (distinct "run" tags) included.
trace::Trace runs_traced_to(const trace::Trace& trace, int run_level, int* runs);

// The note every table of such an analysis carries, e.g. "leveled trace: from the 3 runs traced
// down to layer (runs at model, layer, library)"; an analysis of the deepest runs (wanted nullopt)
// is told that the layer/model times it shows include the deeper tracing's cost.
std::string leveled_note(const std::vector<int>& levels, int run_level, int runs, std::optional<Level> wanted);

}  // namespace strata::analysis
