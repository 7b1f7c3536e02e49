// The Nsight Systems SQLite reader on arbitrary bytes (fuzz/import/nsys_fuzzer.cc; replayed by
// tests/fuzz/fuzz_corpus_test from fuzz/corpus/fuzz_import_nsys/).
#pragma once

#include <string_view>

namespace strata::fuzz {

// Writes the bytes to a private temporary file (SQLite reads files, not buffers), imports it with
// the nsys reader and checks the invariants every loaded trace keeps; a failure must be one line.
void run_nsys_import(std::string_view bytes);

}  // namespace strata::fuzz
