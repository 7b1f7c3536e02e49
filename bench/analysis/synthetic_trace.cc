#include "synthetic_trace.h"

#include <string>
#include <vector>

namespace strata::bench {

trace::Trace synthetic_gpu_trace(size_t target_spans, size_t layers_per_eval) {
  trace::Trace t;
  trace::Process p;
  p.pid = 1;
  p.properties.set("device.0.name", "NVIDIA H100 80GB HBM3");
  t.add_process(p);
  const size_t per_eval = 1 + 4 * layers_per_eval;
  const size_t evals = (target_spans + per_eval - 1) / per_eval;
  t.reserve(evals * per_eval, evals * (1 + layers_per_eval * 4));
  const uint32_t predict = t.strings.intern("predict");
  const uint32_t launch = t.strings.intern("cudaLaunchKernel");
  const char* types[] = {"aten::conv2d", "aten::batch_norm", "aten::relu", "aten::add", "aten::linear"};
  std::vector<uint32_t> layer_names, op_names, kernel_names;
  for (size_t k = 0; k < layers_per_eval; ++k) {
    layer_names.push_back(t.strings.intern(types[k % 5]));
    op_names.push_back(t.strings.intern(std::string(types[k % 5]) + "_impl"));
    kernel_names.push_back(t.strings.intern("kernel_" + std::to_string(k % 17)));
  }
  uint64_t id = 1, corr = 1;
  int64_t clock = 0;
  auto make = [&](int64_t start, int64_t end, uint32_t name, Level level, SpanKind kind) {
    SpanRecord s;
    s.span_id = id++;
    s.start_ns = start;
    s.end_ns = end;
    s.name = name;
    s.level = static_cast<uint8_t>(level);
    s.kind = static_cast<uint8_t>(kind);
    s.tid = 1;
    return s;
  };
  for (size_t e = 0; e < evals; ++e) {
    const int64_t batch = int64_t{1} << (e % 4);
    const int64_t layer_ns = 20'000 * batch;
    const int64_t start = clock;
    std::vector<AttrRecord> model_attrs = {t.int_attr("batch", batch)};
    t.add_span(make(start, start + static_cast<int64_t>(layers_per_eval) * layer_ns + 1000, predict,
                    Level::kModel, SpanKind::kSpan),
               model_attrs);
    int64_t at = start + 500;
    for (size_t k = 0; k < layers_per_eval; ++k) {
      std::vector<AttrRecord> la = {t.string_attr("shape", "[1,64,56,56]"),
                                    t.int_attr("alloc_bytes", 1 << 20)};
      t.add_span(make(at, at + layer_ns - 100, layer_names[k], Level::kLayer, SpanKind::kSpan), la);
      t.add_span(make(at + 10, at + layer_ns - 200, op_names[k], Level::kLayer, SpanKind::kSpan));
      SpanRecord l = make(at + 20, at + 60, launch, Level::kRuntimeApi, SpanKind::kLaunch);
      l.correlation_id = corr;
      t.add_span(l);
      SpanRecord kr =
          make(at + 100, at + layer_ns / 2, kernel_names[k], Level::kDevice, SpanKind::kExecution);
      kr.correlation_id = corr++;
      kr.stream = 7;
      kr.device = 0;
      kr.tid = 0;
      std::vector<AttrRecord> ka = {t.metric("flops", 1e9), t.metric("dram_read_bytes", 5e7),
                                    t.metric("dram_write_bytes", 5e7)};
      t.add_span(kr, ka);
      at += layer_ns;
    }
    clock = start + static_cast<int64_t>(layers_per_eval) * layer_ns + 5000;
  }
  return t;
}

}  // namespace strata::bench
