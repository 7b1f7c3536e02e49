// The per-instruction view of one function (`strata annotate`, DCPI's dcpicalc): its instructions
// with their samples, grouped into basic blocks; per block a static cycle estimate C (CostModel,
// llvm-mca) and the estimated execution frequency F = S / C (samples per static cycle); blocks whose
// samples far exceed their static cost are ranked as dynamic-stall culprits.
//
// DCPI estimates a block's frequency from the instructions that issue with the least stall, and
// compares blocks within one frequency-equivalence class. Without edge counts this view takes the
// least-stalled block's F (the smallest F among blocks with enough samples) as the reference F0:
// a block's expected samples are F0 * C, its excess S - F0 * C is time the pipeline model does not
// explain (cache misses, branch misses, ...), and its stall ratio is F / F0. The comparison is fair
// between blocks that run about equally often (the loops of one function); a block run far more
// often than the reference also shows a high ratio. The ranking reads the excess, not the ratio, so
// a cold block with a few samples does not outrank a hot one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "annotate/basic_blocks.h"
#include "annotate/disassembler.h"
#include "annotate/mca.h"
#include "table/table.h"

namespace strata::annotate {

// What the annotation reads: the function's bytes and the samples whose leaf PC lies in it.
struct FunctionSamples {
  std::string function;     // as symbolized
  std::string module_path;  // the mapped file the bytes come from
  uint64_t address = 0;     // link-time address of the first byte
  std::string bytes;
  // Event names, index = event ("task-clock" first: CPU time); the PMU's "cache-misses" and
  // "branch-misses" when it had them.
  std::vector<std::string> events;
  std::map<uint64_t, std::vector<uint64_t>> samples;  // leaf address -> count per event
  std::vector<std::string> notes;                     // from the lookup (other modules, ...)
};

struct AnnotateOptions {
  double culprit_ratio = 2.0;  // a culprit's F must be at least this multiple of F0
  double min_share = 0.02;     // blocks with fewer samples (share of the function) never set F0
  uint64_t min_samples = 5;    // ... nor with fewer than this many samples
};

struct BlockRow {
  size_t block = 0;
  uint64_t start = 0, end = 0;
  size_t instructions = 0;
  uint64_t samples = 0;                                 // the time event
  std::optional<double> cycles;                         // static cycles per pass (llvm-mca)
  std::optional<double> frequency;                      // F = S / C
  std::optional<double> excess;                         // S - F0 * C
  std::optional<double> stall_ratio;                    // F / F0
  std::optional<uint64_t> cache_misses, branch_misses;  // absent without a PMU
  size_t culprit_rank = 0;                              // 1 = top culprit, 0 = not a culprit
};

struct Annotation {
  std::string function, module_path;
  uint64_t address = 0, size = 0;
  std::vector<Instruction> instructions;
  std::vector<uint64_t> instruction_samples;  // per instruction, the time event
  std::vector<BasicBlock> blocks;
  std::vector<BlockRow> rows;                 // one per block, in address order
  std::optional<double> reference_frequency;  // F0
  bool have_costs = false, have_cache_misses = false, have_branch_misses = false;
  uint64_t samples = 0;               // in the function, time event
  uint64_t samples_off_boundary = 0;  // leaf PCs inside an instruction (not on its first byte)
  std::string cost_model;             // what estimated the cycles ("" when none)
  double culprit_ratio = 2.0;         // AnnotateOptions::culprit_ratio, for the notes
  std::vector<std::string> notes;
};

// Disassembles, splits, attributes samples, asks `costs` (may be null: no cycle columns) for the
// blocks' cycles and ranks the culprits. False with *error (one line) when nothing can be shown.
bool annotate_function(const FunctionSamples& input, Disassembler& disassembler, CostModel* costs,
                       const AnnotateOptions& options, Annotation* out, std::string* error);

// F, F0, excess, stall ratio and culprit ranks of rows whose samples and cycles are set.
void rank_culprits(std::vector<BlockRow>* rows, const AnnotateOptions& options,
                   std::optional<double>* reference);

// Two tables: "annotate_blocks" (one row per block, culprits first) and "annotate_instructions".
std::vector<table::Table> annotation_tables(const Annotation& annotation);

}  // namespace strata::annotate
