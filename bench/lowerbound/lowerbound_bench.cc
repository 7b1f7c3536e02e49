// Analyzer costs: the parallel bound must stay linear in layers + edges (a long chain and a wide
// inception-like DAG of growing size), and loading an ONNX model with shape inference.
#include <benchmark/benchmark.h>

#include "lowerbound/bounds/bounds.h"
#include "lowerbound/ir/onnx_loader.h"

namespace lb = strata::lowerbound;

namespace {

// Blocks of 4 parallel branches (1, 2, 2, 1 layers) joined by a concat: ~7 layers per block.
lb::LayerModel inception_dag(int blocks) {
  lb::LayerModel m;
  auto add = [&](std::vector<uint32_t> preds) {
    lb::Layer l;
    l.op_type = "Op";
    l.preds = preds;
    uint32_t id = static_cast<uint32_t>(m.layers.size());
    for (uint32_t p : preds) m.layers[p].succs.push_back(id);
    m.layers.push_back(l);
    return id;
  };
  uint32_t in = add({});
  for (int b = 0; b < blocks; ++b) {
    uint32_t a = add({in});
    uint32_t c = add({add({in})});
    uint32_t d = add({add({in})});
    uint32_t e = add({in});
    in = add({a, c, d, e});
  }
  return m;
}

void BM_ParallelBound(benchmark::State& state) {
  lb::LayerModel m = inception_dag(static_cast<int>(state.range(0)));
  std::vector<double> latency(m.layers.size());
  for (size_t i = 0; i < latency.size(); ++i) latency[i] = static_cast<double>((i * 37) % 101);
  for (auto _ : state) benchmark::DoNotOptimize(lb::compute_bounds(m, latency));
  state.SetComplexityN(static_cast<int64_t>(m.layers.size()));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(m.layers.size()));
}
BENCHMARK(BM_ParallelBound)->RangeMultiplier(8)->Range(8, 8 << 9)->Complexity(benchmark::oN);

void BM_LoadResnet18(benchmark::State& state) {
  const std::string path = std::string(STRATA_SOURCE_DIR) + "/tests/lowerbound/data/resnet18.onnx";
  for (auto _ : state) {
    lb::LayerModel m;
    std::string error;
    if (!lb::load_onnx_file(path, &m, &error)) state.SkipWithError(error.c_str());
    benchmark::DoNotOptimize(m.layers.data());
  }
}
BENCHMARK(BM_LoadResnet18)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
