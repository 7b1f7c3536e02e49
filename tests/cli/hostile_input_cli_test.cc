// Hostile inputs through the `strata` tool (issue 13.10 and 13.11): named pipes, devices,
// directories, a gzip bomb and crafted traces. Every run is a child under an address-space limit
// and a time limit, so a regression fails (killed, or out of memory) instead of hanging the suite
// or taking the machine's memory.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "limited_run.h"

namespace strata {
namespace {

using testing::expect_one_line_refusal;
using testing::kMiB;
using testing::LimitedRun;
using testing::run_limited;
using testing::TempDir;

std::string corpus(const std::string& name) {
  return std::string(STRATA_SOURCE_DIR) + "/fuzz/corpus/trace_reader_fuzz/" + name;
}

TEST(HostileCli, NamedPipeIsRefusedByEveryCommandWithoutBlocking) {
  TempDir dir;
  const std::string fifo = dir.file("input");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::vector<std::string>> commands = {{"info", fifo},
                                                          {"analyze", fifo},
                                                          {"export", fifo},
                                                          {"iterations", fifo},
                                                          {"import", fifo, "-o", dir.file("out.strata")},
                                                          {"model", fifo},
                                                          {"lowerbound", fifo},
                                                          {"bench", "generate", fifo, "-o", dir.file("gen")}};
  for (const auto& args : commands) {
    LimitedRun r = run_limited(args, 1024 * kMiB, 10);
    expect_one_line_refusal(r, args[0], "not a regular file (a named pipe (FIFO))");
  }
}

TEST(HostileCli, DevZeroIsRefusedNotReadUntilMemoryRunsOut) {
  // `strata model /dev/zero` used to read 8 GB before failing.
  TempDir dir;
  for (std::string command : {"model", "info", "analyze", "import"}) {
    std::vector<std::string> args{command, "/dev/zero"};
    if (command == "import") args.insert(args.end(), {"-o", dir.file("z.strata")});
    LimitedRun r = run_limited(args, 512 * kMiB, 20);
    expect_one_line_refusal(r, command, "not a regular file (a character device)");
  }
}

TEST(HostileCli, ADirectoryIsNamedAsOneWhereAFileIsNeeded) {
  // `strata model DIR` used to say "no graph nodes".
  TempDir dir;
  for (std::string command : {"model", "import"}) {
    LimitedRun r = run_limited({command, dir.path()}, 1024 * kMiB, 20);
    expect_one_line_refusal(r, command, dir.path() + ": is a directory, not a file");
  }
}

// gzip members may be concatenated (gzip a b > c), and the importer reads them all: 1 GiB of JSON
// whitespace from about a megabyte of file, built from one compressed MiB repeated.
std::string gzip_member(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string gzip_bomb() {
  const std::string spaces = gzip_member(std::string(kMiB, ' '));
  std::string file = gzip_member("{\"traceEvents\": [");
  for (int i = 0; i < 1024; ++i) file += spaces;
  return file + gzip_member("]}");
}

TEST(HostileCli, GzipBombStopsAtTheRatioLimitWithTheRemedy) {
  // A gzip'd trace that expanded to 7.6 GB of RSS before failing as invalid JSON.
  TempDir dir;
  const std::string bomb = dir.file("bomb.json.gz");
  testing::write_file(bomb, gzip_bomb());
  ASSERT_LT(testing::read_file(bomb).size(), 2 * kMiB);
  LimitedRun import = run_limited({"import", bomb, "-o", dir.file("b.strata")}, 768 * kMiB, 60);
  expect_one_line_refusal(import, "import", "expands more than 128x");
  EXPECT_NE(import.err.find("STRATA_MAX_INFLATE_RATIO=N"), std::string::npos) << import.err;
  LimitedRun analyze = run_limited({"analyze", bomb}, 768 * kMiB, 60);
  expect_one_line_refusal(analyze, "analyze", "expands more than 128x");
  // The absolute limit, once the ratio is raised: named, with its variable.
  LimitedRun capped = run_limited({"import", bomb, "-o", dir.file("c.strata")}, 768 * kMiB, 60,
                                  {"STRATA_MAX_INFLATE_RATIO=100000", "STRATA_MAX_INFLATE_MB=100"});
  expect_one_line_refusal(capped, "import (ratio raised)", "more than 100 MiB, the limit");
  EXPECT_NE(capped.err.find("STRATA_MAX_INFLATE_MB=N"), std::string::npos) << capped.err;
}

TEST(HostileCli, StringIdBombLoadsInLittleMemory) {
  // 392 bytes that made `strata info` allocate 8.2 GB (info streams now); analyze, export and
  // iterations load the trace.
  for (std::string command : {"info", "analyze", "export", "iterations"}) {
    LimitedRun r = run_limited({command, corpus("string_id_bomb_8_streams.strata")}, 512 * kMiB, 60);
    EXPECT_EQ(r.signal, 0) << command << ": " << r.err;
    EXPECT_NE(r.exit_code, -1) << command;
    EXPECT_EQ(r.err.find("bad_alloc"), std::string::npos) << command << ": " << r.err;
  }
}

TEST(HostileCli, NegativeDropCountIsNotPrintedAsAHugeNumber) {
  LimitedRun r = run_limited({"info", corpus("stats_negative_drop_count.strata")}, 512 * kMiB, 30);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("1844674407370955"), std::string::npos) << r.out;
  // A cause the stats registry does not know is shown by its on-disk key.
  EXPECT_NE(r.out.find("lost events: 12 (dropped.x 12)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("is not an event count"), std::string::npos) << r.out;
}

TEST(HostileCli, TimesAtTheInt64LimitsPrintAndExportWithoutOverflow) {
  const std::string trace = corpus("extreme_times.strata");
  LimitedRun info = run_limited({"info", trace}, 512 * kMiB, 30);
  ASSERT_EQ(info.exit_code, 0) << info.err;
  auto range = info.out.find("span time range ");
  ASSERT_NE(range, std::string::npos) << info.out;
  EXPECT_NE(info.out[range + 16], '-') << info.out;  // a range is never negative
  LimitedRun csv = run_limited({"export", "--format", "csv", trace}, 512 * kMiB, 30);
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::istringstream lines(csv.out);
  std::string line;
  auto split = [](const std::string& text) {
    std::vector<std::string> cells;
    std::stringstream row(text);
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    return cells;
  };
  std::getline(lines, line);  // header: ...,start_ns,end_ns,duration_ns,... (columns found by name)
  const std::vector<std::string> header = split(line);
  auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const size_t start_at = column("start_ns"), end_at = column("end_ns"), duration_at = column("duration_ns");
  ASSERT_LT(duration_at, header.size()) << line;
  int rows = 0;
  while (std::getline(lines, line)) {
    const std::vector<std::string> cells = split(line);
    ASSERT_GT(cells.size(), std::max({start_at, end_at, duration_at})) << line;
    const __int128 start = std::stoll(cells[start_at]), end = std::stoll(cells[end_at]),
                   duration = std::stoll(cells[duration_at]);
    EXPECT_EQ(duration, end - start) << line;
    EXPECT_LE(end, __int128{1} << 62) << line;
    EXPECT_GE(start, -(__int128{1} << 62)) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 3);
}

}  // namespace
}  // namespace strata
