// The analysis pipeline's contract. An analysis reads a loaded trace (and its span tree) and fills
// tables; it never knows which tracer produced a span. Rendering (table/CSV/JSON) lives in
// export/, so every analysis gets every output format and golden tests compare CSV.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/span_tree.h"
#include "model/trace.h"
#include "table/table.h"

namespace strata::analysis {

// The table types live in table/ (below analysis, so export and lowerbound need not include the
// pipeline); these names keep every analysis's spelling.
using Cell = table::Cell;
using Table = table::Table;
using AnalysisResult = table::Result;

// Options from the command line (--param key=value), with typed getters and defaults.
class Params {
 public:
  void set(std::string key, std::string value) { values_[std::move(key)] = std::move(value); }
  std::string get(std::string_view key, std::string_view fallback) const;
  double get_double(std::string_view key, double fallback) const;
  int64_t get_int(std::string_view key, int64_t fallback) const;
  const std::map<std::string, std::string, std::less<>>& all() const { return values_; }

 private:
  std::map<std::string, std::string, std::less<>> values_;
};

class Workload;  // analysis/workload.h: evaluations, layers and kernels extracted once per run

struct AnalysisInput {
  const model::Trace& trace;
  const model::SpanTree& tree;
  const Params& params;
  // Shared by all analyses of one run; when null each analysis builds its own (tests do this).
  const Workload* workload = nullptr;
};

class Analysis {
 public:
  virtual ~Analysis() = default;
  virtual std::string_view name() const = 0;         // used with --analysis NAME
  virtual std::string_view description() const = 0;  // one line for --list
  virtual AnalysisResult run(const AnalysisInput& input) const = 0;
};

// Registry. Analyses register from their own .cc files through register_builtin_analyses()
// (analysis/registry.cc lists them: one line each).
const std::vector<std::unique_ptr<Analysis>>& all_analyses();
const Analysis* find_analysis(std::string_view name);

}  // namespace strata::analysis
