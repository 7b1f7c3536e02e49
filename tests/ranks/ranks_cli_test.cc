// The built `strata` end to end: rank identity from launcher variables (strata record), strata merge
// of the two real ranks (rank and clock lines in strata info), and its refusal to overwrite.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "../test_util.h"

namespace strata::testing {
namespace {

std::string strata_cli() {
  const char* v = std::getenv("STRATA_TEST_CLI");
  return v != nullptr && *v ? v : std::string(STRATA_BINARY_DIR) + "/bin/strata";
}
const std::string kKineto = std::string(STRATA_SOURCE_DIR) + "/tests/data/kineto/";

struct Result {
  int code = -1;
  std::string out;
};

Result run(const std::string& command) {
  Result r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(RanksCli, RecordStoresRankIdentityFromTorchrunAndSlurm) {
  TempDir dir;
  const std::string out = dir.file("rank.strata");
  Result r =
      run("env -u OMPI_COMM_WORLD_RANK -u PMI_RANK -u TORCHELASTIC_RUN_ID RANK=3 WORLD_SIZE=8 LOCAL_RANK=1 "
          "SLURM_JOB_ID=77 " +
          strata_cli() + " record -o " + out + " -- /bin/true");
  ASSERT_EQ(r.code, 0) << r.out;
  r = run(strata_cli() + " info " + out);
  EXPECT_NE(r.out.find("rank: 3 of 8, local rank 1, job 77"), std::string::npos) << r.out;
  // MPI's variables when torchrun's are absent; a value that is not a number is not a rank.
  const std::string mpi = dir.file("mpi.strata");
  r = run("env -u RANK -u WORLD_SIZE -u LOCAL_RANK OMPI_COMM_WORLD_RANK=5 OMPI_COMM_WORLD_SIZE=x " +
          strata_cli() + " record -o " + mpi + " -- /bin/true");
  ASSERT_EQ(r.code, 0) << r.out;
  r = run(strata_cli() + " info " + mpi);
  EXPECT_NE(r.out.find("  rank: 5\n"), std::string::npos) << r.out;
}

TEST(RanksCli, MergeRealRanks) {
  TempDir dir;
  const std::string out = dir.file("job.strata");
  const std::string inputs = kKineto + "multirank_rank0.json.gz " + kKineto + "multirank_rank1.json.gz";
  Result r = run(strata_cli() + " merge " + inputs + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("2 ranks, 2 processes, 9487 spans"), std::string::npos) << r.out;
  r = run(strata_cli() + " merge " + inputs + " -o " + out);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--force"), std::string::npos) << r.out;
  r = run(strata_cli() + " info " + out);
  EXPECT_NE(r.out.find("rank: 1 of 128"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("clock: unreliable (reference rank 0)"), std::string::npos) << r.out;
  r = run(strata_cli() + " merge " + kKineto + "multirank_rank0.json.gz " + kKineto +
          "multirank_rank0.json.gz -o " + dir.file("twice.strata"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("rank 0 is also the rank of"), std::string::npos) << r.out;
}

// The cross-rank analyses through `strata analyze` on the merged job: JSON with every table, a bad
// threshold refused with one line naming the key.
TEST(RanksCli, AnalyzeMergedJobAsJson) {
  TempDir dir;
  const std::string job = dir.file("job.strata");
  Result r = run(strata_cli() + " merge " + kKineto + "multirank_rank0.json.gz " + kKineto +
                 "multirank_rank1.json.gz -o " + job);
  ASSERT_EQ(r.code, 0) << r.out;
  r = run(strata_cli() + " analyze " + job +
          " --analysis idle_time,comm_overlap,step_time,kernel_distribution,launch_stats,queue_length "
          "--param bucket_us=100000 --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* table :
       {"idle_time", "comm_overlap", "comm_overlap_by_collective", "step_time", "step_time_ranks",
        "kernel_distribution_spread", "launch_stats", "launch_stats_launches", "queue_length",
        "queue_length_histogram", "queue_length_series"})
    EXPECT_NE(r.out.find(std::string("\"") + table + "\""), std::string::npos) << table;
  r = run(strata_cli() + " analyze " + job + " --analysis idle_time --param kernel_wait_us=abc");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("kernel_wait_us='abc': expected a number >= 0"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace strata::testing
