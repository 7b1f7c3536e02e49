// Exports parsed back: Chrome trace (nesting, flows, names), flat JSON and CSV.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <sstream>

#include "export/exporters.h"

namespace strata {
namespace {

trace::Trace sample_trace() {
  trace::Trace t;
  trace::Process p;
  p.pid = 321;
  p.command_line = "python3 \"train.py\"";
  p.trace_id = "0123456789abcdef0123456789abcdef";
  p.thread_names[321] = "main";
  t.add_process(p);
  auto span = [&](uint64_t id, uint64_t parent, int64_t s, int64_t e, std::string_view name, Level level, SpanKind kind) {
    SpanRecord r;
    r.span_id = id;
    r.parent_id = parent;
    r.start_ns = s;
    r.end_ns = e;
    r.name = t.strings.intern(name);
    r.tid = 321;
    r.level = static_cast<uint8_t>(level);
    r.kind = static_cast<uint8_t>(kind);
    return r;
  };
  AttrRecord attrs[] = {t.int_attr("batch", 8), t.string_attr("shape", "[[1,3]]\n\"q\""), t.metric("flops", 2e9),
                        t.double_attr("nan", std::numeric_limits<double>::quiet_NaN())};
  t.add_span(span(1, 0, 1000, 900000, "predict", Level::kModel, SpanKind::kSpan), attrs);
  t.add_span(span(2, 1, 2000, 400000, "conv \xff bad utf8", Level::kLayer, SpanKind::kSpan));
  SpanRecord launch = span(3, 2, 3000, 8000, "cudaLaunchKernel", Level::kRuntimeApi, SpanKind::kLaunch);
  launch.correlation_id = 77;
  t.add_span(launch);
  SpanRecord kernel = span(4, 0, 9000, 60000, "implicit_gemm", Level::kDevice, SpanKind::kExecution);
  kernel.correlation_id = 77;
  kernel.device = 0;
  kernel.stream = 7;
  t.add_span(kernel);
  t.add_span(span(5, 1, 500000, 500000, "checkpoint", Level::kModel, SpanKind::kInstant));
  SpanRecord c = span(6, 0, 600000, 600000, "loss", Level::kApplication, SpanKind::kCounter);
  AttrRecord v[] = {t.metric("value", 0.5)};
  t.add_span(c, v);
  return t;
}

TEST(ChromeExport, ParsesBackWithNestingFlowsAndNames) {
  trace::Trace t = sample_trace();
  std::ostringstream out;
  exporter::write_chrome_trace(t, out);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out.str()).get(doc), simdjson::SUCCESS) << out.str();
  std::map<std::string, int> phases;
  std::map<std::string, std::tuple<double, double, int64_t>> slices;  // name -> ts, dur, tid
  int64_t flow_start_id = -1, flow_end_id = -2, flow_start_tid = -1, flow_end_tid = -2;
  std::string flow_name;
  bool gpu_track_named = false, process_named = false;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    std::string ph(e["ph"].get_string().value());
    phases[ph]++;
    if (ph == "X") {
      slices[std::string(e["name"].get_string().value())] = {e["ts"].get_double().value(), e["dur"].get_double().value(),
                                                             e["tid"].get_int64().value()};
    } else if (ph == "s") {
      flow_start_id = e["id"].get_int64().value();
      flow_start_tid = e["tid"].get_int64().value();
      flow_name = std::string(e["name"].get_string().value());
    } else if (ph == "f") {
      flow_end_id = e["id"].get_int64().value();
      flow_end_tid = e["tid"].get_int64().value();
      EXPECT_EQ(std::string(e["bp"].get_string().value()), "e");
    } else if (ph == "M") {
      std::string name(e["args"]["name"].get_string().value());
      if (name == "GPU 0 stream 7") gpu_track_named = true;
      if (name.find("train.py") != std::string::npos) process_named = true;
    }
  }
  EXPECT_EQ(phases["X"], 4);
  EXPECT_EQ(phases["i"], 1);
  EXPECT_EQ(phases["C"], 1);
  // One flow: the kernel under its launch (a correlation link across tracks); the other links
  // (conv under predict, the launch under conv, the instant under predict) show as nesting.
  EXPECT_EQ(phases["s"], 1);
  EXPECT_EQ(phases["f"], 1);
  EXPECT_EQ(flow_start_id, flow_end_id);
  EXPECT_EQ(flow_name, "correlation");
  EXPECT_TRUE(gpu_track_named);
  EXPECT_TRUE(process_named);
  // Timestamps are µs from the first event; nesting preserved on the host thread.
  auto [pts, pdur, ptid] = slices.at("predict");
  // Invalid UTF-8 in a name is replaced, so the file still parses.
  EXPECT_EQ(slices.count("conv \xef\xbf\xbd bad utf8"), 1u);
  EXPECT_DOUBLE_EQ(pts, 0.0);
  EXPECT_DOUBLE_EQ(pdur, 899.0);
  auto [lts, ldur, ltid] = slices.at("cudaLaunchKernel");
  EXPECT_EQ(ltid, ptid);
  EXPECT_GE(lts, pts);
  EXPECT_LE(lts + ldur, pts + pdur);
  auto [kts, kdur, ktid] = slices.at("implicit_gemm");
  EXPECT_NE(ktid, ptid) << "device work on its own track";
  EXPECT_EQ(flow_start_tid, ltid) << "the arrow leaves the launch";
  EXPECT_EQ(flow_end_tid, ktid) << "and ends at the kernel";
  EXPECT_DOUBLE_EQ(kdur, 51.0);
  (void)kts;
}

TEST(SpanExport, JsonParsesBackWithEveryField) {
  trace::Trace t = sample_trace();
  std::ostringstream out;
  exporter::write_spans_json(t, out);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out.str()).get(doc), simdjson::SUCCESS) << out.str();
  simdjson::dom::array spans = doc.get_array();
  ASSERT_EQ(spans.size(), t.spans.size());
  simdjson::dom::element first = spans.at(0);
  EXPECT_EQ(std::string(first["name"].get_string().value()), "predict");
  EXPECT_EQ(first["attributes"]["batch"].get_int64().value(), 8);
  EXPECT_EQ(std::string(first["attributes"]["shape"].get_string().value()), "[[1,3]]\n\"q\"");
  EXPECT_DOUBLE_EQ(first["attributes"]["metric.flops"].get_double().value(), 2e9);
  EXPECT_TRUE(first["attributes"]["nan"].is_null());
  EXPECT_EQ(first["pid"].get_int64().value(), 321);
  EXPECT_EQ(std::string(first["level"].get_string().value()), "model");
  simdjson::dom::element kernel = spans.at(3);
  EXPECT_EQ(kernel["stream"].get_int64().value(), 7);
  EXPECT_EQ(kernel["correlation_id"].get_int64().value(), 77);
}

TEST(SpanExport, CsvHasOneRowPerSpanAndQuotesFields) {
  trace::Trace t = sample_trace();
  std::ostringstream out;
  exporter::write_spans_csv(t, out);
  std::string csv = out.str();
  // Rows end with \n outside quotes; the shape attribute holds a quoted newline.
  size_t rows = 0;
  bool quoted = false;
  for (char c : csv) {
    if (c == '"') quoted = !quoted;
    if (c == '\n' && !quoted) ++rows;
  }
  EXPECT_EQ(rows, t.spans.size() + 1);
  EXPECT_NE(csv.find("\"{\"\"batch\"\":8"), std::string::npos);
}

}  // namespace
}  // namespace strata
