// What the importer fuzzers run on one input, shared with the gtest that replays their corpora
// (tests/fuzz): a crash, a sanitizer report or a broken invariant (abort) is a bug in the importers.
#pragma once

#include <string_view>

namespace strata::fuzz {

// Any bytes through one importer (`format`: kineto, onnxruntime, tensorflow or auto, which also
// takes gzip), then the correlation engine over the result. A failure must be one error line.
void run_import(std::string_view bytes, const char* format);

// Any bytes through the Nsight Compute CSV parser, the spans made from it, and the join of its
// metrics into a small trace of kernels. A failure must be one error line; joined counts add up.
void run_ncu_csv(std::string_view bytes);

}  // namespace strata::fuzz
