// Every input kept in fuzz/corpus/<fuzzer>/ (those that found a bug, and crafted hostile traces)
// runs through its fuzzer's code, each in a child process under a memory and time limit: a
// regression fails here (crash, sanitizer report, broken invariant, unbounded allocation or hang)
// instead of taking the machine with it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "../../fuzz/format/trace_fuzz_targets.h"
#include "../../fuzz/import/import_fuzz_target.h"
#include "../../fuzz/import/nsys_fuzz_target.h"
#ifdef STRATA_HAVE_SAMPLE
#include "../../fuzz/sample/python_image.h"
#include "../../fuzz/sample/sample_fuzz_targets.h"
#endif
#include "../test_util.h"
#include "format/chunk_reader.h"
#ifdef STRATA_REPLAY_DB_URL
#include "../../fuzz/lowerbound/db_url_target.h"
#endif
#ifdef STRATA_REPLAY_ELF_IMAGE
#include "../../fuzz/symbolize/elf_image_fuzz_target.h"
#endif

#if defined(__SANITIZE_ADDRESS__)
#define STRATA_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_UNDER_ASAN 1
#endif
#endif

namespace strata {
namespace {

namespace fs = std::filesystem;
using Runner = std::function<void(std::string_view)>;

const std::map<std::string, Runner>& runners() {
  static const std::map<std::string, Runner> map = {
      {"trace_reader_fuzz", fuzz::run_trace_reader},
      {"trace_chunks_fuzz", fuzz::run_trace_chunks},
      {"fuzz_import_kineto", [](std::string_view b) { fuzz::run_import(b, "kineto"); }},
      {"fuzz_import_onnxruntime", [](std::string_view b) { fuzz::run_import(b, "onnxruntime"); }},
      {"fuzz_import_tensorflow", [](std::string_view b) { fuzz::run_import(b, "tensorflow"); }},
      {"fuzz_import_auto", [](std::string_view b) { fuzz::run_import(b, "auto"); }},
      {"fuzz_import_nsys", fuzz::run_nsys_import},
      {"fuzz_import_nsys_sql", fuzz::run_nsys_sql},
      {"fuzz_import_ncu", fuzz::run_ncu_csv},
#ifdef STRATA_HAVE_SAMPLE
      {"sample_chunks_fuzz", fuzz::run_sample_chunks},
      {"sample_unwind_fuzz", fuzz::run_sample_unwind},
      {"sample_python_reader_fuzz", fuzz::run_python_reader},
#endif
#ifdef STRATA_REPLAY_DB_URL
      {"db_url_fuzzer", fuzz::run_db_url},
#endif
#ifdef STRATA_REPLAY_ELF_IMAGE
      {"elf_image_fuzz", fuzz::run_elf_image},
#endif
  };
  return map;
}

// Runs one input in a child: 1 GiB of address space (as the fuzzers' -rss_limit_mb bounds them;
// not under ASan, whose shadow memory needs terabytes of it) and 60 s. Returns the wait status.
int run_isolated(const Runner& run, const std::string& bytes) {
  pid_t pid = fork();
  if (pid == 0) {
#ifndef STRATA_UNDER_ASAN
    struct rlimit limit {
      uint64_t{1} << 30, uint64_t{1} << 30
    };
    setrlimit(RLIMIT_AS, &limit);
#endif
    alarm(60);
    run(bytes);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("signal ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

TEST(FuzzCorpus, EveryKeptInputRunsCleanly) {
  const fs::path root = fs::path(STRATA_SOURCE_DIR) / "fuzz" / "corpus";
  ASSERT_TRUE(fs::is_directory(root)) << root;
  size_t inputs = 0;
  for (const auto& dir : fs::directory_iterator(root)) {
    if (!dir.is_directory()) continue;
    const std::string name = dir.path().filename();
#ifndef STRATA_HAVE_SAMPLE
    if (name.rfind("sample_", 0) == 0) continue;  // sampling not built here (no libunwind)
#endif
#ifndef STRATA_REPLAY_DB_URL
    if (name == "db_url_fuzzer") continue;  // lowerbound's perf database left out of this build (STRATA_SKIP)
#endif
#ifndef STRATA_REPLAY_ELF_IMAGE
    if (name == "elf_image_fuzz") continue;  // symbolize left out of this build (STRATA_SKIP)
#endif
    auto runner = runners().find(name);
    ASSERT_NE(runner, runners().end()) << "fuzz/corpus/" << name << ": no replay for this fuzzer here";
    std::vector<fs::path> files;
    for (const auto& file : fs::directory_iterator(dir.path()))
      if (file.is_regular_file()) files.push_back(file.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      int status = run_isolated(runner->second, testing::read_file(file));
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "fuzz/corpus/" << name << "/" << file.filename().string() << ": " << describe(status);
      ++inputs;
    }
  }
  EXPECT_GT(inputs, 0u);
}

// The checksum repair the chunk fuzzer relies on: whatever bytes went in (here the kept crafted
// traces with every tenth byte after the file header flipped), every chunk that comes out passes
// the reader's checks, so the fuzzer's mutations reach the decoders.
TEST(FuzzCorpus, FixUpRepairsEveryChunksFraming) {
  const fs::path dir = fs::path(STRATA_SOURCE_DIR) / "fuzz" / "corpus" / "trace_reader_fuzz";
  size_t files = 0;
  for (const auto& file : fs::directory_iterator(dir)) {
    std::string bytes = testing::read_file(file.path());
    for (size_t i = 40; i < bytes.size(); i += 10) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
    const std::string fixed = fuzz::fix_up_chunks(bytes);
    format::ChunkReader reader;
    ASSERT_TRUE(reader.open(format::memory_source(fixed), "fixed")) << file.path();
    format::Chunk chunk;
    size_t chunks = 0;
    while (reader.next(&chunk) == format::ChunkReader::Status::kChunk) ++chunks;
    EXPECT_EQ(reader.corrupt_chunks(), 0u) << file.path();
    EXPECT_GT(chunks, 0u) << file.path();
    ++files;
  }
  EXPECT_GT(files, 0u);
}

#ifdef STRATA_HAVE_SAMPLE
// The Python reader fuzzer's seeds are the synthetic images of fuzz/sample/python_image.cc as
// encoded now: a realistic three-frame image read both ways, and the torn frame that crashed
// `strata attach` (item 7 of issue 32). A change of the image or its encoding must renew them.
TEST(FuzzCorpus, PythonReaderSeedsAreTheSyntheticImages) {
  if (!fuzz::python_layout_built()) GTEST_SKIP() << "built without CPython 3.11 headers: no layout";
  const fs::path dir = fs::path(STRATA_SOURCE_DIR) / "fuzz" / "corpus" / "sample_python_reader_fuzz";
  const char* write = std::getenv("STRATA_WRITE_PYTHON_SEEDS");
  for (const auto& [name, image] : fuzz::python_reader_seeds()) {
    const std::string bytes = fuzz::encode_python_image(image);
    if (write != nullptr && std::string(write) == "1") testing::write_file((dir / name).string(), bytes);
    EXPECT_EQ(testing::read_file(dir / name), bytes)
        << name << ": renew with STRATA_WRITE_PYTHON_SEEDS=1 build/bin/fuzz_corpus_test "
        << "--gtest_filter=FuzzCorpus.PythonReaderSeedsAreTheSyntheticImages";
  }
}
#endif

}  // namespace
}  // namespace strata
