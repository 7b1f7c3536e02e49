// Numbers in foreign profiles (issue 13.10): ids and times that do not fit are kept apart or dropped
// and counted, never converted with undefined behaviour or carried into overflowing arithmetic.
#include <gtest/gtest.h>

#include <string>

#include "import/importer.h"

namespace strata::import {
namespace {

struct Imported {
  bool ok = false;
  std::string error;
  trace::Trace trace;
  uint64_t drops(const std::string& cause) const {
    uint64_t n = 0;
    for (const auto& p : trace.processes) n += p.stats.get(cause);  // by the stat's name
    return n;
  }
};

void import_kineto(const std::string& events, Imported* out) {
  const std::string json = "{\"schemaVersion\": 1, \"traceEvents\": [" + events + "]}";
  ImportOptions options;
  options.format = "kineto";
  out->ok = import_buffer(json, "numbers.json", &out->trace, &out->error, options);
}

TEST(ImportNumbers, PidsBeyondInt64StayApartInsteadOfColliding) {
  // Two pids no int64 holds: converting them was undefined behaviour (both came out INT64_MIN on
  // x86, so the E of one track closed the B of the other).
  Imported r;
  import_kineto(R"({"ph": "X", "cat": "cpu_op", "name": "host", "pid": 7, "tid": 1, "ts": 0, "dur": 100},
                   {"ph": "B", "name": "a", "pid": 19999999999999999990, "tid": 1, "ts": 10},
                   {"ph": "E", "name": "a", "pid": 29999999999999999990, "tid": 1, "ts": 20})",
                &r);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.drops("import.unmatched_end"), 1u);
  bool found = false;
  for (const SpanRecord& s : r.trace.spans) {
    if (r.trace.name(s) != "a") continue;
    found = true;
    EXPECT_TRUE(s.flags & kSpanFlagUnfinished) << "closed by another track's E";
  }
  EXPECT_TRUE(found);
}

TEST(ImportNumbers, TimesBeyondTwoToTheSixtyTwoNanosecondsAreDroppedAndCounted) {
  // 9.2e15 us = 9.2e18 ns fits in int64 but not in a trace's range (every difference of two times
  // must fit); ts + dur past the range is an overflow.
  Imported r;
  import_kineto(R"({"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 7, "tid": 1, "ts": 0, "dur": 100},
                   {"ph": "X", "cat": "cpu_op", "name": "far", "pid": 7, "tid": 1, "ts": 9200000000000000, "dur": 1},
                   {"ph": "X", "cat": "cpu_op", "name": "neg", "pid": 7, "tid": 1, "ts": -9200000000000000, "dur": 1},
                   {"ph": "X", "cat": "cpu_op", "name": "long", "pid": 7, "tid": 1, "ts": 4000000000000000, "dur": 1000000000000000})",
                &r);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.trace.spans.size(), 1u);
  EXPECT_EQ(r.drops("import.malformed_ts"), 2u);
  EXPECT_EQ(r.drops("import.time_overflow"), 1u);
  for (const SpanRecord& s : r.trace.spans) EXPECT_EQ(s.duration_ns(), s.end_ns - s.start_ns);
}

}  // namespace
}  // namespace strata::import
