// What the native-trace fuzzers run on one input, shared with the gtest that replays their corpora
// (tests/fuzz): a crash, a sanitizer report or a broken invariant (abort) is a bug in the readers.
#pragma once

#include <string>
#include <string_view>

namespace strata::fuzz {

// Arbitrary bytes through the chunk reader, the loader and the streamed summary.
void run_trace_reader(std::string_view bytes);

// The bytes read as a trace file whose framing is repaired first (fix_up_chunks), so mutations get
// past the checksums and reach the payload decoders; then loaded, summarized, linked into a span
// tree and exported. The loader and the streamed summary must agree on what they counted.
void run_trace_chunks(std::string_view bytes);

// A valid file header, then the input's chunks from offset 32 on, each with its magic, sizes and
// checksums made right: stored_size is cut to what follows, an uncompressed chunk's raw_size set to
// it, and a chunk flagged zstd has its bytes compressed (so the reader decompresses them back).
std::string fix_up_chunks(std::string_view bytes);

}  // namespace strata::fuzz
