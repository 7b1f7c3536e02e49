// Counter records in the Chrome export (docs/memory.md): "C" events whose args are numbers only, so
// Perfetto plots them, and which `strata import` reads back as the same counters.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <sstream>
#include <vector>

#include "core/memory_keys.h"
#include "export/exporters.h"
#include "import/importer.h"

namespace strata {
namespace {

trace::Trace memory_counters() {
  trace::Trace t;
  trace::Process p;
  p.pid = 42;
  t.add_process(p);
  const std::pair<const char*, const char*> tracks[] = {{"PyTorch CPU allocator", "cpu"},
                                                        {"PyTorch CUDA allocator", "cuda:0"}};
  for (int k = 0; k < 200; ++k) {
    auto [allocator, device] = tracks[k % 2];
    SpanRecord r;
    r.span_id = static_cast<uint64_t>(k + 1);
    r.start_ns = r.end_ns = 1000 * k;
    r.name = t.strings.intern(memory_keys::counter_name(allocator, device));
    r.tid = 42;
    r.level = static_cast<uint8_t>(Level::kApplication);
    r.kind = static_cast<uint8_t>(SpanKind::kCounter);
    std::vector<AttrRecord> attrs = {t.metric("value", 1e6 * (k % 17)),
                                     t.string_attr(memory_keys::kCounterAllocator, allocator),
                                     t.string_attr(memory_keys::kCounterDevice, device)};
    if (k == 7) attrs[0] = t.metric("value", std::numeric_limits<double>::quiet_NaN());
    t.add_span(r, attrs);
  }
  return t;
}

TEST(CounterExport, ArgsAreNumericSeriesAndImportBack) {
  trace::Trace t = memory_counters();
  std::ostringstream out;
  exporter::write_chrome_trace(t, out);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out.str()).get(doc), simdjson::SUCCESS);
  std::map<std::string, std::vector<double>> series;
  size_t counters = 0;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    if (std::string_view(e["ph"].get_string().value()) != "C") continue;
    ++counters;
    for (auto [key, value] : e["args"].get_object()) {
      EXPECT_EQ(key, "value");  // the allocator and device strings stay out of the series
      series[std::string(e["name"].get_string().value())].push_back(value.get_double().value());
    }
  }
  EXPECT_EQ(counters, 200u);
  EXPECT_EQ(series.size(), 2u);
  EXPECT_EQ(series[memory_keys::counter_name("PyTorch CPU allocator", "cpu")].size(), 100u);
  EXPECT_EQ(series[memory_keys::counter_name("PyTorch CUDA allocator", "cuda:0")].size(),
            99u);  // NaN left out
  // Read back by the importer: the same tracks (named as Perfetto names them) and values.
  trace::Trace back;
  std::string error;
  import::ImportOptions chrome;
  chrome.format = "kineto";  // the generic Chrome-trace reader
  ASSERT_TRUE(import::import_buffer(out.str(), "export.json", &back, &error, chrome)) << error;
  std::map<std::string, std::vector<double>> imported;
  for (size_t i = 0; i < back.spans.size(); ++i)
    if (back.spans[i].kind == static_cast<uint8_t>(SpanKind::kCounter))
      imported[std::string(back.name(back.spans[i]))].push_back(back.find_attr(i, "value")->value.d);
  EXPECT_EQ(imported, series);
}

}  // namespace
}  // namespace strata
