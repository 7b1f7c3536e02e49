// Exports carry the tree the analyses use (issue: imported Kineto spans all had parent_id null; a
// recorded trace's top-level spans named a root not in the file). Checked on a real Kineto trace
// (A100 AlexNet) and on recorded-style traces with a remote W3C parent: every parent id names a
// span of the same process in the export or is marked remote, links say how they were made, and the
// Chrome export shows every tree edge, by nesting or by exactly one flow.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <set>
#include <sstream>

#include "export/exporters.h"
#include "import/importer.h"
#include "trace/span_tree.h"

namespace strata {
namespace {

const std::string kKineto =
    std::string(STRATA_SOURCE_DIR) + "/tests/golden/inputs/a100_alexnet_train.json.gz";

trace::Trace kineto_trace() {
  trace::Trace t;
  std::string error;
  EXPECT_TRUE(import::import_trace(kKineto, &t, &error)) << error;
  return t;
}

const std::set<std::string> kLinks = {"explicit",    "correlation",  "external",
                                      "containment", "cross_thread", "ambiguous"};

struct Exported {
  std::string span_id, parent_id, link, remote;
  int64_t pid = 0;
};

std::vector<Exported> parse_json(const std::string& text) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS);
  std::vector<Exported> out;
  for (simdjson::dom::element e : doc.get_array()) {
    Exported x;
    x.span_id = std::string(e["span_id"].get_string().value());
    x.pid = e["pid"].get_int64().value();
    if (!e["parent_id"].is_null()) x.parent_id = std::string(e["parent_id"].get_string().value());
    if (!e["parent_link"].is_null()) x.link = std::string(e["parent_link"].get_string().value());
    if (!e["remote_parent_id"].is_null()) x.remote = std::string(e["remote_parent_id"].get_string().value());
    out.push_back(x);
  }
  return out;
}

TEST(ExportTree, ImportedKinetoSpansCarryTheirParents) {
  trace::Trace t = kineto_trace();
  const trace::SpanTree& tree = t.tree();
  std::ostringstream out;
  exporter::write_spans_json(t, out);
  std::vector<Exported> spans = parse_json(out.str());
  ASSERT_EQ(spans.size(), t.spans.size());
  std::set<std::pair<int64_t, std::string>> ids;
  for (const Exported& s : spans) EXPECT_TRUE(ids.insert({s.pid, s.span_id}).second) << "unique per process";
  size_t with_parent = 0;
  std::map<std::string, size_t> by_link;
  for (size_t i = 0; i < spans.size(); ++i) {
    const Exported& s = spans[i];
    if (s.parent_id.empty()) {
      EXPECT_TRUE(s.link.empty());
      EXPECT_EQ(tree.parent(i), trace::kNoParent);
      continue;
    }
    ++with_parent;
    ++by_link[s.link];
    EXPECT_TRUE(ids.count({s.pid, s.parent_id}))
        << "parent " << s.parent_id << " is not a span of pid " << s.pid;
    EXPECT_TRUE(kLinks.count(s.link)) << s.link;
    EXPECT_TRUE(s.remote.empty()) << "an imported trace has no recorded parent ids";
  }
  EXPECT_EQ(with_parent, t.spans.size() - tree.roots().size());
  EXPECT_GT(with_parent, t.spans.size() / 2);
  // Kernels hang under their launches by correlation id, launches under their ops by containment.
  EXPECT_GT(by_link["correlation"], 0u);
  EXPECT_GT(by_link["containment"], 0u);
  EXPECT_EQ(by_link["correlation"], tree.stats().get(stats::Stat::kTreeCorrelationLinks));

  // The CSV says the same.
  std::ostringstream csv;
  exporter::write_spans_csv(t, csv);
  std::istringstream lines(csv.str());
  std::string header, line;
  std::getline(lines, header);
  EXPECT_EQ(header.rfind("span_id,parent_id,parent_link,remote_parent_id,", 0), 0u) << header;
  size_t csv_with_parent = 0;
  while (std::getline(lines, line)) {
    // span_id is 16 hex digits, then the parent's (or nothing).
    if (line.size() > 17 && line[16] == ',' && line[17] != ',') ++csv_with_parent;
  }
  EXPECT_EQ(csv_with_parent, with_parent);
}

TEST(ExportTree, RecordedTopLevelSpansNameTheirRemoteParent) {
  // As `strata record` leaves them: the process inherited a TRACEPARENT whose span is the
  // recorder's, not in the file; top-level spans name it, nested ones their local parents.
  trace::Trace t;
  trace::Process p;
  p.pid = 42;
  p.parent_span_id = "00000000000abcde";
  t.add_process(p);
  auto add = [&](uint64_t id, uint64_t parent, int64_t s, int64_t e) {
    SpanRecord r;
    r.span_id = id;
    r.parent_id = parent;
    r.start_ns = s;
    r.end_ns = e;
    r.tid = 42;
    r.level = static_cast<uint8_t>(id == 2 ? Level::kLayer : Level::kModel);
    r.name = t.strings.intern("s" + std::to_string(id));
    t.add_span(r);
  };
  add(1, 0xabcde, 0, 100);    // top level: the recorder's span
  add(2, 1, 10, 20);          // nested
  add(3, 0xabcde, 200, 300);  // top level again
  std::ostringstream out;
  exporter::write_spans_json(t, out);
  std::vector<Exported> spans = parse_json(out.str());
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_TRUE(spans[0].parent_id.empty());
  EXPECT_EQ(spans[0].remote, "0x00000000000abcde");
  EXPECT_EQ(spans[1].parent_id, spans[0].span_id);
  EXPECT_EQ(spans[1].link, "explicit");
  EXPECT_TRUE(spans[1].remote.empty());
  EXPECT_EQ(spans[2].remote, "0x00000000000abcde");
  std::ostringstream chrome;
  exporter::write_chrome_trace(t, chrome);
  EXPECT_NE(chrome.str().find("\"remote_parent_id\":\"0x00000000000abcde\""), std::string::npos);
}

TEST(ExportTree, AChildProcessHangsUnderTheSpanThatStartedIt) {
  // `strata.inject_context()` / TRACEPARENT: the child's top-level span names a span of its parent
  // process, which is in the file under another pid.
  trace::Trace t;
  trace::Process parent, child;
  parent.pid = 10;
  child.pid = 11;
  t.add_process(parent);
  t.add_process(child);
  auto add = [&](uint16_t process, uint64_t id, uint64_t recorded_parent, int64_t s, int64_t e) {
    SpanRecord r;
    r.span_id = id;
    r.parent_id = recorded_parent;
    r.process = process;
    r.tid = process == 0 ? 10 : 11;
    r.start_ns = s;
    r.end_ns = e;
    r.level = static_cast<uint8_t>(Level::kModel);
    r.name = t.strings.intern("s" + std::to_string(id));
    t.add_span(r);
  };
  add(0, 0x1000, 0, 0, 1000);     // parent_step in the parent process
  add(1, 0x2000, 0x1000, 100, 200);  // child_step: its recorded parent is in the other process
  std::ostringstream out;
  exporter::write_spans_json(t, out);
  std::vector<Exported> spans = parse_json(out.str());
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[1].parent_id, spans[0].span_id);
  EXPECT_EQ(spans[1].link, "process");
  EXPECT_TRUE(spans[1].remote.empty());
  std::ostringstream chrome;
  exporter::write_chrome_trace(t, chrome);
  EXPECT_NE(chrome.str().find("{\"ph\":\"s\",\"name\":\"process\""), std::string::npos) << chrome.str();
}

TEST(ExportTree, ChromeShowsEveryTreeEdgeByNestingOrOneFlow) {
  trace::Trace t = kineto_trace();
  const trace::SpanTree& tree = t.tree();
  const trace::TrackTable& tracks = t.tracks();
  // Edges that nesting cannot show: the parent is on another track or does not enclose the child.
  size_t expected_flows = 0;
  std::map<std::string, size_t> expected_by_link;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const int32_t p = tree.parent(i);
    if (p == trace::kNoParent || t.spans[p].kind == static_cast<uint8_t>(SpanKind::kCounter)) continue;
    const SpanRecord& c = t.spans[i];
    const SpanRecord& q = t.spans[p];
    const bool nested =
        tracks.track_of(c) == tracks.track_of(q) && q.start_ns <= c.start_ns && c.end_ns <= q.end_ns;
    if (!nested) {
      ++expected_flows;
      ++expected_by_link[std::string(trace::link_kind_name(tree.link(i)))];
    }
  }
  ASSERT_GT(expected_flows, 0u);
  std::ostringstream out;
  exporter::write_chrome_trace(t, out);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out.str()).get(doc), simdjson::SUCCESS);
  std::map<int64_t, int> starts, ends;
  std::map<std::string, size_t> by_link;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    std::string_view ph = e["ph"].get_string().value();
    if (ph == "s") {
      ++starts[e["id"].get_int64().value()];
      ++by_link[std::string(e["name"].get_string().value())];
    } else if (ph == "f") {
      ++ends[e["id"].get_int64().value()];
    }
  }
  EXPECT_EQ(starts.size(), expected_flows);
  EXPECT_EQ(by_link, expected_by_link);
  for (const auto& [id, n] : starts) {
    EXPECT_EQ(n, 1) << "flow id " << id << " used twice";
    EXPECT_EQ(ends[id], 1) << "flow id " << id << " has no end";
  }
  EXPECT_EQ(ends.size(), starts.size());
}

}  // namespace
}  // namespace strata
