// `strata bench generate`: writes standalone C++ benchmark sources (Google Benchmark) plus a
// CMakeLists.txt for the unique layers of a set of models, so they can be built on any machine.
// The generated code calls the same onednn_ops.h / cuda_ops.h (and the cuda_*.h it includes) that
// `strata bench run` uses.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lowerbound/harness/bench_plan.h"
#include "lowerbound/ir/layer_ir.h"

namespace strata::lowerbound {

struct GenerateStats {
  uint64_t benchmarks = 0;  // (layer, algorithm, dtype, layout) cases written
  uint64_t unmapped = 0;    // layers without a library-call mapping (listed in `warnings`)
  std::vector<std::string> files;
  std::vector<std::string> warnings;
};

// Writes one generated file, `name` in the output directory; false with *error (one line). The CLI
// writes through its checked output directory (cli/safe_files.h); stats->files gets what it names.
using GeneratedFileWriter =
    std::function<bool(const std::string& name, std::string_view text, std::string* error)>;
bool generate_benchmarks(const std::vector<LayerModel>& models, const BenchOptions& options,
                         const GeneratedFileWriter& write, GenerateStats* stats, std::string* error);
// The same into `out_dir` (created if missing), each file created or truncated without following a
// link at its name.
bool generate_benchmarks(const std::vector<LayerModel>& models, const BenchOptions& options,
                         const std::string& out_dir, GenerateStats* stats, std::string* error);

// A C++ string literal holding `s` exactly: quotes, backslashes and '?' escaped, and every control
// character (newline, CR, tab, ESC, DEL, NUL, ...) written as an escape, so a layer name from any
// ONNX file compiles (issue 13.12: a CR in a name broke the generated source).
std::string cpp_string_literal(const std::string& s);

// The harness's header-only sources, embedded at build time (embedded_sources.cc.in).
struct EmbeddedFile {
  std::string_view name;
  std::string_view text;
};

// C++ initializer text of one case (used by the generator; exposed for tests).
std::string case_initializer(const BenchCase& c);

}  // namespace strata::lowerbound
