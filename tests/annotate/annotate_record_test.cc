// End to end: `strata record --sample=999` on a function with a pointer-chasing loop and a
// register-only loop of about the same static cost; `strata annotate` must rank the chasing loop's
// block as the top culprit. A missing function gives one error line.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../test_util.h"

namespace strata::testing {
namespace {

std::string bin(const std::string& name) { return std::string(STRATA_BINARY_DIR) + "/bin/" + name; }

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream s(line);
  std::string cell;
  while (std::getline(s, cell, sep)) out.push_back(cell);
  return out;
}

// The CSV of `render_tables`: "# name" lines, then a header and rows per table.
std::map<std::string, std::vector<std::map<std::string, std::string>>> read_tables(const std::string& csv) {
  std::map<std::string, std::vector<std::map<std::string, std::string>>> tables;
  std::stringstream in(csv);
  std::string line, name;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    if (line.rfind("# ", 0) == 0) {
      name = line.substr(2);
      header.clear();
      continue;
    }
    if (line.empty() || name.empty()) continue;
    if (header.empty()) {
      header = split(line, ',');
      continue;
    }
    const std::vector<std::string> cells =
        split(line, ',');  // no cell of these tables holds a comma but "instruction"
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    if (cells.size() > header.size() && !header.empty())  // the instruction text's commas
      for (size_t i = header.size(); i < cells.size(); ++i) row[header.back()] += "," + cells[i];
    tables[name].push_back(row);
  }
  return tables;
}

TEST(AnnotateRecord, PointerChasingBlockIsTheTopCulprit) {
  TempDir dir;
  const std::string trace = dir.file("chase.strata");
  std::string output;
  std::string cmd = bin("strata") + " record --quiet --sample=999 -o " + trace + " -- " + bin("strata_chase");
  ASSERT_EQ(run_command(cmd, &output), 0) << cmd << "\n" << output;
  const std::string csv = dir.file("annotate.csv");
  cmd = bin("strata") + " annotate " + trace + " chase_and_compute --format csv -o " + csv;
  ASSERT_EQ(run_command(cmd, &output), 0) << cmd << "\n" << output;
  const std::string notes = output;  // the notes, on stderr
  output = read_file(csv);
  auto tables = read_tables(output);
  ASSERT_TRUE(tables.count("annotate_blocks")) << output;
  ASSERT_TRUE(tables.count("annotate_instructions")) << output;
  uint64_t samples = 0;
  for (const auto& row : tables["annotate_blocks"]) samples += std::stoull(row.at("samples"));
  if (samples < 300) GTEST_SKIP() << "only " << samples << " samples in the function (a starved machine)";
  if (!tables["annotate_blocks"][0].count("static_cycles"))
    GTEST_SKIP() << "llvm-mca not installed:\n" << output;
  const auto& top = tables["annotate_blocks"][0];
  ASSERT_EQ(top.at("culprit"), "1") << output;
  // The top culprit's instructions: the chasing loop loads through memory; the arithmetic loop does not.
  std::string code;
  for (const auto& row : tables["annotate_instructions"])
    if (row.at("block") == top.at("block")) code += row.at("instruction") + "; ";
  EXPECT_NE(code.find("ptr ["), std::string::npos) << "top culprit block: " << code << "\n" << output;
  EXPECT_EQ(code.find("imul"), std::string::npos) << "top culprit block: " << code << "\n" << output;
  // The arithmetic loop (the block holding the imul) is no culprit above the chasing loop.
  for (const auto& block : tables["annotate_blocks"]) {
    std::string block_code;
    for (const auto& row : tables["annotate_instructions"])
      if (row.at("block") == block.at("block")) block_code += row.at("instruction") + "; ";
    if (block_code.find("imul") != std::string::npos) {
      EXPECT_NE(block.at("culprit"), "1") << output;
    }
  }
  // No PMU in this VM: the cache/branch columns are empty, not 0, and a line says so.
  if (notes.find("no hardware PMU events") != std::string::npos) {
    EXPECT_EQ(top.at("cache_misses"), "") << output;
  } else {
    EXPECT_FALSE(top.at("cache_misses").empty()) << notes;
  }
}

TEST(AnnotateRecord, MissingFunctionIsOneErrorLine) {
  TempDir dir;
  const std::string trace = dir.file("chase.strata");
  std::string output;
  std::string cmd = bin("strata") + " record --quiet --sample=999 -o " + trace + " -- " + bin("strata_chase");
  ASSERT_EQ(run_command(cmd, &output), 0) << cmd << "\n" << output;
  cmd = bin("strata") + " annotate " + trace + " no_such_function";
  EXPECT_EQ(run_command(cmd, &output), 1) << output;
  EXPECT_EQ(output.find('\n'), output.size() - 1) << output;
  EXPECT_NE(output.find("no_such_function"), std::string::npos) << output;
  EXPECT_NE(output.find("strata profile"), std::string::npos) << output;
}

}  // namespace
}  // namespace strata::testing
