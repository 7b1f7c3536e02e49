// capstone 4 (Debian libcapstone-dev): detail mode for the instruction groups and branch targets.
#include <capstone/capstone.h>

#include "annotate/disassembler.h"

namespace strata::annotate {
namespace {

bool in_group(const cs_insn& insn, uint8_t group) {
  for (uint8_t i = 0; i < insn.detail->groups_count; ++i)
    if (insn.detail->groups[i] == group) return true;
  return false;
}

// The direct target of a relative jump, branch or call (its one immediate operand).
std::optional<uint64_t> direct_target(const cs_insn& insn) {
  const cs_x86& x86 = insn.detail->x86;
  if (x86.op_count == 1 && x86.operands[0].type == X86_OP_IMM)
    return static_cast<uint64_t>(x86.operands[0].imm);
  return std::nullopt;
}

Flow flow_of(const cs_insn& insn) {
  if (in_group(insn, CS_GRP_RET) || in_group(insn, CS_GRP_IRET)) return Flow::kReturn;
  if (in_group(insn, CS_GRP_CALL)) return Flow::kCall;
  if (in_group(insn, CS_GRP_JUMP)) {
    const bool direct = direct_target(insn).has_value();
    if (insn.id == X86_INS_JMP || insn.id == X86_INS_LJMP) return direct ? Flow::kJump : Flow::kIndirectJump;
    return direct ? Flow::kConditional : Flow::kIndirectJump;
  }
  if (insn.id == X86_INS_UD2 || insn.id == X86_INS_HLT || insn.id == X86_INS_INT3) return Flow::kStop;
  return Flow::kNext;
}

class CapstoneDisassembler : public Disassembler {
 public:
  ~CapstoneDisassembler() override {
    if (open_) cs_close(&handle_);
  }
  bool disassemble(std::string_view bytes, uint64_t address, std::vector<Instruction>* out,
                   std::string* error) override {
    if (!open_) {
      if (cs_open(CS_ARCH_X86, CS_MODE_64, &handle_) != CS_ERR_OK) {
        *error = "capstone: cannot open the x86-64 decoder";
        return false;
      }
      open_ = true;
      cs_option(handle_, CS_OPT_DETAIL, CS_OPT_ON);
    }
    const auto* code = reinterpret_cast<const uint8_t*>(bytes.data());
    size_t left = bytes.size();
    uint64_t at = address;
    cs_insn* insn = cs_malloc(handle_);
    while (left > 0) {
      if (!cs_disasm_iter(handle_, &code, &left, &at, insn)) {
        // Not an instruction (padding, data in code): one byte marked invalid, then go on.
        Instruction bad;
        bad.address = at;
        bad.size = 1;
        bad.mnemonic = "(bad)";
        bad.valid = false;
        bad.flow = Flow::kStop;
        out->push_back(std::move(bad));
        ++code;
        --left;
        ++at;
        continue;
      }
      Instruction ins;
      ins.address = insn->address;
      ins.size = insn->size;
      ins.mnemonic = insn->mnemonic;
      ins.operands = insn->op_str;
      ins.flow = flow_of(*insn);
      if (ins.flow == Flow::kJump || ins.flow == Flow::kConditional || ins.flow == Flow::kCall)
        ins.target = direct_target(*insn);
      out->push_back(std::move(ins));
    }
    cs_free(insn, 1);
    return true;
  }

 private:
  csh handle_ = 0;
  bool open_ = false;
};

}  // namespace

std::unique_ptr<Disassembler> make_capstone_disassembler() {
  return std::make_unique<CapstoneDisassembler>();
}

}  // namespace strata::annotate
