#include "annotate/basic_blocks.h"

#include <algorithm>
#include <unordered_set>

namespace strata::annotate {

std::vector<BasicBlock> split_basic_blocks(std::span<const Instruction> instructions) {
  std::vector<BasicBlock> blocks;
  if (instructions.empty()) return blocks;
  const uint64_t begin = instructions.front().address;
  const uint64_t end = instructions.back().address + instructions.back().size;
  std::unordered_set<uint64_t> targets;
  for (const Instruction& ins : instructions)
    if (ins.target && ins.flow != Flow::kCall && *ins.target >= begin && *ins.target < end)
      targets.insert(*ins.target);
  // A target in the middle of an instruction (overlapping code, data decoded as code) starts no
  // block: the split stays on instruction boundaries.
  bool leader = true;
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& ins = instructions[i];
    if (leader || targets.count(ins.address)) {
      if (!blocks.empty()) {
        blocks.back().last = i;
        blocks.back().end = ins.address;
      }
      blocks.push_back(BasicBlock{i, i, ins.address, ins.address});
    }
    leader = ends_block(ins.flow);
  }
  blocks.back().last = instructions.size();
  blocks.back().end = end;
  return blocks;
}

size_t block_of(std::span<const BasicBlock> blocks, uint64_t address) {
  auto it = std::upper_bound(blocks.begin(), blocks.end(), address,
                             [](uint64_t a, const BasicBlock& b) { return a < b.start; });
  if (it == blocks.begin()) return blocks.size();
  --it;
  return address < it->end ? static_cast<size_t>(it - blocks.begin()) : blocks.size();
}

}  // namespace strata::annotate
