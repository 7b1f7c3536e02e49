// Each CPU sample carries the span open on its thread when it was taken. Checked on a real run of the
// Python span API (Debian's CPython 3.11, two threads, nested spans, time between spans) against an
// offline join of the sample times with the span intervals by thread and time.
#include <algorithm>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

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

// One recording shared by the tests below (each run of Python costs a second or two).
class SampleSpans : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    if (access("/usr/bin/python3", X_OK) != 0) return;
    write_file(dir_->file("spans.py"), kScript);
    const std::string cmd = "PYTHONPATH=" + std::string(STRATA_BINARY_DIR) + "/lib/python " + strata_tool() +
                            " record --quiet --sample --level layer -o " + dir_->file("t.strata") +
                            " -- /usr/bin/python3 " + dir_->file("spans.py");
    status_ = run_command(cmd, &output_);
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override {
    if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
    ASSERT_EQ(status_, 0) << output_;
  }
  static TempDir* dir_;
  static int status_;
  static std::string output_;
};
TempDir* SampleSpans::dir_ = nullptr;
int SampleSpans::status_ = -1;
std::string SampleSpans::output_;

TEST_F(SampleSpans, SamplesCarryTheSpanOpenOnTheirThreadAsAnOfflineJoinFindsIt) {
  TempDir& dir = *dir_;
  const std::string& output = output_;
  trace::Trace trace;
  std::string error;
  ASSERT_TRUE(trace::load_trace(dir.file("t.strata"), &trace, &error)) << error;
  ASSERT_FALSE(trace.samples.timeline.empty());

  // Offline: spans per (process, thread); the innermost span containing t is the latest-starting one.
  std::map<std::pair<uint16_t, uint32_t>, std::vector<const SpanRecord*>> by_thread;
  for (const SpanRecord& s : trace.spans) by_thread[{s.process, s.tid}].push_back(&s);
  std::map<uint64_t, std::string> names;
  for (const SpanRecord& s : trace.spans) names[s.span_id] = std::string(trace.name(s));
  uint64_t agree = 0, near_edge = 0, disagree = 0;
  std::map<std::string, uint64_t> per_span;
  for (const trace::SamplePoint& p : trace.samples.timeline) {
    const SpanRecord* inner = nullptr;
    int64_t edge_distance = INT64_MAX;
    for (const SpanRecord* s : by_thread[{p.process, p.tid}]) {
      edge_distance = std::min<int64_t>(
          {edge_distance, std::abs(p.time_ns - s->start_ns), std::abs(p.time_ns - s->end_ns)});
      if (s->start_ns <= p.time_ns && p.time_ns < s->end_ns &&
          (inner == nullptr || s->start_ns >= inner->start_ns))
        inner = s;
    }
    const uint64_t expected = inner ? inner->span_id : 0;
    per_span[p.span_id ? names[p.span_id] : "(none)"] += p.weight;
    if (expected == p.span_id)
      ++agree;
    else if (edge_distance < 50'000)
      ++near_edge;  // within 50 us of a span's edge: clock conversion
    else {
      ++disagree;
      ADD_FAILURE() << "sample at " << p.time_ns << " on thread " << p.tid << " carries span " << std::hex
                    << p.span_id << " (" << names[p.span_id] << "), the join finds " << expected << " ("
                    << names[expected] << ")";
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

// The folded stacks read back give the same profile as the CSV rows: every sample once, the same
// self (leaf) and total (anywhere on the stack) count per function, the ops as root frames.
TEST_F(SampleSpans, CollapsedOutputRoundTrips) {
  std::string collapsed, csv;
  ASSERT_EQ(
      run_command(strata_tool() + " profile " + dir_->file("t.strata") + " --format collapsed 2>/dev/null",
                  &collapsed),
      0);
  ASSERT_EQ(
      run_command(strata_tool() + " profile " + dir_->file("t.strata") + " --format csv 2>/dev/null", &csv),
      0);
  std::map<std::string, uint64_t> self, total, ops;
  uint64_t samples = 0;
  std::istringstream in(collapsed);
  std::string line;
  while (std::getline(in, line)) {
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    const uint64_t n = std::stoull(line.substr(space + 1));
    samples += n;
    std::vector<std::string> frames;
    std::istringstream fs(line.substr(0, space));
    for (std::string f; std::getline(fs, f, ';');) frames.push_back(f);
    std::set<std::string> seen;
    std::vector<std::string> functions;
    for (const std::string& f : frames) {
      if (f.rfind(profile::kOpFramePrefix, 0) == 0) {
        ASSERT_TRUE(functions.empty()) << "an op frame below a function: " << line;
        ops[f.substr(std::strlen(profile::kOpFramePrefix))] += n;
        continue;
      }
      functions.push_back(f);
      if (seen.insert(f).second) total[f] += n;
    }
    ASSERT_FALSE(functions.empty()) << line;
    self[functions.back()] += n;
  }
  // CSV: rank,name,where,self,total,self_pct,total_pct,parent (names here hold no comma or quote).
  std::istringstream rows(csv);
  std::getline(rows, line);
  uint64_t csv_self = 0, checked = 0;
  while (std::getline(rows, line)) {
    if (line.find('"') != std::string::npos) continue;  // a quoted name: not parsed here
    std::vector<std::string> cells;
    std::istringstream cs(line);
    for (std::string c; std::getline(cs, c, ',');) cells.push_back(c);
    ASSERT_GE(cells.size(), 7u) << line;
    const uint64_t row_self = std::stoull(cells[3]), row_total = std::stoull(cells[4]);
    csv_self += row_self;
    EXPECT_EQ(self[cells[1]], row_self) << cells[1];
    EXPECT_EQ(total[cells[1]], row_total) << cells[1];
    ++checked;
  }
  EXPECT_GT(checked, 10u);
  EXPECT_LE(csv_self, samples);
  Shares s = function_shares(dir_->file("t.strata"));
  EXPECT_EQ(samples, s.samples);
  for (const char* op : {"w_op", "main_op", "inner"}) EXPECT_GT(ops[op], 0u) << op;
  EXPECT_GE(ops["main_op"], ops["inner"]);  // inner runs inside main_op: its samples are main_op's too
}

// pprof output decodes with protoc against the published profile.proto (Debian's
// golang-github-google-pprof-dev) with the table's totals: every sample once, and per "op" label
// the samples `--by op` gives the op.
TEST_F(SampleSpans, PprofDecodesAgainstProfileProtoWithTheTableTotals) {
  const std::string proto_dir = "/usr/share/gocode/src/github.com/google/pprof/proto";
  if (access((proto_dir + "/profile.proto").c_str(), R_OK) != 0 || access("/usr/bin/protoc", X_OK) != 0)
    GTEST_SKIP() << "protoc or profile.proto missing (apt-get install protobuf-compiler "
                    "golang-github-google-pprof-dev)";
  std::string output, decoded, csv;
  const std::string pb = dir_->file("p.pb.gz");
  ASSERT_EQ(
      run_command(strata_tool() + " profile " + dir_->file("t.strata") + " --format pprof -o " + pb, &output),
      0)
      << output;
  ASSERT_EQ(run_command("gunzip -c " + pb + " | protoc --decode perftools.profiles.Profile -I " + proto_dir +
                            " " + proto_dir + "/profile.proto 2>&1",
                        &decoded),
            0)
      << decoded.substr(0, 2000);
  // Text format: sample { location_id: .. value: COUNT value: NS label { key: K str: S } ... },
  // then string_table: "..." lines in index order.
  std::vector<std::string> table;
  std::vector<std::pair<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>>>
      samples;  // count, labels (key, str)
  std::istringstream in(decoded);
  std::string line;
  int depth = 0, values = 0;
  uint64_t key = 0;
  while (std::getline(in, line)) {
    const std::string t =
        line.substr(line.find_first_not_of(' ') == std::string::npos ? 0 : line.find_first_not_of(' '));
    if (depth == 0 && t == "sample {") {
      samples.push_back({});
      values = 0;
    }
    if (t.size() >= 1 && t.back() == '{') ++depth;
    if (t == "}") --depth;
    if (depth == 1 && !samples.empty() && t.rfind("value: ", 0) == 0 && values++ == 0)
      samples.back().first = std::stoull(t.substr(7));
    if (depth == 2 && !samples.empty() && t.rfind("key: ", 0) == 0) key = std::stoull(t.substr(5));
    if (depth == 2 && !samples.empty() && t.rfind("str: ", 0) == 0)
      samples.back().second.push_back({key, std::stoull(t.substr(5))});
    if (depth == 0 && t.rfind("string_table: \"", 0) == 0) table.push_back(t.substr(15, t.size() - 16));
  }
  ASSERT_FALSE(samples.empty()) << decoded.substr(0, 2000);
  uint64_t total = 0;
  std::map<std::string, uint64_t> per_op;
  for (const auto& [count, labels] : samples) {
    total += count;
    for (const auto& [k, v] : labels) {
      ASSERT_LT(k, table.size());
      ASSERT_LT(v, table.size());
      if (table[k] == "op") per_op[table[v]] += count;
    }
  }
  Shares s = function_shares(dir_->file("t.strata"));
  EXPECT_EQ(total, s.samples);
  ASSERT_EQ(
      run_command(strata_tool() + " profile " + dir_->file("t.strata") + " --by op --format csv 2>/dev/null",
                  &csv),
      0);
  std::istringstream rows(csv);
  std::getline(rows, line);
  size_t ops = 0;
  while (std::getline(rows, line)) {
    std::vector<std::string> cells;
    std::istringstream cs(line);
    for (std::string c; std::getline(cs, c, ',');) cells.push_back(c);
    if (cells.size() < 7 || (cells.size() > 7 && !cells[7].empty()) || cells[1].front() == '(')
      continue;  // culprits, outside
    EXPECT_EQ(per_op[cells[1]], std::stoull(cells[3])) << cells[1];
    ++ops;
  }
  EXPECT_EQ(ops, 3u) << csv;
}

// The Chrome export draws every sample as an instant event on its thread, with its span.
TEST_F(SampleSpans, ChromeExportHasEverySampleOnItsThread) {
  std::string output;
  const std::string json = dir_->file("t.json");
  ASSERT_EQ(run_command(strata_tool() + " export " + dir_->file("t.strata") + " --format chrome -o " + json,
                        &output),
            0)
      << output;
  const std::string text = read_file(json);
  trace::Trace trace;
  std::string error;
  ASSERT_TRUE(trace::load_trace(dir_->file("t.strata"), &trace, &error)) << error;
  std::map<uint32_t, uint64_t> expected, got;  // samples per thread
  uint64_t with_span = 0;
  for (const trace::SamplePoint& p : trace.samples.timeline) {
    ++expected[p.tid];
    with_span += p.span_id != 0;
  }
  uint64_t spans_seen = 0;
  for (size_t at = text.find("\"cat\":\"cpu_sample\""); at != std::string::npos;
       at = text.find("\"cat\":\"cpu_sample\"", at + 1)) {
    const size_t tid = text.find("\"tid\":", at), end = text.find('\n', at);
    ASSERT_LT(tid, end);
    ++got[static_cast<uint32_t>(std::stoul(text.substr(tid + 6)))];
    const size_t span = text.find("\"span_id\":", at);
    spans_seen += span < end;
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(spans_seen, with_span);
}

// speedscope's JSON: read back with Python's json, the weights add up to every sample, each stack
// indexes the shared frames, and the ops lead stacks as "[op] NAME" frames.
TEST_F(SampleSpans, SpeedscopeJsonHoldsEverySample) {
  std::string output, check;
  const std::string out = dir_->file("s.speedscope.json");
  ASSERT_EQ(
      run_command(strata_tool() + " profile " + dir_->file("t.strata") + " --format speedscope -o " + out,
                  &output),
      0)
      << output;
  const std::string script =
      "import json,sys\n"
      "d=json.load(open(sys.argv[1]))\n"
      "n=len(d['shared']['frames'])\n"
      "assert d['profiles'], 'no profile'\n"
      "for p in d['profiles']:\n"
      "  assert p['type']=='sampled' and len(p['samples'])==len(p['weights']), p['name']\n"
      "  assert p['endValue']==sum(p['weights']), p['name']\n"
      "  assert all(0<=i<n for s in p['samples'] for i in s), 'frame index out of range'\n"
      "ops=sum(1 for f in d['shared']['frames'] if f['name'].startswith('[op] '))\n"
      "print(sum(sum(p['weights']) for p in d['profiles']), len(d['profiles']), ops)\n";
  write_file(dir_->file("check.py"), script);
  ASSERT_EQ(run_command("/usr/bin/python3 " + dir_->file("check.py") + " " + out, &check), 0) << check;
  std::istringstream in(check);
  uint64_t weights = 0, profiles = 0, ops = 0;
  in >> weights >> profiles >> ops;
  EXPECT_EQ(weights, function_shares(dir_->file("t.strata")).samples);
  EXPECT_GE(profiles, 2u);  // the main thread and the worker
  EXPECT_EQ(ops, 3u);       // w_op, main_op, inner
}

}  // namespace
}  // namespace strata::testing
