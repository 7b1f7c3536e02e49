// One decoded machine instruction, as the per-instruction view (`strata annotate`) needs it: where
// it is, its text, and how it moves control (what splits a function into basic blocks). Filled by a
// Disassembler (capstone) or, in tests, by hand.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace strata::annotate {

enum class Flow {
  kNext,          // falls through to the next instruction
  kJump,          // unconditional jump
  kConditional,   // conditional branch (or loop/jrcxz): target or next
  kIndirectJump,  // jump through a register or memory: targets unknown
  kCall,          // returns to the next instruction: does not end a block
  kReturn,
  kStop,  // ud2, hlt, int3: control does not go on
};

struct Instruction {
  uint64_t address = 0;  // link-time virtual address in the module
  uint32_t size = 0;
  std::string mnemonic;  // Intel syntax, as the disassembler prints it
  std::string operands;
  Flow flow = Flow::kNext;
  std::optional<uint64_t> target;  // direct jumps, branches and calls
  bool valid = true;               // false: bytes that did not decode (shown as "(bad)")
  std::string text() const { return operands.empty() ? mnemonic : mnemonic + " " + operands; }
};

// True when control may leave the instruction other than to the next one (a block ends after it).
inline bool ends_block(Flow flow) { return flow != Flow::kNext && flow != Flow::kCall; }

}  // namespace strata::annotate
