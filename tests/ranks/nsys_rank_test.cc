// nsys MPI rank hints: the real MPI export (rank 0 of a SAXPY under `nsys profile --trace=mpi`, its
// thread named "MPI Rank 0", host nid001608) gives every process rank 0 and the host, as Kineto's
// distributedInfo would; an export without MPI gives none; a copy naming threads of two ranks in one
// report gives none and says why; a copy renamed to rank 5 gives 5 (the rank is read, not assumed).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "import/importer.h"
#include "trace/rank_align.h"
#include "trace/trace.h"
#include "trace/trace_reader.h"

namespace strata {
namespace {

std::string data_path(const char* file) {
  return std::string(STRATA_SOURCE_DIR) + "/tests/data/nsys/" + file;
}
constexpr const char* kMpi = "a100_saxpy_mpi_nsys2022.2_schema2.9.1.sqlite";

bool open(const std::string& path, trace::Trace* t, std::string* error) {
  import::register_readers();
  return trace::open_trace(path, t, error);
}

TEST(NsysRankHints, MpiThreadNameGivesTheRankAndHost) {
  const std::string path = data_path(kMpi);
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "missing " << path;
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(open(path, &t, &error)) << error;
  ASSERT_FALSE(t.processes.empty());
  bool host_seen = false;
  for (const trace::Process& p : t.processes) {
    EXPECT_EQ(trace::process_rank(p), 0) << p.pid;
    host_seen = host_seen || p.host == "nid001608";
  }
  EXPECT_TRUE(host_seen);
  std::string source;
  for (const trace::Process& p : t.processes)
    if (auto s = p.properties.get("import.meta.nsys.rank_source")) source = std::string(*s);
  EXPECT_EQ(source, "thread name 'MPI Rank 0' (nsys --trace=mpi)");
}

TEST(NsysRankHints, NoMpiNoRank) {
  const std::string path = data_path("a100_cloverleaf_nsys2024.5_schema3.13.2.sqlite");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "missing " << path;
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(open(path, &t, &error)) << error;
  for (const trace::Process& p : t.processes) EXPECT_EQ(trace::process_rank(p), -1) << p.pid;
}

class ChangedMpiExport : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string src = data_path(kMpi);
    if (!std::filesystem::exists(src)) GTEST_SKIP() << "missing " << src;
    path_ = (std::filesystem::temp_directory_path() /
             ("strata_nsys_rank_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".sqlite"))
                .string();
    std::filesystem::copy_file(src, path_, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::permissions(path_, std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::add);
  }
  void TearDown() override {
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  void exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* msg = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg), SQLITE_OK) << (msg ? msg : "");
    sqlite3_free(msg);
    sqlite3_close(db);
  }
  std::string path_;
};

TEST_F(ChangedMpiExport, RenamedThreadGivesItsRank) {
  exec(
      "UPDATE StringIds SET value = 'MPI Rank 5' WHERE value = 'MPI Rank 0';"
      "UPDATE NVTX_EVENTS SET text = 'MPI Rank 5' WHERE eventType = 39;");
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(open(path_, &t, &error)) << error;
  for (const trace::Process& p : t.processes) EXPECT_EQ(trace::process_rank(p), 5);
}

TEST_F(ChangedMpiExport, TwoRanksInOneReportAreNotGuessed) {
  // A second process's thread named for rank 1 (pid 4242: globalTid = pid << 24 | tid).
  exec(
      "INSERT INTO StringIds (id, value) VALUES (999999, 'MPI Rank 1');"
      "INSERT INTO ThreadNames (nameId, priority, globalTid) VALUES (999999, 0, " +
      std::to_string((int64_t{4242} << 24) | 7) + ");");
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(open(path_, &t, &error)) << error;
  std::string problem;
  for (const trace::Process& p : t.processes) {
    EXPECT_EQ(trace::process_rank(p), -1);
    if (auto s = p.properties.get("import.meta.nsys.rank_problem")) problem = std::string(*s);
  }
  EXPECT_NE(problem.find("2 MPI ranks in one report"), std::string::npos) << problem;
}

}  // namespace
}  // namespace strata
