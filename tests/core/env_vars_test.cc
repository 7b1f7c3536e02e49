// The environment-variable table (core/env_vars.h) against its documentation (docs/environment.md):
// the doc's table must list exactly the code's variables, with the same default, readers and
// meaning, and each name once.
#include "core/env_vars.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace strata {
namespace {

struct DocRow {
  std::string default_value, read_by, meaning;
  int line = 0;
};

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(' ');
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(' ') - begin + 1);
}

// The cells of a Markdown table row "| a | b | c |".
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|') {
      out.push_back(trim(cell));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return out;
}

// The rows of the table under the header "| Variable | Default | Read by | Meaning |", by name;
// a name listed twice is reported in `duplicates`.
std::map<std::string, DocRow> doc_table(const std::string& path, std::vector<std::string>* duplicates,
                                        std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = path + ": cannot be read";
    return {};
  }
  std::map<std::string, DocRow> rows;
  std::string line;
  int number = 0;
  bool in_table = false;
  while (std::getline(in, line)) {
    ++number;
    if (!in_table) {
      in_table = line.rfind("| Variable | Default | Read by | Meaning |", 0) == 0;
      continue;
    }
    if (line.rfind("|---", 0) == 0) continue;
    if (line.empty() || line[0] != '|') break;
    const std::vector<std::string> c = cells(line);
    if (c.size() != 4 || c[0].size() < 3 || c[0].front() != '`' || c[0].back() != '`') {
      *error = path + ":" + std::to_string(number) + ": not a row `NAME` | default | read by | meaning |";
      return {};
    }
    const std::string name = c[0].substr(1, c[0].size() - 2);
    if (!rows.emplace(name, DocRow{c[1], c[2], c[3], number}).second) duplicates->push_back(name);
  }
  if (!in_table) *error = path + ": no table headed | Variable | Default | Read by | Meaning |";
  return rows;
}

TEST(EnvVars, NamesAreUniqueAndEachEntryComplete) {
  const std::regex name_form("STRATA_[A-Z0-9_]+");
  const std::set<std::string> readers{"collector", "tool", "Python"};
  std::set<std::string_view> seen;
  ASSERT_GT(std::size(env::kAll), 40u);
  for (const env::EnvVar& var : env::kAll) {
    SCOPED_TRACE(std::string(var.name));
    EXPECT_TRUE(std::regex_match(std::string(var.name), name_form));
    EXPECT_TRUE(seen.insert(var.name).second) << "declared twice";
    EXPECT_FALSE(var.default_value.empty());
    ASSERT_FALSE(var.meaning.empty());
    EXPECT_EQ(var.meaning.back(), '.') << "the meaning is one sentence";
    EXPECT_EQ(var.meaning.find('|'), std::string_view::npos) << "a | would split the doc's table cell";
    std::stringstream list{std::string(var.read_by)};
    std::string reader;
    int count = 0;
    while (std::getline(list, reader, ',')) {
      EXPECT_EQ(readers.count(trim(reader)), 1u)
          << "reader '" << reader << "' is not collector, tool or Python";
      ++count;
    }
    EXPECT_GT(count, 0);
  }
}

TEST(EnvVars, ConstantsAreTheTableNames) {
  // The constants the code uses and the table's rows come from one list; spot-check the pairing.
  EXPECT_EQ(std::string_view(env::kOutput), "STRATA_OUTPUT");
  EXPECT_EQ(std::string_view(env::kSample), "STRATA_SAMPLE");
  EXPECT_EQ(std::string_view(env::kMaxSqliteSteps), "STRATA_MAX_SQLITE_STEPS");
  EXPECT_EQ(env::kAll[0].name, env::kOutput);
}

TEST(EnvVars, DocumentationTableIsTheCodeTable) {
  const std::string path = std::string(STRATA_SOURCE_DIR) + "/docs/environment.md";
  std::vector<std::string> duplicates;
  std::string error;
  const std::map<std::string, DocRow> doc = doc_table(path, &duplicates, &error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_TRUE(duplicates.empty()) << "listed twice in docs/environment.md: " << duplicates.front();
  std::set<std::string> in_code;
  for (const env::EnvVar& var : env::kAll) {
    const std::string name(var.name);
    in_code.insert(name);
    auto it = doc.find(name);
    if (it == doc.end()) {
      ADD_FAILURE() << name << " is in core/env_vars.h but not in docs/environment.md "
                    << "(scripts/check_env_vars.py . --doc-table prints the table)";
      continue;
    }
    const DocRow& row = it->second;
    EXPECT_EQ(row.default_value, var.default_value)
        << name << ": default differs (docs/environment.md:" << row.line << ")";
    EXPECT_EQ(row.read_by, var.read_by)
        << name << ": readers differ (docs/environment.md:" << row.line << ")";
    EXPECT_EQ(row.meaning, var.meaning)
        << name << ": meaning differs (docs/environment.md:" << row.line << ")";
  }
  for (const auto& [name, row] : doc)
    EXPECT_EQ(in_code.count(name), 1u)
        << name << " (docs/environment.md:" << row.line << ") is not declared in core/env_vars.h";
}

}  // namespace
}  // namespace strata
