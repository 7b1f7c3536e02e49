// Which repetition is the iteration: the outermost repeated structure, with nested repetition folded.
//
// A training loop repeats at several scales at once: RNN time steps, stacked transformer blocks and
// per-parameter optimizer updates repeat inside a step; gradient-accumulation micro-batches repeat
// inside an optimizer step; steps repeat; "k steps and an evaluation pass" repeats too. Detection
// reads candidate cycles (readings) off the suffix tree, evaluates each by approximate matching (the
// share of the ops its cycle matches), and walks up from the finest reading that explains nearly as
// much as the best one:
//
//   1. Fold every run of that reading's cycle (one or more copies back to back, any count) into one
//      element, and read the folded sequence again. Folding makes the enclosing structure periodic
//      even when the nested count varies from step to step (sequence lengths of an RNN).
//   2. If a coarser reading of the folded sequence holds the folded runs, the finer cycle is either
//      nested structure (the enclosing cycle holds a fair share of other ops: the RNN's forward,
//      loss and optimizer around its time steps) or the iteration, read several at a time with a
//      small extra block (an evaluation pass after every k-th step). The share of other ops decides
//      (MinerOptions::nested_rest_share); near the threshold the reading is reported as ambiguous.
//   3. When the trace marks training steps (MinerOptions::step_anchor_symbols: the optimizer step),
//      the marks decide instead: a cycle without one is nested structure, a cycle with one is the
//      training step (gradient accumulation's micro-batches hold none).
//
// Everything here works on one level's sequence, a sample's or the whole one's: the same folds are
// then applied to the whole sequence for matching (pattern_miner.cc).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "analysis/iterations/miner_internal.h"

namespace strata::analysis::iterations::detail {

// Optimizer steps (or any op known to occur once per training step), by op symbol.
struct StepAnchors {
  std::vector<uint8_t> is_anchor;  // by op symbol of the whole sequence
  std::span<const int32_t> ops;    // the whole op sequence (anchors are counted on ops)
  bool present = false;            // anchors occur in the sequence being mined, often enough to decide
  // Runs of anchor ops among ops [first, last], read cyclically.
  int64_t runs_in(int64_t first, int64_t last) const;
};

struct Reading {
  RepeatCandidate node;    // the suffix-tree node it was read from
  int64_t begin = 0;       // a clean cycle (two occurrences of the node one cycle apart, no extra op)
  int64_t length = 0;      // its elements; primitive (not a power of a shorter cycle)
  int64_t iterations = 0;  // approximate matches (Algorithm 1) over the level's sequence
  double explained = 0;    // ops the cycle matched (extras excluded) / ops of the level's sequence
  int64_t cycle_ops = 0;   // ops covered by the clean cycle
  int64_t anchors = 0;     // anchor runs in the clean cycle
  std::span<const int32_t> cycle(const Subsequence& s) const { return s.symbols.subspan(begin, length); }
};

// The eligible readings of `s` (>= min_repeats iterations, explaining >= count_preference of the
// best), finest first.
std::vector<Reading> find_readings(const Subsequence& s, const SuffixIndex& index,
                                   const MinerOptions& options, std::span<const int64_t> gap_before_ns,
                                   const StepAnchors& anchors);

// Folds every run of `unit` in `in` (one or more copies back to back, each an approximate match: an
// inserted op is absorbed and counted in out->noise) into one element `element`. `copies`
// (optional) gets, per element of `out`, the copies folded into it (0: not folded). With `anchors`
// present, no copy takes a step mark in (a nested unit holds none: a copy reaching across one would
// chain the runs of two steps into one).
void fold_runs(const Subsequence& in, std::span<const int32_t> unit, int32_t element,
               std::span<const int64_t> gap_before_ns, Subsequence* out,
               std::vector<int32_t>* copies = nullptr, const StepAnchors* anchors = nullptr);

struct Level {
  std::unique_ptr<Subsequence> owned;  // folded levels
  const Subsequence* seq = nullptr;    // level 0: the caller's
  SuffixIndex index;
  std::vector<Reading> readings;
};

struct Alternative {
  int64_t cycle_ops = 0;
  int64_t iterations = 0;
  double explained = 0;
};

struct StructureChoice {
  std::vector<Level> levels;  // levels[l + 1] = levels[l] with units[l] folded
  std::vector<std::vector<int32_t>> units;
  Reading chosen;                          // a reading of levels.back()
  std::optional<Alternative> alternative;  // another reading explaining about as much
  double rest = -1;                        // share of other ops in the enclosing reading that decided
  bool by_anchor = false;                  // the step anchors decided
  bool borderline = false;                 // the rest was close to the threshold: ambiguous
};

// Chooses the iteration's level and reading on `s` (op symbols < op_alphabet; level l's folded
// element is op_alphabet + l). False when nothing repeats enough.
bool choose_structure(const Subsequence& s, int32_t op_alphabet, const MinerOptions& options,
                      std::span<const int64_t> gap_before_ns, const StepAnchors& anchors,
                      StructureChoice* out);

// Tandem repeats inside one iteration's ops (its template): maximal runs of >= 2 copies of a
// primitive unit (two copies of a one- or two-op unit are too common to count), the largest first,
// non-overlapping.
std::vector<NestedRepeat> nested_repeats(std::span<const int32_t> cycle_ops);

// A unit the miner folded on its way to the iteration, with its run lengths over the whole loop.
struct FoldedUnit {
  std::vector<int32_t> unit;  // in the elements of its level (op symbols, folded elements below it)
  std::vector<int32_t> ops;   // one copy's ops
  int64_t copies_min = 0;
  int64_t copies_max = 0;
};

// The nested structure of one iteration (its template's ops): the runs of each folded unit in it
// (folding the template as the sequence was folded; the unit folded last is depth 0, the ones
// inside it deeper), then the other tandem repeats of the template outside those runs.
std::vector<NestedRepeat> nested_structure(std::span<const int32_t> template_ops,
                                           const std::vector<FoldedUnit>& folded, int32_t op_alphabet);

}  // namespace strata::analysis::iterations::detail
