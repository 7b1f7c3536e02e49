// The analysis pipeline's contract. An analysis reads a loaded trace (and its span tree) and fills
// tables; it never knows which tracer produced a span. Rendering (table/CSV/JSON) lives in
// export/, so every analysis gets every output format and golden tests compare CSV.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/level.h"
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
  // Keys looked up through the getters since the last clear: the tests check that every key an
  // analysis reads is among those it declares (analysis_param_keys).
  const std::set<std::string, std::less<>>& keys_read() const { return read_; }
  void clear_keys_read() const { read_.clear(); }

 private:
  std::map<std::string, std::string, std::less<>> values_;
  mutable std::set<std::string, std::less<>> read_;
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
  // On a --leveled trace (runs of one command, each traced down to a different level), the level
  // this analysis times: it reads the runs where that level was the deepest traced (XSP III-C), so
  // its numbers carry no cost of tracing deeper levels. nullopt: the runs traced deepest.
  virtual std::optional<Level> timed_level(const Params&) const { return std::nullopt; }
  // The --param keys this analysis reads. Built-in analyses keep theirs in registry.cc's table (one
  // line each); an analysis registered from a module above analysis (lowerbound) declares its own.
  virtual std::span<const std::string_view> param_keys() const;
};

// Registry. Analyses register from their own .cc files through register_builtin_analyses()
// (analysis/registry.cc lists them: one line each).
const std::vector<std::unique_ptr<Analysis>>& all_analyses();
const Analysis* find_analysis(std::string_view name);
// The --param keys the registered analysis NAME reads (its param_keys()); empty for an unknown name.
std::span<const std::string_view> analysis_param_keys(std::string_view name);

}  // namespace strata::analysis
