// Result tables: what analyses, the lower-bound analyzer and the model processor produce and what
// export/ renders (text, CSV, JSON). Below analysis so that producers and renderers of tables need
// not depend on the analysis pipeline; depends on nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace strata::table {

// A table cell: text, integer or real (reals carry their display precision).
struct Cell {
  std::variant<std::monostate, std::string, int64_t, double> value;
  int precision = 3;
  static Cell text(std::string s) { return Cell{std::move(s), 3}; }
  static Cell integer(int64_t v) { return Cell{v, 0}; }
  static Cell real(double v, int precision = 3) { return Cell{v, precision}; }
  static Cell empty() { return Cell{}; }
};

struct Table {
  std::string name;   // machine name, e.g. "layer_table" (file names, JSON keys)
  std::string title;  // human title
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
  std::vector<std::string> notes;  // printed under the table
};

// What one producer (an analysis, a lower-bound comparison) returns.
struct Result {
  std::vector<Table> tables;
  // Set when the input lacks what the producer needs: says what to record or pass, e.g.
  // "no device activity in the trace: record with --level device or import a Kineto GPU trace".
  std::optional<std::string> missing_input;
};

}  // namespace strata::table
