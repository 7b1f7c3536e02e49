// The report is a view of the analyses' tables: each table appears in the HTML exactly as
// `strata analyze --format json` renders it; long tables are cut with a note; the page loads
// nothing from anywhere; a span name cannot end the script element that holds the data.
#include "report/report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "analysis/pipeline.h"
#include "export/table_render.h"
#include "report/report_assets.h"
#include "report/sha256.h"
#include "tests/analysis/fixture_traces.h"

namespace strata::report {
namespace {

std::string escaped(const std::string& json) {
  std::string out;
  for (char c : json) out += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return out;
}

std::string write(const trace::Trace& trace, const ReportOptions& options) {
  std::ostringstream out;
  std::string error;
  EXPECT_TRUE(write_report(trace, options, out, &error)) << error;
  return out.str();
}

// The data element's text (between its start tag and the next "</script>").
std::string data_of(const std::string& html) {
  const std::string open = "<script id=\"strata-data\" type=\"application/json\">";
  size_t begin = html.find(open);
  EXPECT_NE(begin, std::string::npos);
  begin += open.size();
  size_t end = html.find("</script>", begin);
  EXPECT_NE(end, std::string::npos);
  return html.substr(begin, end - begin);
}

TEST(Report, EmbedsEchartsOnce) {
  ASSERT_TRUE(have_echarts()) << "build without report/node_modules: run scripts/setup.sh";
  trace::Trace trace = testing::cpu_model_trace();
  std::string html = write(trace, {});
  EXPECT_NE(html.find(std::string(assets::echarts_js())), std::string::npos);
  EXPECT_NE(html.find(std::string(assets::report_app_js())), std::string::npos);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  // Offline: no element loads a file (scripts and styles are inline).
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

TEST(Report, HoldsEachAnalysisTableAsAnalyzeRendersIt) {
  trace::Trace trace = testing::cpu_model_trace();
  ReportOptions options;
  const std::string data = data_of(write(trace, options));
  std::vector<const analysis::Analysis*> chosen;
  for (std::string_view name : report_analyses()) {
    const analysis::Analysis* a = analysis::find_analysis(name);
    ASSERT_NE(a, nullptr) << name;
    chosen.push_back(a);
  }
  analysis::PipelineResult pipeline = analysis::run_pipeline(trace, chosen, options.params);
  int tables = 0;
  for (const auto& [a, result] : pipeline.results) {
    if (result.missing_input) {
      EXPECT_NE(data.find(std::string(a->name()) + "\":{\"missing\":\""), std::string::npos) << a->name();
      continue;
    }
    std::ostringstream json;
    exporter::render_tables(result.tables, exporter::TableFormat::kJson, json);
    std::string text = json.str();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    EXPECT_NE(data.find(escaped(text)), std::string::npos) << a->name();
    tables += static_cast<int>(result.tables.size());
  }
  EXPECT_GE(tables, 6) << "the CPU fixture has models, layers, oneDNN primitives and iterations";
  EXPECT_NE(data.find("\"flame\":{\"missing\":\"no CPU samples"), std::string::npos);
}

TEST(Report, CutsLongTablesWithANote) {
  trace::Trace trace = testing::cpu_model_trace();
  ReportOptions options;
  options.max_rows = 2;
  const std::string data = data_of(write(trace, options));
  EXPECT_NE(data.find("the report holds the first 2 of 5 rows"),
            std::string::npos);  // layer_sequence: 5 layers
}

TEST(Report, ASpanNameCannotEndTheDataElement) {
  trace::Trace trace = testing::cpu_model_trace();
  // Every layer named like markup: it reaches the layer table's name column.
  for (SpanRecord& s : trace.spans)
    if (s.level == static_cast<uint8_t>(Level::kLayer) && trace.name(s) == "conv1")
      s.name = trace.strings.intern("</script><script>alert(1)</script><!--");
  trace.invalidate_structure();
  ReportOptions options;
  options.title = "<b>title</b>";
  const std::string html = write(trace, options);
  const std::string data = data_of(html);
  EXPECT_NE(data.find("\\u003c/script>\\u003cscript>alert(1)"), std::string::npos);
  EXPECT_EQ(data.find('<'), std::string::npos);
  EXPECT_NE(html.find("<title>&lt;b&gt;title&lt;/b&gt;</title>"), std::string::npos);
}

// The page's policy lets its own two scripts run, by their SHA-256 (no 'unsafe-inline' for
// scripts: no inline handler or other script runs), and refuses every fetch, form and base URL. The
// browser enforcing it is tests/python/test_report_payloads.py.
TEST(Report, PolicyAllowsOnlyThePagesOwnScriptsAndNoNetwork) {
  const std::string html = write(testing::cpu_model_trace(), {});
  const std::string open = "<meta http-equiv=\"Content-Security-Policy\" content=\"";
  const size_t begin = html.find(open);
  ASSERT_NE(begin, std::string::npos);
  const std::string policy =
      html.substr(begin + open.size(), html.find('"', begin + open.size()) - begin - open.size());
  EXPECT_LT(begin, html.find("<script")) << "the policy comes before every script";
  // The text of every executable inline script (a <script> without a type), hashed here.
  std::string hashes;
  for (size_t at = html.find("<script>"); at != std::string::npos; at = html.find("<script>", at)) {
    at += 8;
    hashes += " " + csp_script_hash(std::string_view(html).substr(at, html.find("</script>", at) - at));
  }
  EXPECT_EQ(policy, "default-src 'none'; script-src" + hashes +
                        "; style-src 'unsafe-inline'; img-src data:; connect-src 'none'; form-action 'none'; "
                        "base-uri 'none'");
  EXPECT_EQ(std::count(hashes.begin(), hashes.end(), '\''), 4) << "two scripts: ECharts and the page's";
  EXPECT_NE(hashes.find(csp_script_hash("\n" + std::string(assets::report_app_js()) + "\n")),
            std::string::npos);
}

// The lower-bound section holds the tables the caller passes (the CLI's framework_vs_bound tables),
// as analyze renders them; without them it says how to get them (--model).
TEST(Report, HoldsTheLowerBoundTablesItIsGiven) {
  trace::Trace trace = testing::cpu_model_trace();
  const std::string without = data_of(write(trace, {}));
  EXPECT_NE(
      without.find("\"framework_vs_bound\":{\"missing\":\"no model given: `strata report TRACE --model"),
      std::string::npos);

  ReportOptions options;
  table::Result bound;
  table::Table t;
  t.name = "framework_vs_bound";
  t.title = "Framework end-to-end latency vs lower bound (f32, nchw)";
  t.columns = {"model", "measured_ms", "sequential_bound_ms", "parallel_bound_ms"};
  t.rows.push_back({table::Cell::text("net"), table::Cell::real(2.5, 3), table::Cell::real(1.25, 3),
                    table::Cell::real(1.0, 3)});
  bound.tables.push_back(t);
  options.lower_bound = bound;
  const std::string with = data_of(write(trace, options));
  std::ostringstream json;
  exporter::render_tables(bound.tables, exporter::TableFormat::kJson, json);
  std::string text = json.str();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  EXPECT_NE(with.find("\"framework_vs_bound\":{\"missing\":null,\"tables\":" + escaped(text)),
            std::string::npos);
  EXPECT_EQ(with.find("no model given"), std::string::npos);

  table::Result lacking;
  lacking.missing_input = "no layer-level spans in the trace";
  options.lower_bound = lacking;
  EXPECT_NE(data_of(write(trace, options)).find("\"framework_vs_bound\":{\"missing\":\"no layer-level spans"),
            std::string::npos);
}

}  // namespace
}  // namespace strata::report
