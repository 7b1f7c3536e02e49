// GPU PC sampling through the seam: the stall-reason category table, enabling per context at context
// creation, CUpti_PCSamplingData filled as CUDA 13's cupti_pcsampling.h defines it (paged by
// collectNumPcs, the disable buffer), aggregation per PC checked against a brute-force sum of the
// script, drops by cause, source lines, the refusals (old CUPTI, unsupported GPU), and the gpu_stalls
// analysis on a trace made of those records (golden CSV: tests/golden/gpu_stalls/pc_sampling_fixture.csv).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "../test_util.h"
#include "analysis/analysis.h"
#include "collect/clock.h"
#include "collect/runtime.h"
#include "core/stall_reasons.h"
#include "fake_cupti.h"
#include "fake_pc_sampling.h"
#include "gpu/cupti_collector.h"
#include "gpu/pc_sampler.h"
#include "strata/strata.h"
#include "trace/span_tree.h"
#include "trace/trace_loader.h"

namespace strata::gpu {
namespace {

using testing::FakeBatch;
using testing::FakeCupti;
using testing::FakePc;
using testing::FakePcSampling;
using testing::RecordedSpan;
using testing::RecordingSink;

constexpr const char* kGemm = "_Z10gemm_tiledPKfS0_Pfi";
constexpr const char* kRelu = "_Z4reluPfi";
constexpr const char* kGemmName = "gemm_tiled(float const*, float const*, float*, int)";
constexpr const char* kReluName = "relu(float*, int)";
constexpr uint64_t kCrc = 64 * 1000 + 7;  // FakePcSampling's CRC of the 64-byte cubin below

TEST(StallReasons, CategoryTable) {
  const std::pair<const char*, StallCategory> cases[] = {
      {"smsp__pcsamp_warps_issue_stalled_long_scoreboard", StallCategory::kMemoryDependency},
      {"long_scoreboard_not_issued", StallCategory::kMemoryDependency},
      {"short_scoreboard", StallCategory::kMemoryDependency},
      {"imc_miss", StallCategory::kMemoryDependency},
      {"drain", StallCategory::kMemoryDependency},
      {"wait", StallCategory::kExecutionDependency},
      {"barrier", StallCategory::kSynchronization},
      {"membar", StallCategory::kSynchronization},
      {"sleeping", StallCategory::kSynchronization},
      {"no_instructions", StallCategory::kInstructionFetch},
      {"branch_resolving", StallCategory::kInstructionFetch},
      {"math_pipe_throttle", StallCategory::kPipeThrottle},
      {"mio_throttle", StallCategory::kPipeThrottle},
      {"lg_throttle", StallCategory::kPipeThrottle},
      {"tex_throttle", StallCategory::kPipeThrottle},
      {"dispatch_stall", StallCategory::kPipeThrottle},
      {"not_selected", StallCategory::kNotSelected},
      {"selected", StallCategory::kIssued},
      {"misc", StallCategory::kOther},
      {"smsp__pcsamp_warps_issue_stalled_some_future_reason", StallCategory::kOther},
  };
  for (const auto& [name, category] : cases)
    EXPECT_EQ(stall_category_name(classify_stall_reason(name)), stall_category_name(category)) << name;
  EXPECT_EQ(short_stall_reason("smsp__pcsamp_warps_issue_stalled_wait_not_issued"), "wait_not_issued");
  EXPECT_EQ(short_stall_reason("smsp__pcsamp_sample_count"), "sample_count");
  EXPECT_TRUE(is_not_issued_variant("wait_not_issued"));
  EXPECT_FALSE(is_not_issued_variant("not_selected"));
}

TEST(PcSampling, ParsesTheMode) {
  PcSamplingMode m = PcSamplingMode::kOff;
  std::string error;
  EXPECT_TRUE(parse_pc_sampling_mode("continuous", &m, &error));
  EXPECT_EQ(m, PcSamplingMode::kContinuous);
  EXPECT_TRUE(parse_pc_sampling_mode("serialized", &m, &error));
  EXPECT_EQ(m, PcSamplingMode::kSerialized);
  EXPECT_FALSE(parse_pc_sampling_mode("sometimes", &m, &error));
  EXPECT_NE(error.find("'sometimes'"), std::string::npos) << error;
}

// The stall reasons a GPU reports (non-contiguous indices, as CUPTI's are not promised to be dense).
void add_reasons(FakePcSampling* pc) {
  const char* names[] = {"long_scoreboard", "long_scoreboard_not_issued", "wait",
                         "barrier",         "math_pipe_throttle",         "selected",
                         "no_instructions"};
  uint32_t index = 10;
  for (const char* n : names)
    pc->reasons.emplace_back(index++, std::string("smsp__pcsamp_warps_issue_stalled_") + n);
}
enum : uint32_t {
  kLongSb = 10,
  kLongSbNotIssued = 11,
  kWait = 12,
  kBarrier = 13,
  kMath = 14,
  kSelected = 15,
  kNoInst = 16
};

// The script: two collections (the first paged: 2 PCs per call), and PCs CUPTI still held at disable.
void add_script(FakePcSampling* pc, uint32_t correlation = 0) {
  FakeBatch b1;
  b1.pcs = {{kCrc, 0x100, 1, kGemm, correlation, {{kLongSb, 30}, {kLongSbNotIssued, 25}, {kSelected, 10}}},
            {kCrc, 0x180, 1, kGemm, correlation, {{kWait, 20}, {kMath, 15}}},
            {kCrc, 0x40, 2, kRelu, correlation, {{kLongSb, 8}, {kBarrier, 2}}}};
  b1.total_samples = 85;
  b1.dropped_samples = 5;
  b1.non_user_samples = 4;
  FakeBatch b2;
  b2.pcs = {{kCrc, 0x100, 1, kGemm, correlation, {{kLongSb, 10}, {kSelected, 5}}},
            {kCrc, 0x40, 2, kRelu, correlation, {{kNoInst, 5}}}};
  b2.total_samples = 20;
  pc->batches = {b1, b2};
  pc->at_disable = {{kCrc, 0x80, 2, kRelu, correlation, {{kWait, 5}}}};
  pc->lines[{kCrc, kGemm, 0x100}] = {"/src/gemm.cu", 42};
  pc->lines[{kCrc, kGemm, 0x180}] = {"/src/gemm.cu", 43};
}

struct Rig {
  FakeCupti cupti;
  FakePcSampling pc;
  RecordingSink sink;
  std::unique_ptr<CuptiCollector> collector;
  CUcontext context = reinterpret_cast<CUcontext>(0x1234);
  std::vector<char> cubin = std::vector<char>(64, 7);

  explicit Rig(PcSamplingMode mode = PcSamplingMode::kContinuous, PcSamplingOptions knobs = {}) {
    cupti.names[{CUPTI_CB_DOMAIN_RUNTIME_API, 1}] = "cudaLaunchKernel";
    add_reasons(&pc);
    CollectorOptions o;
    o.quiet = true;
    o.pc_sampling = knobs;
    o.pc_sampling.mode = mode;
    o.pc_sampling.pcs_per_collection = 2;
    o.pc_api = &pc;
    collector = std::make_unique<CuptiCollector>(&cupti, &sink, o);
  }
  void create_context() {
    CUpti_ResourceData r{};
    r.context = context;
    collector->on_resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &r);
  }
  void load_module() {
    CUpti_ModuleResourceData m{1, cubin.size(), cubin.data()};
    CUpti_ResourceData r{};
    r.context = context;
    r.resourceDescriptor = &m;
    collector->on_resource(CUPTI_CBID_RESOURCE_MODULE_LOADED, &r);
  }
  std::vector<const RecordedSpan*> samples() const {
    std::vector<const RecordedSpan*> out;
    for (const auto& s : sink.spans)
      if (s.record.activity == static_cast<uint8_t>(ActivityType::kGpuPcSample)) out.push_back(&s);
    return out;
  }
};

bool has_config(const FakePcSampling& pc, CUpti_PCSamplingConfigurationAttributeType type) {
  for (const auto& c : pc.config)
    if (c.attributeType == type) return true;
  return false;
}

TEST(PcSampling, EnablesEachContextAtCreationWithTheHeadersConfiguration) {
  Rig rig;
  ASSERT_TRUE(rig.collector->start());
  int resource_callbacks = 0;
  for (const auto& [domain, id] : rig.cupti.enabled_callbacks)
    resource_callbacks += domain == CUPTI_CB_DOMAIN_RESOURCE;
  EXPECT_EQ(resource_callbacks, 4);  // context created/destroying, module loaded/unloading
  EXPECT_TRUE(rig.pc.calls.empty()) << "nothing is enabled before a context exists";
  // A launch callback enables nothing (the Range Profiler hung when started there on an H100).
  CUpti_CallbackData launch{};
  launch.callbackSite = CUPTI_API_ENTER;
  launch.context = rig.context;
  rig.collector->on_callback(CUPTI_CB_DOMAIN_RUNTIME_API, 1, &launch);
  launch.callbackSite = CUPTI_API_EXIT;
  rig.collector->on_callback(CUPTI_CB_DOMAIN_RUNTIME_API, 1, &launch);
  EXPECT_TRUE(rig.pc.calls.empty());
  rig.create_context();
  EXPECT_EQ(rig.pc.calls, (std::vector<std::string>{"enable", "num_stall_reasons", "stall_reasons",
                                                    "set_configuration", "get_configuration"}));
  ASSERT_EQ(rig.pc.enabled_contexts.size(), 1u);
  EXPECT_EQ(rig.pc.enabled_contexts[0], rig.context);
  bool continuous = false;
  for (const auto& c : rig.pc.config) {
    if (c.attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE)
      continuous =
          c.attributeData.collectionModeData.collectionMode == CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
    if (c.attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON) {
      EXPECT_EQ(c.attributeData.stallReasonData.stallReasonCount, rig.pc.reasons.size());
    }
  }
  EXPECT_TRUE(continuous) << "continuous mode is the default";
  EXPECT_TRUE(has_config(rig.pc, CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT));
  EXPECT_NE(rig.pc.final_buffer, nullptr);
  // Continuous mode samples every 2^15 cycles unless asked otherwise (CUPTI's 2^11 overflowed on an H100).
  uint32_t period = 0;
  for (const auto& c : rig.pc.config)
    if (c.attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD)
      period = c.attributeData.samplingPeriodData.samplingPeriod;
  EXPECT_EQ(period, kContinuousPeriod);
  EXPECT_FALSE(
      has_config(rig.pc, CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN));
  EXPECT_FALSE(has_config(rig.pc, CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE));
  rig.collector->stop();
  EXPECT_EQ(rig.pc.calls.back(), "disable");
  // The period CUPTI chose is read back and said: what turns sample counts into time.
  EXPECT_EQ(rig.sink.properties["pc_sampling.period"], "13 (one sample per 2^13 = 8192 cycles)");
}

// The knobs that keep CUPTI's hardware buffer from filling on an H100 (period, worker wake-up,
// buffer size) reach the configuration with the values asked for.
TEST(PcSampling, PeriodWorkerWakeUpAndHardwareBufferAreConfiguredWhenAsked) {
  PcSamplingOptions knobs;
  knobs.sampling_period = 17;
  knobs.worker_sleep_ms = 10;
  knobs.hardware_buffer_bytes = size_t{1} << 30;
  Rig rig(PcSamplingMode::kContinuous, knobs);
  rig.pc.default_period = 17;
  ASSERT_TRUE(rig.collector->start());
  rig.create_context();
  int found = 0;
  for (const auto& c : rig.pc.config) {
    if (c.attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD)
      found += c.attributeData.samplingPeriodData.samplingPeriod == 17;
    if (c.attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN)
      found += c.attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan == 10;
    if (c.attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE)
      found += c.attributeData.hardwareBufferSizeData.hardwareBufferSize == (size_t{1} << 30);
  }
  EXPECT_EQ(found, 3);
  rig.collector->stop();
  EXPECT_EQ(rig.sink.properties["pc_sampling.period"], "17 (one sample per 2^17 = 131072 cycles)");
}

// Brute force: every stall count of the script summed per (kernel, PC, reason), no paging involved.
std::map<std::pair<std::string, uint64_t>, std::map<std::string, int64_t>> reference(
    const FakePcSampling& script) {
  std::map<uint32_t, std::string> names;
  for (const auto& [i, n] : script.reasons) names[i] = short_stall_reason(n);
  std::map<std::pair<std::string, uint64_t>, std::map<std::string, int64_t>> out;
  auto add = [&](const FakePc& pc) {
    for (const auto& [reason, n] : pc.stalls) out[{pc.function, pc.pc_offset}][names[reason]] += n;
  };
  for (const auto& b : script.batches)
    for (const auto& pc : b.pcs) add(pc);
  for (const auto& pc : script.at_disable) add(pc);
  return out;
}

TEST(PcSampling, AggregatesPerPcAsTheBruteForceSum) {
  Rig rig;
  add_script(&rig.pc);
  auto expected = reference(rig.pc);
  ASSERT_TRUE(rig.collector->start());
  rig.create_context();
  rig.load_module();
  rig.collector->pc_sampler()->collect_all();  // batch 1: 3 PCs, 2 per call -> 2 calls
  rig.collector->pc_sampler()->collect_all();  // batch 2
  rig.collector->stop();                       // a last (empty) collection, disable, the disable buffer
  auto samples = rig.samples();
  ASSERT_EQ(samples.size(), expected.size());
  std::map<std::string, std::string> mangled = {{kGemmName, kGemm}, {kReluName, kRelu}};
  int64_t all = 0;
  for (const RecordedSpan* s : samples) {
    EXPECT_EQ(s->record.kind, static_cast<uint8_t>(SpanKind::kSample));
    EXPECT_EQ(s->record.level, static_cast<uint8_t>(Level::kDevice));
    EXPECT_EQ(s->record.start_ns, s->record.end_ns);
    EXPECT_EQ(s->record.device, 3);
    ASSERT_TRUE(mangled.contains(s->name)) << s->name;
    auto key = std::make_pair(mangled[s->name], static_cast<uint64_t>(s->int_attr(attr_keys::kPcOffset)));
    ASSERT_TRUE(expected.contains(key)) << s->name << " " << key.second;
    int64_t plain = 0, not_issued = 0;
    for (const auto& [reason, n] : expected[key]) {
      EXPECT_EQ(s->int_attr(std::string(attr_keys::kStallPrefix) + reason), n) << s->name << " " << reason;
      (is_not_issued_variant(reason) ? not_issued : plain) += n;
    }
    EXPECT_EQ(s->int_attr(attr_keys::kPcSamples), plain);
    EXPECT_EQ(s->int_attr(attr_keys::kPcSamplesNotIssued), not_issued);
    EXPECT_EQ(s->int_attr(attr_keys::kCubinCrc), static_cast<int64_t>(kCrc));
    EXPECT_EQ(s->attr(attr_keys::kKernelCorrelationId), nullptr) << "continuous mode has no correlation";
    all += plain;
  }
  EXPECT_EQ(all, 110);
  PcSamplingStats st = rig.collector->pc_sampler()->stats();
  EXPECT_EQ(st.pc_records, 6u);
  EXPECT_EQ(st.total_samples, 105u);
  EXPECT_EQ(st.non_user_samples, 4u);
  EXPECT_EQ(st.lines_resolved, 2u);
  EXPECT_EQ(rig.sink.drops["pc_sampling_hw_dropped_samples"], 5u);
  EXPECT_EQ(rig.sink.drops["pc_sampling_bad_records"], 0u);
  EXPECT_EQ(rig.sink.properties["pc_sampling.mode"], "continuous");
  for (const RecordedSpan* s : samples) {
    if (s->name == kGemmName && s->int_attr(attr_keys::kPcOffset) == 0x100) {
      EXPECT_EQ(s->string_attr(attr_keys::kSourceFile), "/src/gemm.cu");
      EXPECT_EQ(s->int_attr(attr_keys::kSourceLine), 42);
    }
    if (s->name == kReluName) {
      EXPECT_EQ(s->attr(attr_keys::kSourceLine), nullptr) << "no line info for relu";
    }
  }
}

TEST(PcSampling, SerializedModeKeepsEachSamplesLaunchAndCollectsAfterLaunches) {
  Rig rig(PcSamplingMode::kSerialized);
  add_script(&rig.pc, 77);
  ASSERT_TRUE(rig.collector->start());
  rig.create_context();
  // Serialized mode flushes after every kernel: CUPTI's own (finer) default period is kept.
  EXPECT_FALSE(has_config(rig.pc, CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD));
  CUpti_CallbackData launch{};
  launch.context = rig.context;
  launch.functionName = "cudaLaunchKernel";
  launch.correlationId = 77;
  uint64_t when = 0;
  launch.correlationData = &when;
  launch.callbackSite = CUPTI_API_ENTER;
  rig.collector->on_callback(CUPTI_CB_DOMAIN_RUNTIME_API, 1, &launch);
  EXPECT_EQ(rig.pc.get_data_calls, 0);
  launch.callbackSite = CUPTI_API_EXIT;
  rig.collector->on_callback(CUPTI_CB_DOMAIN_RUNTIME_API, 1, &launch);
  EXPECT_GT(rig.pc.get_data_calls, 0) << "serialized mode collects when the launch returns";
  rig.collector->stop();
  auto samples = rig.samples();
  ASSERT_FALSE(samples.empty());
  for (const RecordedSpan* s : samples) EXPECT_EQ(s->int_attr(attr_keys::kKernelCorrelationId), 77);
}

TEST(PcSampling, CountsDropsByCause) {
  Rig rig;
  FakeBatch full;
  full.result = CUPTI_ERROR_OUT_OF_MEMORY;
  FakeBatch broken;
  broken.result = CUPTI_ERROR_UNKNOWN;
  FakeBatch odd;
  odd.pcs = {{kCrc, 0x10, 1, kGemm, 0, {{kWait, 3}, {99, 4}}}};  // 99: no such stall reason
  rig.pc.batches = {full, broken, odd};
  ASSERT_TRUE(rig.collector->start());
  rig.create_context();
  for (int i = 0; i < 3; ++i) rig.collector->pc_sampler()->collect_all();
  rig.collector->stop();
  EXPECT_EQ(rig.sink.drops["pc_sampling_hw_buffer_full"], 1u);
  EXPECT_EQ(rig.sink.drops["pc_sampling_get_data_errors"], 1u);
  EXPECT_EQ(rig.sink.drops["pc_sampling_bad_records"], 1u);
  auto samples = rig.samples();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0]->int_attr(attr_keys::kPcSamples), 3);
}

TEST(PcSampling, KeepsCubinsWithinTheBudget) {
  FakeCupti cupti;
  FakePcSampling pc;
  RecordingSink sink;
  add_reasons(&pc);
  PcSamplingOptions o;
  o.mode = PcSamplingMode::kContinuous;
  o.quiet = true;
  o.max_cubin_bytes = 100;
  PcSampler sampler(&pc, &sink, o);
  std::vector<char> a(64, 1), b(64, 2);
  CUpti_ModuleResourceData ma{1, a.size(), a.data()}, mb{2, b.size(), b.data()};
  sampler.on_module_loaded(&ma);
  sampler.on_module_loaded(&ma);  // the same module again: kept once
  sampler.on_module_loaded(&mb);  // over the 100-byte budget
  sampler.finish();
  EXPECT_EQ(sampler.stats().cubins, 1u);
  EXPECT_EQ(sink.drops["pc_sampling_cubins_over_cap"], 1u);
}

TEST(PcSampling, RefusesAnOldCuptiWithOneLineAndKeepsTracing) {
  Rig rig;
  rig.pc.version = 120000;
  ASSERT_TRUE(rig.collector->start()) << "the collector runs on without PC sampling";
  EXPECT_EQ(rig.collector->pc_sampler(), nullptr);
  const std::string& error = rig.collector->error();
  EXPECT_NE(error.find("CUPTI API version >= 130000"), std::string::npos) << error;
  EXPECT_NE(error.find("120000"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
  for (const auto& [domain, id] : rig.cupti.enabled_callbacks) EXPECT_NE(domain, CUPTI_CB_DOMAIN_RESOURCE);
  rig.create_context();  // ignored
  EXPECT_TRUE(rig.pc.calls.empty());
}

TEST(PcSampling, AGpuWithoutPcSamplingIsSaidOnceAndLeftUnsampled) {
  Rig rig;
  rig.pc.enable_result = CUPTI_ERROR_NOT_SUPPORTED;
  ASSERT_TRUE(rig.collector->start());
  rig.create_context();
  PcSampler* s = rig.collector->pc_sampler();
  ASSERT_NE(s, nullptr);
  EXPECT_NE(s->error().find("does not support PC sampling"), std::string::npos) << s->error();
  EXPECT_NE(s->error().find("CUPTI_ERROR_NOT_SUPPORTED"), std::string::npos) << s->error();
  s->collect_all();
  EXPECT_EQ(rig.pc.get_data_calls, 0);
  rig.collector->stop();
  EXPECT_EQ(s->stats().contexts_failed, 1u);
  EXPECT_TRUE(rig.samples().empty());
  EXPECT_EQ(rig.sink.properties["pc_sampling.error"], s->error());
}

// --- gpu_stalls on a recorded trace --------------------------------------------------------------

// CSV of the analysis tables (test-local rendering: "# table" line, header, rows; text quoted when it
// holds a comma or quote, reals at their precision).
std::string render(const analysis::AnalysisResult& r) {
  std::ostringstream out;
  for (const auto& t : r.tables) {
    out << "# " << t.name << "\n";
    for (size_t c = 0; c < t.columns.size(); ++c) out << (c ? "," : "") << t.columns[c];
    out << "\n";
    for (const auto& row : t.rows) {
      for (size_t c = 0; c < row.size(); ++c) {
        if (c) out << ",";
        const auto& v = row[c].value;
        if (const auto* text = std::get_if<std::string>(&v)) {
          if (text->find_first_of(",\"") == std::string::npos) {
            out << *text;
          } else {
            out << '"';
            for (char ch : *text) out << (ch == '"' ? "\"\"" : std::string(1, ch));
            out << '"';
          }
        } else if (const auto* i = std::get_if<int64_t>(&v)) {
          out << *i;
        } else if (const auto* d = std::get_if<double>(&v)) {
          char buf[64];
          std::snprintf(buf, sizeof(buf), "%.*f", row[c].precision, *d);
          out << buf;
        }
      }
      out << "\n";
    }
  }
  return out.str();
}

// Three ops launch kernels through the collector's callbacks in a real recording session: aten::mm
// and aten::addmm launch gemm_tiled (3 ms and 1 ms of execution), aten::relu launches relu (1 ms);
// PC sampling runs on the script above. Then the trace is loaded and gpu_stalls runs on it.
TEST(GpuStalls, RecordedTraceGivesKernelLineAndOpShares) {
  strata::testing::TempDir dir;
  std::string path = dir.file("pcs.strata");
  collect::SessionConfig config;
  config.path = path;
  config.level = static_cast<int>(Level::kDevice);
  ASSERT_TRUE(collect::start_recording(config));
  FakeCupti cupti;
  cupti.names[{CUPTI_CB_DOMAIN_RUNTIME_API, 211}] = "cudaLaunchKernel";
  FakePcSampling pc;
  add_reasons(&pc);
  add_script(&pc);
  SessionSink sink;
  CollectorOptions o;
  o.quiet = true;
  o.pc_sampling.mode = PcSamplingMode::kContinuous;
  o.pc_api = &pc;
  CuptiCollector collector(&cupti, &sink, o);
  ASSERT_TRUE(collector.start());
  CUcontext context = reinterpret_cast<CUcontext>(0x1234);
  CUpti_ResourceData created{};
  created.context = context;
  collector.on_resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &created);
  std::vector<char> cubin(64, 7);
  CUpti_ModuleResourceData module{1, cubin.size(), cubin.data()};
  CUpti_ResourceData loaded{};
  loaded.context = context;
  loaded.resourceDescriptor = &module;
  collector.on_resource(CUPTI_CBID_RESOURCE_MODULE_LOADED, &loaded);

  struct Launch {
    const char* op;
    const char* kernel;
    uint32_t correlation;
    int64_t ms;
  };
  const Launch launches[] = {
      {"aten::mm", kGemm, 1, 3}, {"aten::addmm", kGemm, 2, 1}, {"aten::relu", kRelu, 3, 1}};
  int64_t device_clock = collect::monotonic_ns() + 1'000'000;
  for (const Launch& l : launches) {
    strata_span_id op = strata_span_begin(l.op, STRATA_LEVEL_LAYER);
    uint64_t storage = 0;
    int status = 0;
    CUpti_CallbackData call{};
    call.functionName = "cudaLaunchKernel";
    call.symbolName = l.kernel;
    call.correlationId = l.correlation;
    call.correlationData = &storage;
    call.functionReturnValue = &status;
    call.context = context;
    call.callbackSite = CUPTI_API_ENTER;
    collector.on_callback(CUPTI_CB_DOMAIN_RUNTIME_API, 211, &call);
    call.callbackSite = CUPTI_API_EXIT;
    collector.on_callback(CUPTI_CB_DOMAIN_RUNTIME_API, 211, &call);
    strata_span_end(op);
    CUpti_ActivityKernel10 k{};
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = static_cast<uint64_t>(device_clock);
    device_clock += l.ms * 1'000'000;
    k.end = static_cast<uint64_t>(device_clock);
    k.correlationId = l.correlation;
    k.streamId = 7;
    k.name = l.kernel;
    cupti.queue(k);
  }
  collector.pc_sampler()->collect_all();
  collector.pc_sampler()->collect_all();
  collector.stop();
  collect::stop_recording();

  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::load_trace(path, &t, &error)) << error;
  trace::SpanTree tree = trace::build_span_tree(t);
  analysis::Params params;
  const analysis::Analysis* a = analysis::find_analysis("gpu_stalls");
  ASSERT_NE(a, nullptr);
  analysis::AnalysisResult r = a->run({t, tree, params, nullptr});
  ASSERT_FALSE(r.missing_input.has_value()) << *r.missing_input;
  ASSERT_EQ(r.tables.size(), 5u);

  // Known answers, worked out from the script: gemm 55 + 35 samples, relu 15 + 5; gemm's split 3:1
  // by its execution time under aten::mm and aten::addmm.
  const auto& kernels = r.tables[0];
  ASSERT_EQ(kernels.rows.size(), 2u);
  EXPECT_EQ(std::get<std::string>(kernels.rows[0][0].value), kGemmName);
  EXPECT_EQ(std::get<int64_t>(kernels.rows[0][1].value), 90);
  EXPECT_EQ(std::get<int64_t>(kernels.rows[1][1].value), 20);
  EXPECT_EQ(std::get<std::string>(kernels.rows[0].back().value), "/src/gemm.cu:42");  // hottest line
  std::map<std::string, double> op_samples;
  for (const auto& row : r.tables[4].rows)
    op_samples[std::get<std::string>(row[0].value)] = std::get<double>(row[1].value);
  EXPECT_DOUBLE_EQ(op_samples["aten::mm"], 67.5);
  EXPECT_DOUBLE_EQ(op_samples["aten::addmm"], 22.5);
  EXPECT_DOUBLE_EQ(op_samples["aten::relu"], 20);

  analysis::Params top;
  top.set("top", "1");
  analysis::AnalysisResult one = a->run({t, tree, top, nullptr});
  ASSERT_EQ(one.tables.size(), 5u);
  EXPECT_EQ(one.tables[0].rows.size(), 1u);
  EXPECT_EQ(one.tables[1].rows.size(), 4u) << "the reasons of the one kernel kept";
  EXPECT_FALSE(one.tables[1].notes.empty());
  EXPECT_EQ(one.tables[2].rows.size(), 1u);
  EXPECT_EQ(one.tables[3].rows.size(), 1u);
  EXPECT_EQ(one.tables[4].rows.size(), 1u);
  // By line: gemm's two PCs are on lines 42 and 43; relu has no line info (20 samples noted).
  ASSERT_EQ(r.tables[3].rows.size(), 2u);
  EXPECT_EQ(std::get<std::string>(r.tables[3].rows[0][1].value), "/src/gemm.cu:42");
  EXPECT_EQ(std::get<int64_t>(r.tables[3].rows[0][2].value), 55);
  ASSERT_EQ(r.tables[3].notes.size(), 1u);
  EXPECT_EQ(r.tables[3].notes[0].rfind("20 samples", 0), 0u) << r.tables[3].notes[0];

  const std::string golden =
      std::string(STRATA_SOURCE_DIR) + "/tests/golden/gpu_stalls/pc_sampling_fixture.csv";
  std::string actual = render(r);
  const char* update = std::getenv("STRATA_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(golden) << actual;
    return;
  }
  std::ifstream in(golden);
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), actual) << "golden mismatch: " << golden
                                    << " (STRATA_UPDATE_GOLDEN=1 rewrites it)";
}

}  // namespace
}  // namespace strata::gpu
