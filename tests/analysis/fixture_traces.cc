#include "fixture_traces.h"

#include <vector>

namespace strata::testing {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kUs = 1'000;

SpanRecord span(uint64_t id, uint64_t parent, int64_t start, int64_t end, uint32_t name, Level level,
                ActivityType activity, SpanKind kind = SpanKind::kSpan) {
  SpanRecord s;
  s.activity = static_cast<uint8_t>(activity);
  s.span_id = id;
  s.parent_id = parent;
  s.start_ns = start;
  s.end_ns = end;
  s.name = name;
  s.level = static_cast<uint8_t>(level);
  s.kind = static_cast<uint8_t>(kind);
  s.tid = 1;
  return s;
}

}  // namespace

trace::Trace cpu_model_trace() {
  trace::Trace t;
  trace::Process p;
  p.pid = 100;
  p.host = "fixture";
  p.command_line = "python infer.py --batch 1,2,4,8";
  t.add_process(p);
  const uint32_t predict = t.strings.intern("predict");
  const uint32_t convolution = t.strings.intern("aten::convolution");
  const uint32_t onednn = t.strings.intern("onednn::convolution");
  struct LayerDef {
    const char* name;
    const char* type;
    int64_t weight;  // in units of s = latency / 20
  };
  const LayerDef layers[] = {{"conv1", "aten::conv2d", 3},
                             {"relu1", "aten::relu", 1},
                             {"conv2", "aten::conv2d", 3},
                             {"add", "aten::add", 1},
                             {"fc", "aten::linear", 2}};
  const int64_t batches[] = {1, 2, 4, 8};
  const int64_t base_ms[] = {10, 12, 20, 39};
  uint64_t next_id = 1;
  int64_t clock = 0;
  for (int b = 0; b < 4; ++b) {
    for (int e = 0; e < 5; ++e) {
      const int64_t latency = base_ms[b] * kMs * (e == 4 ? 5 : 1);
      const int64_t s = latency / 20;
      const uint64_t model_id = next_id++;
      std::vector<AttrRecord> model_attrs = {t.int_attr(attr_keys::kBatch, batches[b])};
      t.add_span(span(model_id, 0, clock, clock + latency, predict, Level::kModel, ActivityType::kAnnotation),
                 model_attrs);
      int64_t at = clock + latency / 4;  // layers run in the middle half of the evaluation
      for (int k = 0; k < 5; ++k) {
        const LayerDef& def = layers[k];
        const int64_t dur = def.weight * s;
        const uint64_t layer_id = next_id++;
        std::vector<AttrRecord> attrs = {t.string_attr(attr_keys::kOpType, def.type),
                                         t.string_attr(attr_keys::kShapes, "[1,64,56,56]"),
                                         t.int_attr(attr_keys::kAllocBytes, 1'000'000 * batches[b] * (k + 1))};
        t.add_span(span(layer_id, model_id, at, at + dur, t.strings.intern(def.name), Level::kLayer,
                        ActivityType::kCpuOp),
                   attrs);
        if (std::string_view(def.type) == "aten::conv2d") {
          const uint64_t conv_id = next_id++;
          t.add_span(
              span(conv_id, layer_id, at, at + dur * 9 / 10, convolution, Level::kLayer, ActivityType::kCpuOp));
          std::vector<AttrRecord> lib = {t.metric(attr_keys::kFlops, 4e6 * static_cast<double>(batches[b])),
                                         t.metric(attr_keys::kBytes, 1e6 * static_cast<double>(batches[b]))};
          t.add_span(
              span(next_id++, conv_id, at, at + dur * 8 / 10, onednn, Level::kLibrary, ActivityType::kLibraryCall),
              lib);
        }
        at += dur;
      }
      clock += latency + 100 * kUs;
    }
  }
  return t;
}

trace::Trace gpu_model_trace() {
  trace::Trace t;
  trace::Process p;
  p.pid = 200;
  p.host = "fixture";
  p.command_line = "python infer.py --device cuda";
  p.properties.set("device.0.name", "NVIDIA A100-SXM4-40GB");
  t.add_process(p);
  const uint32_t predict = t.strings.intern("predict");
  const uint32_t launch = t.strings.intern("cudaLaunchKernel");
  struct LayerDef {
    const char* name;
    const char* type;
    int64_t start_us, end_us;
    const char* kernel;
    int64_t kernel_us;
    double flops, read, write, occupancy;
  };
  const LayerDef layers[] = {{"linear", "aten::linear", 0, 4000, "sgemm", 1000, 2e9, 1e8, 1e8, 50},
                             {"relu", "aten::relu", 5000, 7000, "relu_kernel", 500, 1e7, 4e7, 4e7, 25}};
  uint64_t next_id = 1, correlation = 1;
  for (int e = 0; e < 3; ++e) {
    const int64_t base = e * 20 * kMs;
    const uint64_t model_id = next_id++;
    std::vector<AttrRecord> model_attrs = {t.int_attr(attr_keys::kBatch, 2)};
    t.add_span(span(model_id, 0, base, base + 10 * kMs, predict, Level::kModel, ActivityType::kAnnotation),
               model_attrs);
    for (const LayerDef& def : layers) {
      const int64_t start = base + def.start_us * kUs, end = base + def.end_us * kUs;
      std::vector<AttrRecord> attrs = {t.string_attr(attr_keys::kOpType, def.type)};
      // No explicit parent: the correlation engine finds the model span by containment.
      t.add_span(span(next_id++, 0, start, end, t.strings.intern(def.name), Level::kLayer, ActivityType::kCpuOp),
                 attrs);
      SpanRecord l = span(next_id++, 0, start + 100 * kUs, start + 150 * kUs, launch, Level::kRuntimeApi,
                          ActivityType::kRuntimeCall, SpanKind::kLaunch);
      l.correlation_id = correlation;
      t.add_span(l);
      SpanRecord k = span(next_id++, 0, start + 200 * kUs, start + 200 * kUs + def.kernel_us * kUs,
                          t.strings.intern(def.kernel), Level::kDevice, ActivityType::kKernel, SpanKind::kExecution);
      k.correlation_id = correlation++;
      k.stream = 7;
      k.device = 0;
      k.tid = 0;
      std::vector<AttrRecord> metrics = {
          t.metric(attr_keys::kFlops, def.flops), t.metric(attr_keys::kDramReadBytes, def.read),
          t.metric(attr_keys::kDramWriteBytes, def.write), t.metric(attr_keys::kAchievedOccupancy, def.occupancy)};
      t.add_span(k, metrics);
    }
  }
  return t;
}

}  // namespace strata::testing
