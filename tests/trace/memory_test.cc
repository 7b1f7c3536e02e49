// Opening a trace stays within 1.5x its file size (issue: `analyze` took 2.9x, `info` 2.2x): the
// built strata binary on a generated trace written in recording order (so opening has to sort), peak
// RSS of the child measured by the kernel (wait4), minus the binary's own cost on a tiny trace. The
// full-size run (4M spans, ~330 MB) is scripts/load_memory.sh. STRATA_TEST_CLI=/path/to/strata
// measures another build.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "../../bench/analysis/synthetic_trace.h"
#include "../test_util.h"
#include "trace/trace_saver.h"

namespace strata::testing {
namespace {

std::string strata_cli() {
  const char* v = std::getenv("STRATA_TEST_CLI");
  return v != nullptr && *v ? v : std::string(STRATA_BINARY_DIR) + "/bin/strata";
}

// Writes about `spans` spans in the order a recording writes them: each span when it ends.
void write_recorded_order(size_t spans, const std::string& path) {
  trace::Trace t = bench::synthetic_gpu_trace(spans);
  std::vector<uint32_t> order(t.spans.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return t.spans[a].end_ns < t.spans[b].end_ns; });
  std::vector<SpanRecord> s(order.size());
  std::vector<uint32_t> begin(order.size() + 1, static_cast<uint32_t>(t.attrs.size()));
  for (size_t k = 0; k < order.size(); ++k) {
    s[k] = t.spans[order[k]];
    begin[k] = t.attr_begin[order[k]];
  }
  t.spans = std::move(s);
  t.attr_begin = std::move(begin);
  std::string error;
  ASSERT_TRUE(trace::save_trace(t, path, &error)) << error;
}

// Peak resident memory (KiB) of `strata ARGS...`, its output discarded.
long peak_kib(const std::vector<std::string>& args) {
  std::fflush(stdout);  // else the child flushes the parent's buffered lines again
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    std::string exe = strata_cli();
    argv.push_back(exe.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  wait4(pid, &status, 0, &usage);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << args[0] << " failed";
  return usage.ru_maxrss;
}

TEST(OpenMemory, AnalyzeAndInfoStayWithinOneAndAHalfTimesTheFile) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's shadow memory and quarantine are not the trace's";
#endif
  TempDir dir;
  write_recorded_order(1'000, dir.file("tiny.strata"));
  write_recorded_order(700'000, dir.file("big.strata"));
  const double file_kib = static_cast<double>(std::filesystem::file_size(dir.file("big.strata"))) / 1024;
  ASSERT_GT(file_kib, 50'000) << "a trace of tens of MB, so the binary's own memory is small beside it";
  for (const char* command : {"analyze", "info"}) {
    const long base = peak_kib({command, dir.file("tiny.strata")});
    const long peak = peak_kib({command, dir.file("big.strata")});
    const double ratio = static_cast<double>(peak - base) / file_kib;
    RecordProperty(std::string(command) + "_peak_over_file", std::to_string(ratio));
    std::printf("strata %s: peak %ld KiB - %ld KiB for a tiny trace, file %.0f KiB: %.2fx\n", command, peak,
                base, file_kib, ratio);
    EXPECT_LE(ratio, 1.5) << "strata " << command << ": peak " << peak << " KiB (" << base
                          << " KiB for a tiny trace) for a " << file_kib << " KiB file";
  }
}

}  // namespace
}  // namespace strata::testing
