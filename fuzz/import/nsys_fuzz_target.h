// The Nsight Systems SQLite reader on arbitrary bytes (fuzz/import/nsys_fuzzer.cc) and on databases
// built by arbitrary SQL (fuzz/import/nsys_sql_fuzzer.cc); replayed by tests/fuzz/fuzz_corpus_test
// from fuzz/corpus/fuzz_import_nsys/ and fuzz/corpus/fuzz_import_nsys_sql/.
#pragma once

#include <string_view>

namespace strata::fuzz {

// Writes the bytes to a private temporary file (SQLite reads files, not buffers), imports it with
// the nsys reader and checks the invariants every loaded trace keeps; a failure must be one line.
void run_nsys_import(std::string_view bytes);

// Builds a database from a small valid export (StringIds, a kernel, a runtime call, NVTX ranges) and
// then `sql`, the fuzzer's statements (views, triggers, recursive queries, huge strings, a
// malformed schema through writable_schema), each run until it fails or its budget is spent; then
// imports it as run_nsys_import does, under a small step budget, and checks the same invariants plus
// a bounded read: never more spans than the file has bytes.
void run_nsys_sql(std::string_view sql);

}  // namespace strata::fuzz
