// Machine code -> instructions, behind a small interface so the block and culprit logic is tested
// with fixed instructions. The one implementation is capstone's x86-64 decoder (Intel syntax, the
// text llvm-mca reads); a build without capstone gets a disassembler that says how to install it.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "annotate/instruction.h"

namespace strata::annotate {

class Disassembler {
 public:
  virtual ~Disassembler() = default;
  // `bytes` start at link-time address `address`. Bytes that do not decode become one-byte
  // instructions marked invalid, so the rest is still read. False with *error (one line) when the
  // decoder itself is unavailable.
  virtual bool disassemble(std::string_view bytes, uint64_t address, std::vector<Instruction>* out,
                           std::string* error) = 0;
};

// capstone, x86-64 (the only architecture Strata samples today).
std::unique_ptr<Disassembler> make_capstone_disassembler();

}  // namespace strata::annotate
