// The layer IR built from an ONNX model: one Layer per graph node with its type, activation input
// and output shapes, attributes and the edges of the layer DAG. Weights are never read: a layer is
// identified by type + shapes + parameters (Benanza section III-A).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace strata::lowerbound {

using Shape = std::vector<int64_t>;  // -1: unknown dimension

struct Layer {
  std::string name;                 // ONNX node name (or "<op>_<index>" when the node has none)
  std::string op_type;              // ONNX operator, e.g. "Conv"
  std::vector<std::string> inputs;  // activation tensors (produced by a node or a graph input)
  std::vector<std::string> outputs;
  std::vector<Shape> input_shapes;                // same order as `inputs`
  std::vector<Shape> output_shapes;               // same order as `outputs`
  std::vector<Shape> weight_shapes;               // initializer inputs (weights, bias, constants): shape only
  std::map<std::string, std::string> attributes;  // canonical text form, sorted by name
  std::vector<uint32_t> preds;                    // indices of layers producing an input (deduplicated)
  std::vector<uint32_t> succs;

  // Type + shapes + parameters; equal signatures are the same layer for benchmarking.
  std::string signature() const;
  // Integer attribute (or ints list element `index`), `fallback` when absent.
  int64_t int_attr(const std::string& key, int64_t fallback) const;
  std::vector<int64_t> ints_attr(const std::string& key) const;
};

struct LayerModel {
  std::string name;  // file stem
  std::string path;
  int64_t opset = 0;
  std::vector<Layer> layers;              // topological order (ONNX requires it; checked by the loader)
  std::vector<std::string> graph_inputs;  // activation inputs
  std::vector<std::string> graph_outputs;
  uint64_t unknown_shapes = 0;  // tensors shape inference could not resolve
};

std::string shape_text(const Shape& shape);  // "1x3x224x224", "?" for unknown dims

}  // namespace strata::lowerbound
