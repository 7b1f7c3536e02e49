// Marker-free iteration mining over one stream's operation-name sequence (DeepProf IV-B).
//
// The sequence is a string over an integer alphabet (interned op names). Its suffix array and LCP
// array enumerate every internal node of the suffix tree (LCP intervals): a substring repeated
// exactly c times, for all lengths in (parent lcp, lcp]. From these the miner picks the repeated
// pattern P (Criteria 2 and 3), turns it into the full iteration cycle aligned on the idle gap that
// separates iterations, and matches the cycle with up to k0 extra ops inside (Algorithm 1).
// Iterations with extra ops are flagged; ops between iterations are attached or counted, never lost.
//
// Long sequences are mined on a sample: the suffix array (random accesses over arrays several times
// the sequence) would cost more than loading the trace, while a loop shows its cycle in any stretch
// holding a few iterations. The pattern and cycle come from a few evenly spread windows; the
// matching, and so the iteration count and the confidence, runs over the whole sequence. When the
// sample shows nothing that qualifies, a cycle too long for its windows (a window must hold four
// iterations), a loop explaining under 30% of the sample, or one explaining far less of the whole
// than of the sample, the windows double, up to the whole sequence (the exact method, which shorter
// sequences always get). With a count given, the sampled cycle must match about that many times
// over the whole sequence (within the initial epsilon or 10%); otherwise the exact method decides.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace strata::analysis::iterations {

// A suffix-tree node reduced to what the criteria need: a substring of `length` ops starting at
// `position`, occurring `count` times (overlapping occurrences count, as leaves of the node do).
struct RepeatCandidate {
  int64_t count = 0;
  int64_t length = 0;
  int64_t position = 0;
  int32_t sa_begin = 0;  // the node's suffix-array interval [sa_begin, sa_end]
  int32_t sa_end = 0;
  double share() const;  // count * length / sequence length (filled by the miner)
  int64_t sequence_length = 0;
};

// Paper mode (iteration count i known): the longest substring repeated c times with
// i - epsilon < c <= i (Criterion 2) and shorter than |S| / i (Criterion 3); epsilon doubles until
// one qualifies (or exceeds i). *epsilon_used gets the epsilon that admitted it.
std::optional<RepeatCandidate> select_pattern_for_count(std::span<const int32_t> seq, int32_t alphabet_size,
                                                        int64_t iterations, int64_t epsilon,
                                                        int64_t* epsilon_used = nullptr);

// Detection mode: for each repeat count c >= min_repeats, the longest substring repeated exactly c
// times with length * c < |S| (Criterion 3 with i = c). Sorted by count. Exposed for tests.
std::vector<RepeatCandidate> repeat_profile(std::span<const int32_t> seq, int32_t alphabet_size,
                                            int64_t min_repeats);

struct MinerOptions {
  int64_t iterations = 0;       // i: the known number of iterations of the dominant loop; 0 = detect
  int64_t epsilon = 0;          // initial epsilon (Criterion 2); 0 = max(1, i / 50)
  int64_t max_extra_ops = -1;   // k0: extra ops allowed inside one iteration; -1 = cycle length / 2
  int64_t attach_limit = -1;    // ops between two iterations attached to the earlier one; -1 = 2 cycles
  int64_t min_repeats = 3;      // a loop must repeat at least this often
  int max_loops = 4;            // multi-loop: patterns mined one after another on the leftover ops
  double min_loop_share = 0.01; // a further loop must cover this share of all ops
  double min_loop_time_share = 0.02;
  int64_t min_further_cycle_ops = 3;  // and have at least this many ops per iteration (set-up code
                                      // such as parameter initialization repeats 1-2 op patterns)
  // Detection prefers the reading with the most iterations among those explaining at least this
  // share of what the best reading explains (a loop of period p also "repeats" with period 2p).
  double count_preference = 0.8;
  // Sampling: sequences (or multi-loop leftovers) longer than the sample are mined on sample_windows
  // evenly spread windows, grown as described above. The sample is sample_ops ops, or a sixteenth
  // of the sequence when that is smaller (but never under 32Ki ops, unless sample_ops is).
  // 0 = always mine the whole sequence.
  int64_t sample_ops = int64_t{1} << 17;
  int sample_windows = 8;
  // Nested repetition (loop_structure.h): a finer cycle whose runs an enclosing cycle holds is nested
  // structure when the enclosing cycle's other ops are at least this share of it; below it, the
  // enclosing cycle is several iterations of the finer one with an extra block (an evaluation pass).
  double nested_rest_share = 0.2;
  // Op symbols that occur once per training step (the optimizer step): when the sequence holds them,
  // a cycle without one is nested structure and a cycle with one is the step. Empty: structure only.
  std::vector<int32_t> step_anchor_symbols;
};

// Repetition inside one iteration (RNN time steps, stacked blocks, micro-batches): `copies` copies
// of a `unit_ops`-op unit starting at op `offset` of the iteration's template (Loop::cycle).
struct NestedRepeat {
  int64_t offset = 0;
  int64_t unit_ops = 0;
  int64_t copies = 0;         // in the template
  int64_t copies_min = 0;     // over the loop's runs of this unit when the miner folded them (the count
  int64_t copies_max = 0;     // may vary between iterations); else both = copies
  int depth = 0;              // 0: directly in the iteration; d: inside a unit of depth d - 1
  bool folded = false;        // a repetition the miner read and folded on its way to the iteration
  std::vector<int32_t> unit;  // the unit's op symbols
};

struct Loop {
  std::vector<int32_t> cycle;     // one iteration's ops, starting at the iteration boundary (one clean
                                  // iteration's when nested counts vary)
  int64_t pattern_length = 0;     // l_p of the mined substring P (elements of the folded sequence)
  int64_t pattern_count = 0;      // c_p: its repetitions in the (sub)sequence or sample it was mined from
  int64_t epsilon = 0;            // epsilon that admitted P (paper mode), 0 in detection mode
  int64_t phase = 0;              // offset of the boundary inside P's cycle (largest idle gap)
  int64_t iterations = 0;         // iterations matched for this loop
  int64_t ops = 0;                // ops inside those iterations (extras included)
  std::vector<NestedRepeat> nested;  // repetition inside the template, by where it starts
  int fold_levels = 0;               // nested repetitions folded before the iteration's cycle was read
  bool by_anchor = false;            // step anchors (the optimizer step) picked the level
};

struct IterationMatch {
  int64_t first_op = 0;           // index into the sequence
  int64_t last_op = 0;            // inclusive; trailing extras included
  int32_t loop = 0;
  int64_t inner_extra_ops = 0;    // ops inside the match that are not in the cycle
  int64_t trailing_extra_ops = 0; // ops after the match, before the next iteration (eval, logging, ...)
  bool flagged() const { return inner_extra_ops > 0 || trailing_extra_ops > 0; }
};

struct MiningResult {
  std::vector<Loop> loops;                 // loops[0] is the dominant loop
  std::vector<IterationMatch> iterations;  // ordered by first_op
  int64_t ops = 0;                         // sequence length
  int64_t ops_before = 0;                  // before the first iteration (set-up)
  int64_t ops_after = 0;                   // after the last iteration (tear-down)
  int64_t ops_between = 0;                 // between iterations, too many to attach, in no loop
  bool detected = false;                   // count found without being given
  double confidence = 0;                   // share of ops inside iterations, times 1 - ambiguity
  std::string confidence_note;             // how the confidence was reached, alternatives seen
  std::string error;                       // set when nothing repeats; iterations empty
  int64_t sampled_ops = 0;                 // ops the dominant loop's pattern was mined from, when
                                           // sampled (0: the whole sequence)
};

// `gap_before_ns[j]`: idle time before op j (its start minus the latest end before it); may be
// empty (then the boundary is put at the start of the mined pattern). `op_time_ns[j]`: the time op j
// accounts for (its duration plus the gap before it); when given, a further loop must also cover
// `min_loop_time_share` of the total (set-up code repeats too, but briefly).
MiningResult mine_iterations(std::span<const int32_t> seq, std::span<const int64_t> gap_before_ns,
                             const MinerOptions& options, std::span<const int64_t> op_time_ns = {});

// Algorithm 1 (approximate matching), with two corrections to the published pseudo-code: a matched
// op is consumed, and ops before the cycle's first op are not counted against k0 (they stay between
// iterations). Returns (first, last, extras) triples.
struct ApproximateMatch {
  int64_t first = 0;
  int64_t last = 0;
  int64_t extra_ops = 0;
};
std::vector<ApproximateMatch> approximate_matches(std::span<const int32_t> seq, std::span<const int32_t> cycle,
                                                  int64_t max_extra_ops);

}  // namespace strata::analysis::iterations
