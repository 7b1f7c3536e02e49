// Fuzzes the ONNX model processor: arbitrary bytes must give a model or one error line, never a
// crash, hang or sanitizer report. Seeds: tests/lowerbound/data/*.onnx.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lowerbound/harness/bench_plan.h"
#include "lowerbound/bounds/bounds.h"
#include "lowerbound/ir/onnx_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::lowerbound::LayerModel model;
  std::string error;
  if (!strata::lowerbound::load_onnx_bytes(std::string_view(reinterpret_cast<const char*>(data), size),
                                           "fuzz.onnx", &model, &error)) {
    if (error.empty() || error.find('\n') != std::string::npos) __builtin_trap();  // one line, always
    return 0;
  }
  // Everything downstream of a loaded model must cope with whatever shapes and attributes came in.
  std::vector<double> latency(model.layers.size(), 1.0);
  for (size_t i = 0; i < model.layers.size(); ++i) {
    model.layers[i].signature();
    std::optional<strata::lowerbound::FusionChain> chain = strata::lowerbound::fusion_chain(model, i);
    strata::lowerbound::plan_layer(model.layers[i], "cpu", "f32", "nhwc", chain ? chain->post_ops : "");
  }
  strata::lowerbound::compute_bounds(model, latency);
  return 0;
}
