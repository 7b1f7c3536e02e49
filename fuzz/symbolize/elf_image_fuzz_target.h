// What the ELF image fuzzer runs on one input, shared with the gtest that replays its corpus
// (tests/fuzz): a crash, a sanitizer report or a broken invariant (trap) is a bug.
#pragma once

#include <string_view>

namespace strata::fuzz {

// The input is an ELF file: it is opened from memory, its symbols and its unwind tables' function
// ranges read, and addresses throughout its loaded segments looked up in those ranges. The ranges
// must be sorted, no more than the table's count, and a lookup must return a range holding the
// address.
void run_elf_image(std::string_view bytes);

}  // namespace strata::fuzz
