// Static cycle estimates per basic block from llvm-mca (the modern form of DCPI's pipeline model),
// behind a small interface (CostModel) so the culprit logic is tested with fixed costs, and a
// parser of llvm-mca's summary view tested on recorded output.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "annotate/instruction.h"

namespace strata::annotate {

// llvm-mca's summary of one code region: the block repeated `iterations` times.
struct BlockCost {
  uint64_t iterations = 0;
  uint64_t total_cycles = 0;
  double block_rthroughput = 0;  // the block's reciprocal throughput (resource pressure only)
  // Cycles one pass of the block costs in steady state (latency chains included).
  double cycles_per_iteration() const {
    return iterations ? static_cast<double>(total_cycles) / static_cast<double>(iterations) : 0.0;
  }
};

// The summary views of llvm-mca's output, by region name ("" for an input without region markers).
// False with *error (one line) when no summary is found or a field does not read as a number.
bool parse_mca_output(std::string_view text, std::map<std::string, BlockCost>* regions, std::string* error);

// The assembly llvm-mca reads for the blocks: Intel syntax, one region per block named "b<index>";
// direct branch and call targets become a symbol (llvm-mca cannot take an absolute address), and
// undecodable bytes are left out.
std::string mca_input(std::span<const std::vector<Instruction>> blocks);
inline std::string mca_region_name(size_t block) { return "b" + std::to_string(block); }

class CostModel {
 public:
  virtual ~CostModel() = default;
  // One cost per block (nullopt where the model could not read the block). False with *error (one
  // line) when the model is unavailable altogether; *notes gets a line per block left without cost.
  virtual bool estimate(std::span<const std::vector<Instruction>> blocks,
                        std::vector<std::optional<BlockCost>>* costs, std::vector<std::string>* notes,
                        std::string* error) = 0;
  virtual std::string describe() const = 0;  // "llvm-mca-14 -mcpu=native"
};

struct LlvmMcaOptions {
  std::string program;  // "" : $STRATA_LLVM_MCA, else llvm-mca-14, else llvm-mca on PATH
  std::string mcpu = "native";
  int iterations = 100;
};
std::unique_ptr<CostModel> make_llvm_mca(LlvmMcaOptions options);

}  // namespace strata::annotate
