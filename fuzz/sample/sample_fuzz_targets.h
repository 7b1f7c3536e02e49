// What the sampling fuzzers run on one input, shared with the gtest that replays their corpora
// (tests/fuzz): a crash, a sanitizer report or a broken invariant (trap) is a bug.
#pragma once

#include <string_view>

namespace strata::fuzz {

// The sample chunk reader: the input is a sequence of chunks, each [u8 type selector][u16 length]
// [payload], handed in order to the loader of sample chunks (definitions, then the counts and
// timelines that use them, as a stream has them) from two interleaved streams (selector bit 7).
// Every decoder must reject damage with a message; stacks must stay within the frame table.
void run_sample_chunks(std::string_view bytes);

// The unwinder's input: a sample's registers (24 x u64, perf_event's order), a u32 steering word,
// then the stack copy. The instruction pointer is steered into this process's real code and the
// stack and frame pointers into the copy, so the CFI interpreter and the frame-pointer walk run on
// real unwind tables with hostile stacks.
void run_sample_unwind(std::string_view bytes);

}  // namespace strata::fuzz
