// Activity types and canonical keys set where imported spans enter, checked on real traces:
// - every event of six real Kineto traces (A100, V100, MI250, an NCCL rank, two H100) gets the type
//   an independent reading of its category says (the expectation below is written from Kineto's
//   ActivityType names, not from the importer's table);
// - the format 1.0 upgrade (trace/activity_upgrade.h) gives the same types as today's importer on
//   the same traces, and 1.0 files that 1.0 `strata import` wrote load with today's types and keys;
// - ONNX Runtime and TensorFlow traces; a file laid out as the 1.0 CUPTI collector wrote it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "../test_util.h"
#include "core/attr_keys.h"
#include "core/crc32c.h"
#include "import/chrome_json.h"
#include "import/importer.h"
#include "import_test_util.h"
#include "trace/activity_upgrade.h"
#include "trace/trace_loader.h"
#include "trace/trace_saver.h"

namespace strata::testing {
namespace {

using import::ChromeEvent;

const char* const kKinetoTraces[] = {"a100_alexnet_train.json.gz", "v100_train_rank0.json.gz",
                                     "mi250_train.json.gz",        "multirank_rank0.json.gz",
                                     "h100_bert_small.json.gz",    "h100_cuda_sync_small.json"};

std::string kineto_path(const std::string& file) { return source_path("tests/data/kineto/" + file); }

std::string read_maybe_gz(const std::string& path) {
  return path.size() > 3 && path.substr(path.size() - 3) == ".gz" ? gunzip_file(path) : read_file(path);
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// What an event is, read from Kineto's category the way Kineto's own ActivityType names it.
ActivityType expected_activity(const ChromeEvent& ev) {
  if (ev.ph == "i" || ev.ph == "I") return ev.name == "[memory]" ? ActivityType::kMemoryEvent : ActivityType::kAnnotation;
  const std::string_view cat = ev.cat;
  if (cat == "cpu_op") {
    static const std::set<std::string_view> kCopies = {"aten::copy_", "aten::to", "aten::_to_copy", "aten::clone",
                                                       "aten::contiguous"};
    return kCopies.count(ev.name) ? ActivityType::kTensorCopy : ActivityType::kCpuOp;
  }
  if (cat == "kernel")
    return starts_with(ev.name, "nccl") ? ActivityType::kCollective : ActivityType::kKernel;
  if (cat == "gpu_memcpy") {
    // ROCm: args.kind; CUDA: "Memcpy HtoD (Pinned -> Device)".
    std::string_view code = ev.name.substr(7, 4);
    if (const auto* k = ev.arg("kind"); k && k->kind == import::JsonScalar::kString) code = k->text;
    if (code == "HtoD") return ActivityType::kMemcpyHtoD;
    if (code == "DtoH") return ActivityType::kMemcpyDtoH;
    if (code == "DtoD") return ActivityType::kMemcpyDtoD;
    ADD_FAILURE() << "copy direction not in the test's list: " << ev.name;
    return ActivityType::kUnknown;
  }
  if (cat == "gpu_memset") return ActivityType::kMemset;
  if (cat == "cuda_runtime") return ActivityType::kRuntimeCall;
  if (cat == "cuda_driver") return ActivityType::kDriverCall;
  if (cat == "cuda_sync") return ActivityType::kSync;
  if (cat == "gpu_user_annotation") return ActivityType::kDeviceRange;
  if (cat == "user_annotation" || cat == "Trace") return ActivityType::kAnnotation;
  if (cat == "python_function") return ActivityType::kPythonFunction;
  if (cat == "cuda_profiler_range") return ActivityType::kDeviceRange;  // a profiler range, not a kernel
  ADD_FAILURE() << "category not in the test's list: " << cat;
  return ActivityType::kUnknown;
}

using NameType = std::pair<std::string, uint8_t>;

TEST(ActivityImport, KinetoCategoriesOfRealTracesBecomeActivityTypes) {
  std::map<std::string, std::map<ActivityType, uint64_t>> seen;
  for (const char* file : kKinetoTraces) {
    const std::string path = kineto_path(file);
    std::multiset<NameType> expected;
    import::ChromeDocument doc;
    std::string error;
    const std::string json = read_maybe_gz(path);
    ASSERT_TRUE(import::parse_chrome_trace(json, path, &doc, [&](const ChromeEvent& ev) {
      if (ev.ph == "X" || ev.ph == "i" || ev.ph == "I")
        expected.insert({std::string(ev.name), static_cast<uint8_t>(expected_activity(ev))});
    }, &error)) << error;

    trace::Trace t;
    import::ImportStats stats;
    ASSERT_TRUE(import::import_trace_with_stats(path, &t, &error, {}, &stats)) << error;
    EXPECT_EQ(import::dropped_events(stats), 0u) << file;
    std::multiset<NameType> actual;
    for (const SpanRecord& s : t.spans) {
      if (s.kind == static_cast<uint8_t>(SpanKind::kCounter)) continue;
      actual.insert({std::string(t.name(s)), s.activity});
      ++seen[file][s.activity_type()];
    }
    EXPECT_EQ(actual.size(), expected.size()) << file;
    std::vector<NameType> missing, extra;
    std::set_difference(expected.begin(), expected.end(), actual.begin(), actual.end(), std::back_inserter(missing));
    std::set_difference(actual.begin(), actual.end(), expected.begin(), expected.end(), std::back_inserter(extra));
    EXPECT_TRUE(missing.empty()) << file << ": " << missing.size() << " differ, first " << missing[0].first
                                 << " expected " << activity_name(missing[0].second) << ", got "
                                 << (extra.empty() ? "-" : activity_name(extra[0].second));
  }
  // The traces hold what the vocabulary is for (counts from the JSON categories).
  EXPECT_EQ(seen["multirank_rank0.json.gz"][ActivityType::kCollective], 10u);
  EXPECT_EQ(seen["multirank_rank0.json.gz"][ActivityType::kMemcpyHtoD], 24u);
  EXPECT_EQ(seen["multirank_rank0.json.gz"][ActivityType::kMemcpyDtoH], 8u);
  EXPECT_EQ(seen["multirank_rank0.json.gz"][ActivityType::kMemcpyDtoD], 8u);
  EXPECT_EQ(seen["multirank_rank0.json.gz"][ActivityType::kMemset], 10u);
  EXPECT_EQ(seen["mi250_train.json.gz"][ActivityType::kMemcpyHtoD], 2u);  // from args.kind
  EXPECT_EQ(seen["h100_cuda_sync_small.json"][ActivityType::kSync], 2u);
  EXPECT_EQ(seen["h100_bert_small.json.gz"][ActivityType::kPythonFunction], 1385u);
  EXPECT_EQ(seen["h100_bert_small.json.gz"][ActivityType::kDriverCall], 22u);
  EXPECT_EQ(seen["h100_bert_small.json.gz"][ActivityType::kMemoryEvent], 236u);
  EXPECT_EQ(seen["v100_train_rank0.json.gz"][ActivityType::kDeviceRange], 15u);
  EXPECT_GT(seen["v100_train_rank0.json.gz"][ActivityType::kTensorCopy], 0u);
}

// Kineto's spellings become canonical keys: what each fact was called in the JSON, counted there.
TEST(ActivityImport, KinetoArgsBecomeCanonicalKeys) {
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(import::import_trace(kineto_path("multirank_rank0.json.gz"), &t, &error)) << error;
  const std::string json = gunzip_file(kineto_path("multirank_rank0.json.gz"));
  auto count_key = [&](std::string_view key) {
    uint32_t id = t.strings.find(key);
    size_t n = 0;
    for (const AttrRecord& a : t.attrs) n += a.key == id;
    return n;
  };
  EXPECT_EQ(count_key(attr_keys::kShapes), count_occurrences(json, "\"Input Dims\""));
  EXPECT_EQ(count_key(attr_keys::kExternalCorrelationId), count_occurrences(json, "\"External id\""));
  EXPECT_EQ(count_key(attr_keys::kAchievedOccupancy), count_occurrences(json, "\"est. achieved occupancy %\""));
  EXPECT_EQ(count_key(attr_keys::kGridX), count_occurrences(json, "\"grid\""));
  EXPECT_EQ(count_key(attr_keys::kBlockZ), count_occurrences(json, "\"block\""));
  EXPECT_EQ(count_key(attr_keys::kSrcKind), 40u);  // every "Memcpy XtoY (src -> dst)"
  for (const char* kineto : {"Input Dims", "External id", "est. achieved occupancy %", "grid", "block",
                             "registers per thread", "shared memory"})
    EXPECT_EQ(count_key(kineto), 0u) << kineto;
  // A DtoH copy from device to pageable memory.
  bool found = false;
  for (size_t i = 0; i < t.spans.size() && !found; ++i) {
    if (t.name(t.spans[i]) != "Memcpy DtoH (Device -> Pageable)") continue;
    found = true;
    EXPECT_EQ(t.spans[i].activity_type(), ActivityType::kMemcpyDtoH);
    EXPECT_EQ(t.attr_value_string(*t.find_attr(i, attr_keys::kSrcKind)), "device");
    EXPECT_EQ(t.attr_value_string(*t.find_attr(i, attr_keys::kDstKind)), "pageable");
  }
  EXPECT_TRUE(found);
}

// The 1.0 upgrade reads what 1.0 imports left (levels, kinds, names, Kineto's own args): on the real
// traces it gives every span the type today's importer gives it.
TEST(ActivityImport, FormatUpgradeAgreesWithTodaysImport) {
  for (const char* file : kKinetoTraces) {
    trace::Trace t;
    std::string error;
    ASSERT_TRUE(import::import_trace(kineto_path(file), &t, &error)) << error;
    std::vector<uint8_t> imported;
    for (SpanRecord& s : t.spans) {
      imported.push_back(s.activity);
      s.activity = 0;
    }
    trace::UpgradeCounts up = trace::upgrade_untyped_spans(&t);
    EXPECT_EQ(up.spans_typed, t.spans.size()) << file;
    size_t differ = 0;
    for (size_t i = 0; i < t.spans.size(); ++i)
      if (t.spans[i].activity != imported[i] && differ++ < 3)
        ADD_FAILURE() << file << ": " << t.name(t.spans[i]) << " upgraded to " << activity_name(t.spans[i].activity)
                      << ", imported as " << activity_name(imported[i]);
    EXPECT_EQ(differ, 0u) << file;
  }
}

struct SpanKey {
  int64_t start, end;
  std::string name;
  uint8_t level, kind;
  auto operator<=>(const SpanKey&) const = default;
};

// What analyses read of a span: its type and its canonical facts.
std::string facts(const trace::Trace& t, size_t i) {
  std::string out = activity_name(t.spans[i].activity);
  for (std::string_view key : {attr_keys::kShapes, attr_keys::kExternalCorrelationId, attr_keys::kAchievedOccupancy,
                               attr_keys::kAllocBytes, attr_keys::kStep, attr_keys::kOpType, attr_keys::kBytes})
    if (auto a = t.find_attr(i, key)) {
      // Today's importer gives every op in a trace with "[memory]" events its allocated bytes, 0
      // included (docs/memory.md); 1.0 wrote only the ops that allocated. 0 and absent agree.
      if (key == attr_keys::kAllocBytes && t.attr_value_string(*a) == "0") continue;
      out += " " + std::string(key) + "=" + t.attr_value_string(*a);
    }
  return out;
}

std::map<SpanKey, std::multiset<std::string>> by_key(const trace::Trace& t) {
  std::map<SpanKey, std::multiset<std::string>> m;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const SpanRecord& s = t.spans[i];
    // Today's importer also derives the allocator's counter track from Kineto's "[memory]" events
    // (docs/memory.md); 1.0 did not, so counter samples are left out of the comparison.
    if (s.kind == static_cast<uint8_t>(SpanKind::kCounter)) continue;
    m[{s.start_ns, s.end_ns, std::string(t.name(s)), s.level, s.kind}].insert(facts(t, i));
  }
  return m;
}

// Files the 1.0 `strata import` wrote (tests/data/format_1_0) load with the types and canonical keys
// that importing the same JSON gives today.
TEST(ActivityImport, Format10ImportsLoadAsTodaysImports) {
  const std::pair<const char*, const char*> cases[] = {
      {"a100_alexnet_train.trace", "tests/data/kineto/a100_alexnet_train.json.gz"},
      {"multirank_rank0.trace", "tests/data/kineto/multirank_rank0.json.gz"},
      {"h100_bert_small.trace", "tests/data/kineto/h100_bert_small.json.gz"},
      {"h100_cuda_sync_small.trace", "tests/data/kineto/h100_cuda_sync_small.json"},
      {"tf_timeline.trace", "tests/import/data/tf_timeline.json"},
      {"ort_profile.trace", "tests/import/data/ort_profile.json"},
  };
  for (const auto& [old_file, json] : cases) {
    trace::Trace old_trace, today;
    std::string error;
    ASSERT_TRUE(
        trace::load_trace(source_path(std::string("tests/data/format_1_0/") + old_file), &old_trace, &error))
        << error;
    ASSERT_TRUE(import::import_trace(source_path(json), &today, &error)) << error;
    EXPECT_EQ(old_trace.stats.get(stats::Stat::kLoadActivityUpgraded), old_trace.spans.size()) << old_file;
    auto a = by_key(old_trace), b = by_key(today);
    ASSERT_EQ(a.size(), b.size()) << old_file;
    size_t differ = 0;
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
      if (ia->first == ib->first && ia->second == ib->second) continue;
      if (differ++ < 3)
        ADD_FAILURE() << old_file << ": " << ia->first.name << ": 1.0 file " << *ia->second.begin() << "; today "
                      << *ib->second.begin();
    }
    EXPECT_EQ(differ, 0u) << old_file;
  }
}

TEST(ActivityImport, OnnxRuntimeAndTensorFlow) {
  auto count = [](const trace::Trace& t) {
    std::map<std::pair<std::string, ActivityType>, int> m;
    for (const SpanRecord& s : t.spans) ++m[{level_name(s.level), s.activity_type()}];
    return m;
  };
  trace::Trace ort, tf1, tf2;
  std::string error;
  ASSERT_TRUE(import::import_trace(source_path("tests/import/data/ort_profile.json"), &ort, &error)) << error;
  ASSERT_TRUE(import::import_trace(source_path("tests/import/data/tf_timeline.json"), &tf1, &error)) << error;
  ASSERT_TRUE(import::import_trace(source_path("tests/import/data/tf2_trace.json"), &tf2, &error)) << error;
  const std::map<std::string, ActivityType> ort_types = {
      {"layer", ActivityType::kCpuOp}, {"model", ActivityType::kAnnotation}, {"device", ActivityType::kKernel},
      {"runtime_api", ActivityType::kRuntimeCall}, {"application", ActivityType::kAnnotation}};
  for (const auto& [key, n] : count(ort)) EXPECT_EQ(key.second, ort_types.at(key.first)) << key.first;
  EXPECT_GT((count(ort)[{"layer", ActivityType::kCpuOp}]), 0);
  EXPECT_GT((count(tf1)[{"device", ActivityType::kKernel}]), 0);
  EXPECT_GT((count(tf1)[{"layer", ActivityType::kCpuOp}]), 0);
  EXPECT_GT((count(tf2)[{"device", ActivityType::kKernel}]), 0);
}

// TensorFlow names its copies by op type; a GPU stream's copy ops become copies by direction.
TEST(ActivityImport, TensorFlowCopyOps) {
  const std::string json = R"({"traceEvents": [
    {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0/stream:14 Compute"}},
    {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "/device:GPU:0/memcpy Compute"}},
    {"ph": "X", "cat": "Op", "name": "MatMul", "pid": 1, "tid": 0, "ts": 10, "dur": 5, "args": {"name": "dense/MatMul", "op": "MatMul"}},
    {"ph": "X", "cat": "Op", "name": "MEMCPYHtoD", "pid": 2, "tid": 0, "ts": 1, "dur": 5, "args": {"name": "edge_1_x", "op": "MEMCPYHtoD"}},
    {"ph": "X", "cat": "Op", "name": "MEMCPYDtoH", "pid": 2, "tid": 0, "ts": 20, "dur": 5, "args": {"name": "edge_2_y", "op": "MEMCPYDtoH"}},
    {"ph": "X", "cat": "Op", "name": "edge_3:MemcpyD2D", "pid": 2, "tid": 0, "ts": 30, "dur": 5}
  ]})";
  trace::Trace t;
  std::string error;
  import::ImportOptions opts;
  opts.format = "tensorflow";
  ASSERT_TRUE(import::import_buffer(json, "tf.json", &t, &error, opts)) << error;
  std::map<std::string, ActivityType> by_name;
  for (const SpanRecord& s : t.spans) by_name[std::string(t.name(s))] = s.activity_type();
  EXPECT_EQ(by_name["dense/MatMul"], ActivityType::kKernel);
  EXPECT_EQ(by_name["edge_1_x"], ActivityType::kMemcpyHtoD);
  EXPECT_EQ(by_name["edge_2_y"], ActivityType::kMemcpyDtoH);
  EXPECT_EQ(by_name["edge_3:MemcpyD2D"], ActivityType::kMemcpyDtoD);
}

// Rewrites a trace file's header as format 1.0 (the layout is otherwise the same; the spans' byte 62
// must be 0, as 1.0 writers left it).
void mark_format_1_0(const std::string& path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  char header[32];
  f.read(header, 32);
  header[10] = 0;
  header[11] = 0;
  uint32_t crc = crc32c(header, 28);
  std::memcpy(header + 28, &crc, 4);
  f.seekp(0);
  f.write(header, 32);
}

// A trace laid out as the 1.0 CUPTI collector wrote it (git show 4ced071:src/gpu/activity_translator.cc
// and cupti_collector.cc): device records carry "category" (and "copy_kind"), API calls "category"
// (their class) and "api", kernels "external_id".
TEST(ActivityImport, Format10CuptiSpansAreTypedFromTheirAttributes) {
  trace::Trace t;
  t.add_process(trace::Process{});
  auto add = [&](const char* name, Level level, SpanKind kind, std::vector<AttrRecord> attrs) {
    SpanRecord r;
    r.span_id = t.spans.size() + 1;
    r.start_ns = static_cast<int64_t>(t.spans.size()) * 10;
    r.end_ns = r.start_ns + 5;
    r.name = t.strings.intern(name);
    r.level = static_cast<uint8_t>(level);
    r.kind = static_cast<uint8_t>(kind);
    t.add_span(r, attrs);
  };
  auto cat = [&](const char* c) { return t.string_attr("category", c); };
  add("cudaLaunchKernel", Level::kRuntimeApi, SpanKind::kLaunch, {cat("launch"), t.string_attr("api", "runtime")});
  add("cuLaunchKernel", Level::kRuntimeApi, SpanKind::kLaunch, {cat("launch"), t.string_attr("api", "driver")});
  add("sgemm", Level::kDevice, SpanKind::kExecution, {cat("kernel"), t.int_attr("external_id", 7)});
  add("ncclKernel_AllReduce", Level::kDevice, SpanKind::kExecution, {cat("kernel")});
  add("memcpy HtoD", Level::kDevice, SpanKind::kExecution, {cat("memcpy"), t.string_attr("copy_kind", "HtoD")});
  add("memcpy AtoH", Level::kDevice, SpanKind::kExecution, {cat("memcpy"), t.string_attr("copy_kind", "AtoH")});
  add("memcpy PtoP", Level::kDevice, SpanKind::kExecution, {cat("memcpy"), t.string_attr("copy_kind", "PtoP")});
  add("memset", Level::kDevice, SpanKind::kExecution, {cat("memset")});
  add("cudaStreamSynchronize", Level::kDevice, SpanKind::kExecution, {cat("sync")});
  add("cudaGraph", Level::kDevice, SpanKind::kExecution, {cat("graph")});
  add("memory.allocation", Level::kDevice, SpanKind::kInstant, {cat("memory")});
  add("overhead.cupti_buffer_flush", Level::kRuntimeApi, SpanKind::kSpan, {cat("overhead")});
  add("cupti.session", Level::kRuntimeApi, SpanKind::kInstant, {});
  add("conv1", Level::kLayer, SpanKind::kSpan, {t.string_attr("source", "nvtx")});
  add("cudnnConvolutionForward", Level::kLibrary, SpanKind::kSpan, {t.string_attr("library", "cudnn")});
  TempDir dir;
  const std::string path = dir.file("cupti_1_0.trace");
  std::string error;
  ASSERT_TRUE(trace::save_trace(t, path, &error)) << error;
  mark_format_1_0(path);
  trace::Trace loaded;
  ASSERT_TRUE(trace::load_trace(path, &loaded, &error)) << error;
  ASSERT_EQ(loaded.spans.size(), 15u);
  const ActivityType want[] = {ActivityType::kRuntimeCall, ActivityType::kDriverCall,  ActivityType::kKernel,
                               ActivityType::kCollective,  ActivityType::kMemcpyHtoD,  ActivityType::kMemcpyDtoH,
                               ActivityType::kMemcpyPtoP,  ActivityType::kMemset,      ActivityType::kSync,
                               ActivityType::kGraph,       ActivityType::kMemoryEvent, ActivityType::kOverhead,
                               ActivityType::kAnnotation,  ActivityType::kAnnotation,  ActivityType::kLibraryCall};
  for (size_t i = 0; i < loaded.spans.size(); ++i)
    EXPECT_EQ(loaded.spans[i].activity_type(), want[i]) << loaded.name(loaded.spans[i]);
  EXPECT_EQ(loaded.stats.get(stats::Stat::kLoadActivityUpgraded), 15u);
  EXPECT_EQ(loaded.stats.get(stats::Stat::kLoadLegacyKeysRenamed), 1u);  // external_id -> issuing_span_id
  EXPECT_EQ(loaded.find_attr(2, attr_keys::kIssuingSpanId)->value.i, 7);

  // The same spans in a 1.1 file are not touched: unknown stays unknown, keys stay as written.
  trace::Trace current;
  ASSERT_TRUE(trace::save_trace(t, path, &error)) << error;
  ASSERT_TRUE(trace::load_trace(path, &current, &error)) << error;
  EXPECT_EQ(current.stats.get(stats::Stat::kLoadActivityUpgraded), 0u);
  EXPECT_EQ(current.spans[2].activity_type(), ActivityType::kUnknown);
  EXPECT_TRUE(current.find_attr(2, "external_id"));
}

// Spellings a 1.0 analysis read in order of preference: the one it read becomes the canonical key
// and comes first, so a value does not change when a span carried several.
TEST(ActivityImport, Format10KeyRenamesKeepTheValueThe10AnalysesRead) {
  trace::Trace t;
  t.add_process(trace::Process{});
  SpanRecord r;
  r.level = static_cast<uint8_t>(Level::kLayer);
  r.name = t.strings.intern("aten::conv2d");
  // "shapes" written before "shape": 1.0 read "shape" (its first alias) wherever it sat.
  t.add_span(r, std::vector<AttrRecord>{t.string_attr("shapes", "[[1]]"), t.string_attr("shape", "[[2]]"),
                                        t.string_attr("layer_type", "Conv"), t.int_attr("batch_size", 4),
                                        t.metric("dram_bytes", 10), t.metric("memory_bytes_accessed", 20)});
  trace::UpgradeCounts c = trace::upgrade_untyped_spans(&t);
  EXPECT_EQ(c.spans_typed, 1u);
  EXPECT_EQ(t.spans[0].activity_type(), ActivityType::kCpuOp);
  EXPECT_EQ(t.attr_value_string(*t.find_attr(0, attr_keys::kShapes)), "[[2]]");
  EXPECT_EQ(t.attr_value_string(*t.find_attr(0, attr_keys::kOpType)), "Conv");
  EXPECT_EQ(t.find_attr(0, attr_keys::kBatch)->value.i, 4);
  EXPECT_EQ(t.find_attr(0, attr_keys::kBytes)->value.d, 10);
  EXPECT_TRUE(t.find_attr(0, "memory_bytes_accessed"));  // never read by 1.0: left as it was
  EXPECT_EQ(c.keys_renamed, 4u);
}

}  // namespace
}  // namespace strata::testing
