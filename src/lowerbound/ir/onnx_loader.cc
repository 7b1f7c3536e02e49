#include "lowerbound/ir/onnx_loader.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "format/input_file.h"

namespace strata::lowerbound {
namespace {

// Control flow and training ops carry sub-graphs or semantics a per-layer benchmark cannot express.
const std::set<std::string> kUnsupportedOps = {"If", "Loop", "Scan", "SequenceMap"};

constexpr uint64_t kMaxOnnxBytes = uint64_t{2} << 30;

Shape shape_of(const onnx::TypeProto& type) {
  Shape shape;
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return shape;
  for (const auto& dim : type.tensor_type().shape().dim())
    shape.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
  return shape;
}

std::string float_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Canonical text of an attribute; false for sub-graph attributes (unsupported).
bool attribute_text(const onnx::AttributeProto& attr, std::string* text) {
  std::string out;
  switch (attr.type()) {
    case onnx::AttributeProto::INT:
      out = std::to_string(attr.i());
      break;
    case onnx::AttributeProto::FLOAT:
      out = float_text(attr.f());
      break;
    case onnx::AttributeProto::STRING:
      out = attr.s();
      break;
    case onnx::AttributeProto::INTS:
      out = "[";
      for (int i = 0; i < attr.ints_size(); ++i) out += (i ? "," : "") + std::to_string(attr.ints(i));
      out += "]";
      break;
    case onnx::AttributeProto::FLOATS:
      out = "[";
      for (int i = 0; i < attr.floats_size(); ++i) out += (i ? "," : "") + float_text(attr.floats(i));
      out += "]";
      break;
    case onnx::AttributeProto::TENSOR: {
      out = "tensor(";
      for (int i = 0; i < attr.t().dims_size(); ++i) out += (i ? "x" : "") + std::to_string(attr.t().dims(i));
      out += ")";
      break;
    }
    case onnx::AttributeProto::GRAPH:
    case onnx::AttributeProto::GRAPHS:
      return false;
    default:
      out = "?";
      break;
  }
  *text = std::move(out);
  return true;
}

// libonnx's shape inference divides by strides/dilations/kernel sizes without checking them (found
// by fuzz/lowerbound: SIGFPE in convPoolShapeInference), so malformed values are rejected first.
bool check_window_attributes(const onnx::GraphProto& graph, std::string* what) {
  static const std::set<std::string> kWindowOps = {"Conv",    "ConvTranspose", "ConvInteger", "QLinearConv",
                                                   "MaxPool", "AveragePool",   "LpPool",      "MaxUnpool"};
  for (int n = 0; n < graph.node_size(); ++n) {
    const onnx::NodeProto& node = graph.node(n);
    if (!kWindowOps.count(node.op_type())) continue;
    for (const auto& attr : node.attribute()) {
      const std::string& key = attr.name();
      int64_t minimum = key == "pads" ? 0 : 1;
      bool checked =
          key == "strides" || key == "dilations" || key == "kernel_shape" || key == "pads" || key == "group";
      if (!checked) continue;
      bool bad = false;
      if (attr.type() == onnx::AttributeProto::INTS) {
        for (int64_t v : attr.ints()) bad |= v < minimum;
      } else if (attr.type() == onnx::AttributeProto::INT) {
        bad = attr.i() < minimum;
      } else {
        bad = true;
      }
      if (bad) {
        *what = "node " + std::to_string(n) + " (" + node.op_type() + "): attribute '" + key +
                "' must hold integers >= " + std::to_string(minimum) + "; the model is malformed";
        return false;
      }
    }
  }
  return true;
}

// Checks that need no shape inference. Run before it: libonnx's inference of sub-graph ops (Scan,
// ...) crashes on malformed sub-graphs (found by fuzz/lowerbound), and they are unsupported anyway.
bool check_graph(const onnx::ModelProto& proto, LayerModel* model, std::string* what) {
  if (!proto.has_graph() || proto.graph().node_size() == 0) {
    *what = "ONNX model has no graph nodes (field graph.node is empty); is this an ONNX model file?";
    return false;
  }
  for (const auto& op : proto.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") model->opset = op.version();
  if (model->opset == 0) {
    *what = "no default-domain opset_import; re-export with an explicit opset_version";
    return false;
  }
  for (int n = 0; n < proto.graph().node_size(); ++n) {
    const onnx::NodeProto& node = proto.graph().node(n);
    std::string where =
        "node " + std::to_string(n) + " (" + (node.name().empty() ? node.op_type() : node.name()) + "): ";
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      *what =
          where + "operator domain '" + node.domain() + "' is not supported (only the default ONNX domain)";
      return false;
    }
    if (kUnsupportedOps.count(node.op_type())) {
      *what = where + "control-flow operator " + node.op_type() +
              " is not supported; export the model with its loops unrolled";
      return false;
    }
    for (const auto& attr : node.attribute())
      if (attr.type() == onnx::AttributeProto::GRAPH || attr.type() == onnx::AttributeProto::GRAPHS ||
          attr.has_g() || attr.graphs_size() > 0) {
        *what = where + "attribute '" + attr.name() + "' holds a sub-graph; control flow is not supported";
        return false;
      }
  }
  return check_window_attributes(proto.graph(), what);
}

// Tensor shapes after shape inference: initializers (constants), graph inputs, value_info, outputs.
void collect_shapes(const onnx::GraphProto& graph, LayerModel* model,
                    std::unordered_map<std::string, Shape>* shapes,
                    std::unordered_set<std::string>* constants) {
  for (const auto& init : graph.initializer()) {
    (*shapes)[init.name()] = Shape(init.dims().begin(), init.dims().end());
    constants->insert(init.name());
  }
  for (const auto& vi : graph.input())
    if (!constants->count(vi.name())) {
      (*shapes)[vi.name()] = shape_of(vi.type());
      model->graph_inputs.push_back(vi.name());
    }
  for (const auto& vi : graph.value_info()) (*shapes)[vi.name()] = shape_of(vi.type());
  for (const auto& vi : graph.output()) {
    if (!shape_of(vi.type()).empty() || !shapes->count(vi.name())) (*shapes)[vi.name()] = shape_of(vi.type());
    model->graph_outputs.push_back(vi.name());
  }
}

// The graph as it is being turned into layers: tensor shapes, which tensors are constants (initializers
// and outputs of all-constant nodes) and which node produced each tensor.
struct GraphState {
  std::unordered_map<std::string, Shape> shapes;
  std::unordered_set<std::string> constants;
  std::unordered_map<std::string, uint32_t> producer;
  std::unordered_set<std::string> graph_inputs;
};

// Node n -> layer: inputs (weights apart), outputs, predecessors, attributes. ONNX requires nodes in
// topological order; a tensor used before it is produced, or assigned twice, is an error.
bool build_layer(const onnx::NodeProto& node, int n, GraphState* g, LayerModel* model, Layer* layer,
                 std::string* what) {
  layer->op_type = node.op_type();
  layer->name = node.name().empty() ? node.op_type() + "_" + std::to_string(n) : node.name();
  const std::string where = "node " + std::to_string(n) + " (" + layer->name + "): ";
  bool all_constant = true;
  for (const std::string& in : node.input()) {
    if (in.empty()) continue;  // omitted optional input
    auto it = g->shapes.find(in);
    if (g->constants.count(in)) {
      layer->weight_shapes.push_back(it == g->shapes.end() ? Shape{} : it->second);
      continue;
    }
    all_constant = false;
    auto prod = g->producer.find(in);
    if (prod == g->producer.end() && !g->graph_inputs.count(in)) {
      *what = where + "input tensor '" + in +
              "' is neither a graph input, an initializer nor produced by an earlier node";
      return false;
    }
    layer->inputs.push_back(in);
    layer->input_shapes.push_back(it == g->shapes.end() ? Shape{} : it->second);
    if (it == g->shapes.end()) ++model->unknown_shapes;
    if (prod != g->producer.end() &&
        std::find(layer->preds.begin(), layer->preds.end(), prod->second) == layer->preds.end())
      layer->preds.push_back(prod->second);
  }
  if (layer->op_type == "Constant") all_constant = true;
  for (const std::string& out : node.output()) {
    if (out.empty()) continue;
    if (g->producer.count(out) || g->graph_inputs.count(out) || g->constants.count(out)) {
      *what = where + "tensor '" + out + "' is assigned twice (the graph is not in SSA form)";
      return false;
    }
    g->producer[out] = static_cast<uint32_t>(n);
    if (all_constant) g->constants.insert(out);
    layer->outputs.push_back(out);
    auto it = g->shapes.find(out);
    layer->output_shapes.push_back(it == g->shapes.end() ? Shape{} : it->second);
    if (it == g->shapes.end()) ++model->unknown_shapes;
  }
  for (const auto& attr : node.attribute()) {
    std::string text;
    if (!attribute_text(attr, &text)) {
      *what = where + "attribute '" + attr.name() + "' holds a sub-graph; control flow is not supported";
      return false;
    }
    layer->attributes[attr.name()] = std::move(text);
  }
  return true;
}

}  // namespace

bool load_onnx_bytes(std::string_view bytes, const std::string& label, LayerModel* model,
                     std::string* error) {
  auto fail = [&](const std::string& what) {
    // Names come from the file: escape control characters so the message stays one line.
    *error = label + ": ";
    for (unsigned char c : what) {
      if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        *error += buf;
      } else {
        *error += static_cast<char>(c);
      }
    }
    return false;
  };
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return fail("file larger than 2 GiB; protobuf cannot parse it (export with external data)");
  onnx::ModelProto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return fail("not an ONNX model (protobuf parse failed at some offset in " + std::to_string(bytes.size()) +
                " bytes); re-export the model with torch.onnx.export or onnx.save");
  if (std::string what; !check_graph(proto, model, &what)) return fail(what);
  try {
    onnx::shape_inference::InferShapes(proto);
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
    return fail("ONNX shape inference failed: " + what + " (check the model with onnx.checker.check_model)");
  }
  const onnx::GraphProto& graph = proto.graph();
  GraphState g;
  collect_shapes(graph, model, &g.shapes, &g.constants);
  g.graph_inputs.insert(model->graph_inputs.begin(), model->graph_inputs.end());
  model->layers.reserve(graph.node_size());
  for (int n = 0; n < graph.node_size(); ++n) {
    Layer layer;
    if (std::string what; !build_layer(graph.node(n), n, &g, model, &layer, &what)) return fail(what);
    model->layers.push_back(std::move(layer));
  }
  for (uint32_t i = 0; i < model->layers.size(); ++i)
    for (uint32_t p : model->layers[i].preds) model->layers[p].succs.push_back(i);
  return true;
}

bool load_onnx_file(const std::string& path, LayerModel* model, std::string* error) {
  // A regular file of at most 2 GiB, protobuf's own limit: a FIFO or /dev/zero is refused, not
  // read until memory runs out; a directory is named as one.
  std::string bytes;
  if (!format::read_regular_file(
          path, kMaxOnnxBytes,
          "2 GiB is the most a protobuf (an ONNX model) can hold; is this an ONNX model?", &bytes, error))
    return false;
  model->path = path;
  std::string stem = path.substr(path.find_last_of('/') + 1);
  if (auto dot = stem.rfind('.'); dot != std::string::npos && dot > 0) stem.resize(dot);
  model->name = stem;
  return load_onnx_bytes(bytes, path, model, error);
}

}  // namespace strata::lowerbound
