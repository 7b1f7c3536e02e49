// The `iterations` analysis end to end: classify tracks, mine the main track's op sequence, compute
// per-iteration metrics, diagnose each loop. Shared by `strata iterations` and `strata analyze`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/iterations/diagnosis.h"
#include "analysis/iterations/iteration_metrics.h"
#include "analysis/iterations/pattern_miner.h"
#include "analysis/iterations/stream_classifier.h"

namespace strata::analysis::iterations {

struct IterationsOptions {
  ClassifyOptions classify;
  MinerOptions miner;
  DiagnosisOptions diagnosis;
};

// Reads --param style keys: iterations, stream, level, max_extra_ops (k0), epsilon, min_repeats,
// max_loops, sample_ops (0: no sampling). Returns false with *error naming the bad key and its
// expected form.
bool options_from_params(const analysis::Params& params, IterationsOptions* options, std::string* error);

struct IterationsReport {
  Classification classes;
  MiningResult mining;
  MetricsResult metrics;
  std::vector<Diagnosis> diagnoses;  // one per loop
  std::vector<std::string> notes;    // marker cross-check and other remarks
  std::vector<uint32_t> symbol_names;  // op symbol -> name id (trace.strings)
};

// Returns false with *error (one line, with the remedy) when the trace has nothing to mine.
bool run_iterations(const trace::Trace& trace, const IterationsOptions& options, IterationsReport* report,
                    std::string* error);

// Tables: iterations_summary, iterations, streams, diagnosis, gap_spans, and nested (repetition inside
// the iterations) when there is any.
std::vector<analysis::Table> report_tables(const trace::Trace& trace, const IterationsReport& report);

// Appends one span per iteration at Level::kIteration (name "iteration", or "iteration.loopN" for
// loops after the first) with attributes index, loop, ops, extra_ops, flagged. Returns the count.
size_t add_iteration_spans(trace::Trace* trace, const IterationsReport& report);

}  // namespace strata::analysis::iterations
