#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../test_util.h"
#include "import/importer.h"
#include "import_test_util.h"
#include "trace/span_tree.h"

namespace strata::import {
namespace {

using strata::testing::source_path;

const trace::Process& only_process(const trace::Trace& t) {
  EXPECT_EQ(t.processes.size(), 1u);
  return t.processes.at(0);
}

int find_span(const trace::Trace& t, std::string_view name) {
  for (size_t i = 0; i < t.spans.size(); ++i)
    if (t.name(t.spans[i]) == name) return static_cast<int>(i);
  return -1;
}

TEST(KinetoImport, DamagedEventsAreCountedByCause) {
  trace::Trace t;
  std::string error;
  ImportStats stats;
  ASSERT_TRUE(
      import_trace_with_stats(source_path("tests/import/data/kineto_damaged.json"), &t, &error, {}, &stats))
      << error;
  EXPECT_EQ(strata::testing::imported_format(t), "kineto");
  EXPECT_EQ(stats.get(stats::Stat::kImportEventsRead), 16u);
  EXPECT_EQ(stats.get(stats::Stat::kImportSpansWritten), t.spans.size());
  const trace::Process& p = only_process(t);
  // One of each, as written into the fixture.
  const std::map<std::string, uint64_t> expected = {
      {"import.malformed_event", 1}, {"import.malformed_ts", 1},     {"import.missing_dur", 1},
      {"import.missing_phase", 1},   {"import.missing_ts", 1},       {"import.negative_duration", 1},
      {"import.unbound_flow", 1},    {"import.unsupported_phase", 1}};
  EXPECT_EQ(strata::testing::drops_of(p), expected);
  EXPECT_EQ(p.properties.get_int("import.unmapped_category.mystery"), 1);
  EXPECT_TRUE(p.properties.get("import.first_problem").has_value());
  // The good events: ProfilerStep, the op, its launch, the kernel, the unmapped one, and the "B"
  // whose "E" never comes: kept, flagged unfinished, ending at the latest time in the file (the end
  // of ProfilerStep#0, 1500 us).
  EXPECT_EQ(t.spans.size(), 6u);
  EXPECT_EQ(stats.get(stats::Stat::kImportUnfinishedSpans), 1u);
  int begin = find_span(t, "begin_event");
  ASSERT_GE(begin, 0);
  EXPECT_NE(t.spans[begin].flags & kSpanFlagUnfinished, 0);
  EXPECT_EQ(t.spans[begin].start_ns, 1300000);
  EXPECT_EQ(t.spans[begin].end_ns, 1500000);
}

// Host ops on a few pids in runs of random length, kernels on a device "pid" resolved to the host pid
// of the op with their correlation id (or to the main process when none has it): every span's
// process against a brute-force assignment, the processes in order of first appearance, the main
// one (the most host spans, the first on a tie) holding the import's properties.
TEST(KinetoImport, ProcessesByFirstAppearanceAndDeviceWorkByCorrelation) {
  std::mt19937 rng(31);
  const int64_t kPids[] = {4242, 77, 9001, 5};
  std::string json = "{\"traceEvents\": [";
  std::map<std::string, int64_t> expect_pid;  // by span name
  std::vector<int64_t> first_seen;
  std::map<int64_t, int> host_spans;
  std::map<int64_t, int64_t> pid_of_correlation;
  std::vector<std::string> kernels_by_correlation;  // resolved after the main pid is known
  std::map<std::string, int64_t> kernel_correlation;
  int64_t pid = kPids[0];
  for (int i = 0; i < 3000; ++i) {
    if (i) json += ",\n";
    const std::string ts = std::to_string(1000 + i);
    if (i > 0 && rng() % 3 == 0) {
      const int64_t corr = 1 + static_cast<int64_t>(rng() % (i + 50));  // some match no op
      const std::string name = "k" + std::to_string(i);
      kernel_correlation[name] = corr;
      json += "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" + name +
              "\", \"pid\": 0, \"tid\": 7, \"ts\": " + ts +
              ", \"dur\": 1, \"args\": {\"correlation\": " + std::to_string(corr) +
              ", \"device\": 0, \"stream\": 7}}";
      continue;
    }
    if (rng() % 6 == 0) pid = kPids[rng() % 4];
    const std::string name = "op" + std::to_string(i);
    expect_pid[name] = pid;
    if (host_spans[pid]++ == 0) first_seen.push_back(pid);
    pid_of_correlation.emplace(i + 1, pid);
    json += "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" + name +
            "\", \"pid\": " + std::to_string(pid) + ", \"tid\": 1, \"ts\": " + ts +
            ", \"dur\": 1, \"args\": {\"correlation\": " + std::to_string(i + 1) + "}}";
  }
  json += "]}";
  int64_t main_pid = first_seen.front();
  for (int64_t p : first_seen)
    if (host_spans[p] > host_spans[main_pid]) main_pid = p;
  for (const auto& [name, corr] : kernel_correlation) {
    auto it = pid_of_correlation.find(corr);
    expect_pid[name] = it != pid_of_correlation.end() ? it->second : main_pid;
  }
  strata::testing::TempDir dir;
  const std::string path = dir.file("pids.json");
  std::ofstream(path) << json;
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(import_trace(path, &t, &error)) << error;
  ASSERT_EQ(t.processes.size(), first_seen.size());
  for (size_t k = 0; k < first_seen.size(); ++k) {
    EXPECT_EQ(t.processes[k].pid, first_seen[k]) << k;
    EXPECT_EQ(t.processes[k].properties.get("import.first_problem").has_value() ||
                  t.processes[k].stats.get(stats::Stat::kImportEventsRead) != 0,
              first_seen[k] == main_pid)
        << "the import's counts are on the main process only";
  }
  ASSERT_EQ(t.spans.size(), expect_pid.size());
  for (const SpanRecord& s : t.spans) {
    const std::string name(t.name(s));
    ASSERT_EQ(t.processes.at(s.process).pid, expect_pid.at(name)) << name;
  }
}

TEST(KinetoImport, FieldsLevelsAndAttributes) {
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(import_trace(source_path("tests/import/data/kineto_damaged.json"), &t, &error)) << error;
  int op = find_span(t, "aten::addmm"), launch = find_span(t, "cudaLaunchKernel"),
      kernel = find_span(t, "gemm_kernel");
  int step = find_span(t, "ProfilerStep#0");
  ASSERT_GE(op, 0);
  ASSERT_GE(launch, 0);
  ASSERT_GE(kernel, 0);
  ASSERT_GE(step, 0);
  const SpanRecord& o = t.spans[op];
  EXPECT_EQ(o.level, static_cast<uint8_t>(Level::kLayer));
  EXPECT_EQ(o.start_ns, 1010500);
  EXPECT_EQ(o.end_ns, 1010500 + 100250);
  EXPECT_EQ(o.clock, static_cast<uint8_t>(ClockDomain::kImported));
  auto dims = t.find_attr(op, attr_keys::kShapes);  // Kineto's "Input Dims", translated at import
  ASSERT_TRUE(dims);
  EXPECT_EQ(t.attr_value_string(*dims), "[[4, 8], [4, 16], [16, 8]]");
  EXPECT_EQ(t.spans[step].level, static_cast<uint8_t>(Level::kModel));
  const SpanRecord& l = t.spans[launch];
  EXPECT_EQ(l.level, static_cast<uint8_t>(Level::kRuntimeApi));
  EXPECT_EQ(l.kind, static_cast<uint8_t>(SpanKind::kLaunch));
  EXPECT_EQ(l.correlation_id, 77u);
  const SpanRecord& k = t.spans[kernel];
  EXPECT_EQ(k.level, static_cast<uint8_t>(Level::kDevice));
  EXPECT_EQ(k.kind, static_cast<uint8_t>(SpanKind::kExecution));
  EXPECT_EQ(k.device, 0);
  EXPECT_EQ(k.stream, 7u);
  EXPECT_EQ(k.correlation_id, 77u);
  EXPECT_EQ(k.process, o.process);  // device work joins the process that launched it
  // Kineto's spellings become the canonical keys (core/attr_keys.h), its [x, y, z] arrays integers.
  auto registers = t.find_attr(kernel, attr_keys::kRegistersPerThread);
  ASSERT_TRUE(registers);
  EXPECT_EQ(registers->value.i, 64);
  EXPECT_FALSE(t.find_attr(kernel, "registers per thread"));
  EXPECT_EQ(t.find_attr(kernel, attr_keys::kGridX)->value.i, 4);
  EXPECT_EQ(t.find_attr(kernel, attr_keys::kGridY)->value.i, 1);
  EXPECT_EQ(t.find_attr(kernel, attr_keys::kBlockX)->value.i, 128);
  EXPECT_FALSE(t.find_attr(kernel, "grid"));
  EXPECT_EQ(t.find_attr(kernel, attr_keys::kExternalCorrelationId)->value.i, 2);
  EXPECT_EQ(t.find_attr(op, attr_keys::kInputTypes)->type, static_cast<uint8_t>(AttrType::kString));
  EXPECT_FALSE(t.find_attr(kernel, "correlation"));  // kept in the record, not duplicated
  // Activity types, set at import from Kineto's categories.
  EXPECT_EQ(o.activity_type(), ActivityType::kCpuOp);
  EXPECT_EQ(l.activity_type(), ActivityType::kRuntimeCall);
  EXPECT_EQ(k.activity_type(), ActivityType::kKernel);
  EXPECT_EQ(t.spans[step].activity_type(), ActivityType::kAnnotation);

  trace::SpanTree tree = trace::build_span_tree(t);
  EXPECT_EQ(tree.parent(kernel), launch);
  EXPECT_EQ(tree.external_owner(kernel), op);
  EXPECT_EQ(tree.parent(launch), op);
  EXPECT_EQ(tree.parent(op), step);
}

// Allocations ("[memory]" instants) become the enclosing ops' alloc_bytes: gross bytes allocated
// while the op ran, nested ops included; frees are not subtracted (the layer tracer's meaning).
// Expected from the fixture: linear (100..150 us) gets 1000 + 4096 + 8192 (CUDA) + 256, addmm
// (110..130 us) 4096 + 8192, relu 64, and aten::empty on thread 11 its 32; the 512 at 300 us is
// outside every op, the -4096 is a free, and one event has no Bytes.
TEST(KinetoImport, MemoryEventsBecomeAllocatedBytesOfTheirOps) {
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(import_trace(source_path("tests/import/data/kineto_memory.json"), &t, &error)) << error;
  auto bytes = [&](std::string_view op, std::string_view key) -> int64_t {
    int i = find_span(t, op);
    EXPECT_GE(i, 0) << op;
    if (i < 0) return -1;
    auto a = t.find_attr(static_cast<size_t>(i), key);
    return a ? a->value.i : -1;
  };
  EXPECT_EQ(bytes("aten::linear", "alloc_bytes"), 1000 + 4096 + 8192 + 256);
  EXPECT_EQ(bytes("aten::linear", "device_alloc_bytes"), 8192);
  EXPECT_EQ(bytes("aten::addmm", "alloc_bytes"), 4096 + 8192);
  EXPECT_EQ(bytes("aten::addmm", "device_alloc_bytes"), 8192);
  EXPECT_EQ(bytes("aten::relu", "alloc_bytes"), 64);
  EXPECT_EQ(bytes("aten::relu", "device_alloc_bytes"), -1);
  EXPECT_EQ(bytes("aten::empty", "alloc_bytes"), 32);
  EXPECT_EQ(bytes("ProfilerStep#3", "alloc_bytes"), -1);  // a model span, not an op
  EXPECT_EQ(bytes("ProfilerStep#3", "step"), 3);
  const trace::Process& p = only_process(t);
  EXPECT_EQ(p.stats.get(stats::Stat::kImportMemoryAllocationsInOps), 6u);
  EXPECT_EQ(p.stats.get(stats::Stat::kImportMemoryAllocationsOutsideOps), 1u);
  EXPECT_EQ(p.stats.get(stats::Stat::kImportMemoryFrees), 1u);
  EXPECT_EQ(p.stats.get(stats::Stat::kImportMemoryEventsWithoutBytes), 1u);
  EXPECT_TRUE(strata::testing::drops_of(p).empty());
}

TEST(KinetoImport, RealTraceLevelsMatchCategoryCounts) {
  // Independent counts: substring matches on the decompressed text (not the importer's JSON parser).
  const std::string path = source_path("tests/data/kineto/mi250_train.json.gz");
  std::string text = strata::testing::gunzip_file(path);
  ASSERT_FALSE(text.empty());
  using strata::testing::count_occurrences;
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(import_trace(path, &t, &error)) << error;
  std::map<uint8_t, size_t> per_level;
  for (const SpanRecord& s : t.spans) per_level[s.level]++;
  EXPECT_EQ(per_level[static_cast<uint8_t>(Level::kLayer)], count_occurrences(text, "\"cat\": \"cpu_op\""));
  EXPECT_EQ(per_level[static_cast<uint8_t>(Level::kRuntimeApi)],
            count_occurrences(text, "\"cat\": \"cuda_runtime\""));
  EXPECT_EQ(per_level[static_cast<uint8_t>(Level::kModel)],
            count_occurrences(text, "\"cat\": \"user_annotation\""));
  EXPECT_EQ(per_level[static_cast<uint8_t>(Level::kDevice)],
            count_occurrences(text, "\"cat\": \"kernel\"") +
                count_occurrences(text, "\"cat\": \"gpu_memcpy\"") +
                count_occurrences(text, "\"cat\": \"gpu_memset\"") +
                count_occurrences(text, "\"cat\": \"gpu_user_annotation\""));
  EXPECT_EQ(t.total_drops(), 0u);
  // Fractional microsecond timestamps survive to the nanosecond: the first cpu_op in the file.
  int op = find_span(t, "autograd::engine::evaluate_function: MseLossBackward0");
  ASSERT_GE(op, 0);
  EXPECT_EQ(t.spans[op].start_ns, 4203669604595407);
  EXPECT_EQ(t.spans[op].duration_ns(), 340024);
}

}  // namespace
}  // namespace strata::import

namespace strata::import {
namespace {

// Nothing silently lost: every event read is a span, an "E" that closed one, a counter event,
// metadata, a bound flow, or a counted drop.
TEST(ImportAccounting, EveryEventIsAccountedFor) {
  for (const char* fixture :
       {"tests/import/data/kineto_damaged.json", "tests/import/data/kineto_phases.json",
        "tests/import/data/kineto_memory.json", "tests/import/data/ort_profile.json",
        "tests/import/data/tf_timeline.json", "tests/import/data/tf2_trace.json",
        "tests/data/kineto/a100_alexnet_train.json.gz", "tests/data/kineto/mi250_train.json.gz",
        "tests/data/kineto/v100_train_rank0.json.gz"}) {
    trace::Trace t;
    std::string error;
    ImportStats stats;
    ASSERT_TRUE(import_trace_with_stats(strata::testing::source_path(fixture), &t, &error, {}, &stats))
        << error;
    EXPECT_EQ(accounted_events(stats), stats.get(stats::Stat::kImportEventsRead)) << fixture;
    EXPECT_EQ(dropped_events(stats), t.total_drops()) << fixture;
  }
}

}  // namespace
}  // namespace strata::import
