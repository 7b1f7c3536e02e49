// The analysis pipeline's contract. An analysis reads a loaded trace (and its span tree) and fills
// tables; it never knows which tracer produced a span. Rendering (table/CSV/JSON) lives in
// export/, so every analysis gets every output format and golden tests compare CSV.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/level.h"
#include "table/table.h"
#include "trace/span_tree.h"
#include "trace/trace.h"

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
  const trace::Trace& trace;
  const trace::SpanTree& tree;
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
  // The --param keys this analysis reads. The analyses of this module and of iterations/ keep theirs
  // in registry.cc's table (one line each); one registered from a module above analysis (lowerbound)
  // declares its own.
  virtual std::span<const std::string_view> param_keys() const;
};

// Registry. Each analysis registers itself next to its factory, in its own .cc file:
//   STRATA_REGISTER_ANALYSIS(make_layer_table, 300);
// The order key places it in all_analyses(), which is the order of `strata analyze --list`, the
// report and the help text: keys are unique, ascending in that order, spaced by 100 so that a new
// analysis goes between two others without renumbering (tests/analysis/registry_test.cc records
// the order). Nothing calls a registering object file by name, so its library is linked whole
// (strata_registering_library in cmake/strata_registering_library.cmake); a program that needs every
// analysis links strata_all_analyses.
using AnalysisFactory = std::unique_ptr<Analysis> (*)();
struct AnalysisRegistration {
  int order = 0;  // position in all_analyses(), ascending
  AnalysisFactory make = nullptr;
  const char* file = "";  // the registering source file, named in registry errors
};
// Called by STRATA_REGISTER_ANALYSIS during static initialization; returns true (it initializes a
// constant). Registering after all_analyses() was first read is a programming error: it aborts.
bool register_analysis(const AnalysisRegistration& registration);
#define STRATA_REGISTER_ANALYSIS(FACTORY, ORDER)                   \
  [[maybe_unused]] static const bool strata_registered_##FACTORY = \
      ::strata::analysis::register_analysis({(ORDER), &(FACTORY), __FILE__})

// Every analysis in registry order. Two registrations with the same name or order key abort with
// one line naming both files (registry_problems says what).
const std::vector<std::unique_ptr<Analysis>>& all_analyses();
const Analysis* find_analysis(std::string_view name);

// What the registry holds, for its tests: order key, name and registering file, in registry order.
struct RegisteredAnalysis {
  int order = 0;
  std::string name;
  std::string file;
};
std::vector<RegisteredAnalysis> registered_analyses();
// One line per collision in REGISTERED (in registry order): a name or an order key used twice.
std::vector<std::string> registry_problems(std::span<const RegisteredAnalysis> registered);
// The --param keys the registered analysis NAME reads (its param_keys()); empty for an unknown name.
std::span<const std::string_view> analysis_param_keys(std::string_view name);

}  // namespace strata::analysis
