// Each CPU sample carries the span open on its thread when it was taken. Checked on a real run of the
// Python span API (Debian's CPython 3.11, two threads, nested spans, time between spans) against an
// offline join of the sample times with the span intervals by thread and time.
#include <algorithm>
#include <cinttypes>
#include <cstdlib>
#include <map>

#include "sample_test_util.h"

namespace strata::testing {
namespace {

constexpr const char* kScript = R"(
import threading, time, strata
def burn(sec):
    t = time.thread_time()
    while time.thread_time() - t < sec:
        pass
def worker():
    for i in range(25):
        with strata.span("w_op", level="layer"):
            burn(0.008)
        burn(0.004)
th = threading.Thread(target=worker); th.start()
for i in range(25):
    with strata.span("main_op", level="layer"):
        with strata.span("inner", level="layer"):
            burn(0.008)
        burn(0.004)
    burn(0.004)
th.join()
)";

TEST(SampleAttribution, SamplesCarryTheSpanOpenOnTheirThreadAsAnOfflineJoinFindsIt) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  TempDir dir;
  write_file(dir.file("spans.py"), kScript);
  std::string output;
  const std::string cmd = "PYTHONPATH=" + std::string(STRATA_BINARY_DIR) + "/lib/python " + strata_tool() +
                          " record --quiet --sample --level layer -o " + dir.file("t.strata") +
                          " -- /usr/bin/python3 " + dir.file("spans.py");
  ASSERT_EQ(run_command(cmd, &output), 0) << output;
  model::Trace trace;
  std::string error;
  ASSERT_TRUE(model::load_trace(dir.file("t.strata"), &trace, &error)) << error;
  ASSERT_FALSE(trace.samples.timeline.empty());

  // Offline: spans per (process, thread); the innermost span containing t is the latest-starting one.
  std::map<std::pair<uint16_t, uint32_t>, std::vector<const SpanRecord*>> by_thread;
  for (const SpanRecord& s : trace.spans) by_thread[{s.process, s.tid}].push_back(&s);
  std::map<uint64_t, std::string> names;
  for (const SpanRecord& s : trace.spans) names[s.span_id] = std::string(trace.name(s));
  uint64_t agree = 0, near_edge = 0, disagree = 0;
  std::map<std::string, uint64_t> per_span;
  for (const model::SamplePoint& p : trace.samples.timeline) {
    const SpanRecord* inner = nullptr;
    int64_t edge_distance = INT64_MAX;
    for (const SpanRecord* s : by_thread[{p.process, p.tid}]) {
      edge_distance = std::min<int64_t>({edge_distance, std::abs(p.time_ns - s->start_ns), std::abs(p.time_ns - s->end_ns)});
      if (s->start_ns <= p.time_ns && p.time_ns < s->end_ns && (inner == nullptr || s->start_ns >= inner->start_ns))
        inner = s;
    }
    const uint64_t expected = inner ? inner->span_id : 0;
    per_span[p.span_id ? names[p.span_id] : "(none)"] += p.weight;
    if (expected == p.span_id) ++agree;
    else if (edge_distance < 50'000) ++near_edge;  // within 50 us of a span's edge: clock conversion
    else {
      ++disagree;
      ADD_FAILURE() << "sample at " << p.time_ns << " on thread " << p.tid << " carries span " << std::hex << p.span_id
                    << " (" << names[p.span_id] << "), the join finds " << expected << " (" << names[expected] << ")";
      if (disagree > 5) break;
    }
  }
  EXPECT_EQ(disagree, 0u);
  EXPECT_LE(near_edge * 100, agree) << "more than 1% of samples at a span edge";
  // The run took samples in every span and between them, on both threads.
  for (const char* name : {"w_op", "main_op", "inner", "(none)"}) EXPECT_GT(per_span[name], 10u) << name;
  // Python frames with file and line are merged into the stacks (Debian's CPython 3.11).
  Shares s = function_shares(dir.file("t.strata"));
  EXPECT_GT(s.total["burn (" + dir.file("spans.py") + ")"], 50.0) << output;
}

}  // namespace
}  // namespace strata::testing
