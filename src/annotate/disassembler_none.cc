// Built when capstone is missing: `strata annotate` says what to install instead of guessing.
#include "annotate/disassembler.h"

namespace strata::annotate {
namespace {

class MissingDisassembler : public Disassembler {
 public:
  bool disassemble(std::string_view, uint64_t, std::vector<Instruction>*, std::string* error) override {
    *error =
        "strata was built without capstone: apt-get install libcapstone-dev (scripts/setup.sh) and rebuild";
    return false;
  }
};

}  // namespace

std::unique_ptr<Disassembler> make_capstone_disassembler() { return std::make_unique<MissingDisassembler>(); }

}  // namespace strata::annotate
