// The memory columns of the layer analyses (docs/memory.md): gross alloc_mb, net_mb (torch.profiler
// "CPU Mem"), self_net_mb ("Self CPU Mem"), peak_mb, on a hand-built trace with known answers; and
// what they show for traces that recorded alloc_bytes alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis_test_util.h"
#include "core/attr_keys.h"
#include "core/memory_keys.h"

namespace strata::testing {
namespace {

namespace mk = memory_keys;

struct OpDef {
  const char* name;
  const char* type;
  int64_t alloc, freed, self_net, peak;  // bytes; alloc == freed == 0: only alloc_bytes written
};

// Five evaluations ("predict", batch 1) of four top-level layers; evaluation e scales every value by
// (e + 1), so the default statistic (trimmed mean, 10%: nothing trimmed of five) is the scale 3.
trace::Trace memory_trace(bool with_net) {
  trace::Trace t;
  trace::Process p;
  p.pid = 300;
  t.add_process(p);
  const OpDef ops[] = {{"conv1", "aten::conv2d", 3'000'000, 1'000'000, 0, 2'500'000},
                       {"relu", "aten::relu_", 0, 0, 0, 0},
                       {"conv2", "aten::conv2d", 5'000'000, 2'000'000, -500'000, 4'000'000},
                       {"lstm", "aten::lstm", 40'000'000, 38'000'000, -36'000'000, 7'000'000}};
  uint64_t id = 1;
  int64_t clock = 0;
  for (int e = 0; e < 5; ++e) {
    const int64_t scale = e + 1;
    SpanRecord m;
    m.span_id = id++;
    m.start_ns = clock;
    m.end_ns = clock + 10'000'000;
    m.name = t.strings.intern("predict");
    m.level = static_cast<uint8_t>(Level::kModel);
    m.kind = static_cast<uint8_t>(SpanKind::kSpan);
    m.tid = 1;
    t.add_span(m, std::vector<AttrRecord>{t.int_attr("batch", 1)});
    int64_t at = clock + 1'000'000;
    for (const OpDef& op : ops) {
      SpanRecord s = m;
      s.span_id = id++;
      s.parent_id = m.span_id;
      s.start_ns = at;
      s.end_ns = at + 1'000'000;
      s.level = static_cast<uint8_t>(Level::kLayer);
      s.name = t.strings.intern(op.name);
      std::vector<AttrRecord> attrs = {t.string_attr(attr_keys::kOpType, op.type),
                                       t.int_attr(mk::kAllocBytes, op.alloc * scale)};
      if (with_net && (op.alloc != 0 || op.freed != 0)) {
        attrs.push_back(t.int_attr(mk::kFreedBytes, op.freed * scale));
        attrs.push_back(t.int_attr(mk::kNetAllocBytes, (op.alloc - op.freed) * scale));
        attrs.push_back(t.int_attr(mk::kSelfNetAllocBytes, op.self_net * scale));
        attrs.push_back(t.int_attr(mk::kPeakAllocBytes, op.peak * scale));
      }
      t.add_span(s, attrs);
      at += 2'000'000;
    }
    clock += 11'000'000;
  }
  return t;
}

TEST(MemoryColumns, LayerTableShowsGrossNetSelfAndPeak) {
  trace::Trace trace = memory_trace(true);
  auto run = run_analysis(trace, "layer_table");
  const analysis::Table& t = run.table();
  ASSERT_EQ(t.rows.size(), 4u);
  // Scale 3 (the mean of 1..5), in MB.
  const double alloc[] = {9, 0, 15, 120}, net[] = {6, 0, 9, 6}, self[] = {0, 0, -1.5, -108},
               peak[] = {7.5, 0, 12, 21};
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_NEAR(num(t, r, "alloc_mb"), alloc[r], 1e-9) << r;
    EXPECT_NEAR(num(t, r, "net_mb"), net[r], 1e-9) << r;
    EXPECT_NEAR(num(t, r, "self_net_mb"), self[r], 1e-9) << r;
    EXPECT_NEAR(num(t, r, "peak_mb"), peak[r], 1e-9) << r;
  }
  auto median = run_analysis(trace, "layer_sequence", {{"stat", "median"}});
  EXPECT_NEAR(num(median.table(), 3, "net_mb"), 6, 1e-9);
  EXPECT_NEAR(num(median.table(), 3, "peak_mb"), 21, 1e-9);
  bool explained = std::any_of(t.notes.begin(), t.notes.end(),
                               [](const std::string& n) { return n.find("CPU Mem") != std::string::npos; });
  EXPECT_TRUE(explained);
}

TEST(MemoryColumns, ByTypeSumsNetAndSelfAndTakesTheHighestPeak) {
  trace::Trace trace = memory_trace(true);
  auto run = run_analysis(trace, "layer_type_aggregate");
  const analysis::Table& t = run.table();
  size_t conv = row_where(t, "type", "aten::conv2d");
  EXPECT_NEAR(num(t, conv, "alloc_mb"), 24, 1e-9);
  EXPECT_NEAR(num(t, conv, "net_mb"), 15, 1e-9);
  EXPECT_NEAR(num(t, conv, "self_net_mb"), -1.5, 1e-9);
  EXPECT_NEAR(num(t, conv, "peak_mb"), 12, 1e-9);
  size_t relu = row_where(t, "type", "aten::relu_");
  EXPECT_NEAR(num(t, relu, "net_mb"), 0, 1e-9);  // alloc_bytes 0 alone: touched no memory
}

TEST(MemoryColumns, TracesWithGrossOnlyLeaveNetEmptyAndSaySo) {
  trace::Trace trace = memory_trace(false);
  auto run = run_analysis(trace, "layer_table");
  const analysis::Table& t = run.table();
  EXPECT_NEAR(num(t, 0, "alloc_mb"), 9, 1e-9);
  EXPECT_EQ(text(t, 0, "net_mb"), "");  // a gross-only trace: 9 MB allocated, net unknown
  EXPECT_EQ(text(t, 3, "peak_mb"), "");
  bool said = std::any_of(t.notes.begin(), t.notes.end(), [](const std::string& n) {
    return n.find("net, self and peak memory not recorded") != std::string::npos;
  });
  EXPECT_TRUE(said);
}

}  // namespace
}  // namespace strata::testing
