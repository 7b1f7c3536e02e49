// Basic blocks of one function's instructions. Leaders: the entry, every direct jump or branch
// target inside the function, and the instruction after a jump, branch, return or trap. A call
// does not end a block (control comes back to the next instruction), as in DCPI's blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "annotate/instruction.h"

namespace strata::annotate {

struct BasicBlock {
  size_t first = 0, last = 0;   // instruction indices [first, last)
  uint64_t start = 0, end = 0;  // addresses [start, end)
};

// `instructions`: in address order, contiguous. Targets outside [function start, end) (tail calls,
// jumps into other functions) make no leader. Every instruction lands in exactly one block.
std::vector<BasicBlock> split_basic_blocks(std::span<const Instruction> instructions);

// The block holding `address` (index), or blocks.size() when none does.
size_t block_of(std::span<const BasicBlock> blocks, uint64_t address);

}  // namespace strata::annotate
