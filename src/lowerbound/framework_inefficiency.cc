#include "lowerbound/framework_inefficiency.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/activity_type.h"
#include "core/level.h"
#include "lowerbound/bench_plan.h"
#include "model/span_tree.h"

namespace strata::lowerbound {

using analysis::Cell;
using analysis::Table;

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "1x3x224x224" (cuDNN attributes) or "1,3,224,224" (inside oneDNN's brackets) -> dims; empty on
// anything else, so a malformed attribute is "not recorded", never a wrong value.
std::vector<int64_t> parse_dims(std::string_view text) {
  std::vector<int64_t> dims;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    bool negative = j < text.size() && text[j] == '-';
    if (negative) ++j;
    int64_t v = 0;
    size_t digits = 0;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])) && digits < 18) {
      v = v * 10 + (text[j] - '0');
      ++j;
      ++digits;
    }
    if (digits == 0) return {};
    dims.push_back(negative ? -v : v);
    if (j == text.size()) break;
    if (text[j] != 'x' && text[j] != ',') return {};
    i = j + 1;
    if (i == text.size()) return {};
  }
  return dims;
}

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s.empty() ? "-" : s;
}

// cuDNN "x.strides" -> the activation layout of a rank-4 tensor.
std::string layout_from_strides(const Shape& dims, const std::vector<int64_t>& strides) {
  if (dims.size() != 4 || strides.size() != 4) return "";
  if (strides[1] == 1 && dims[1] > 1 && strides[3] == dims[1]) return "nhwc";
  if (strides[3] == 1 && strides[2] == dims[3] && strides[1] == dims[2] * dims[3]) return "nchw";
  return "strided";
}

const char* cudnn_conv_algorithm(int64_t a) {
  static const char* kNames[] = {
      "implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling",
      "winograd",      "winograd_nonfused"};
  return a >= 0 && a < 8 ? kNames[a] : "";
}

const char* cudnn_activation(int64_t mode) {
  switch (mode) {
    case 0:
      return "sigmoid";
    case 1:
      return "relu";
    case 2:
      return "tanh";
    case 3:
      return "clipped_relu";
    case 4:
      return "elu";
    case 5:
      return "none";
    default:
      return "other";
  }
}

std::string dtype_of(const std::string& tracer_name) {
  if (tracer_name.empty()) return "";
  std::string d = normalize_dtype(tracer_name);
  return d.empty() ? tracer_name : d;
}

// A oneDNN format tag ("abcd", "acdb", "aBcd16b", "ABcd16b16a") -> nchw / nhwc for plain rank-4
// tags, "blocked:<tag>" for blocked ones, "" for anything else.
std::string layout_from_tag(std::string_view tag) {
  if (tag == "abcd") return "nchw";
  if (tag == "acdb") return "nhwc";
  for (char c : tag)
    if (std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)))
      return "blocked:" + std::string(tag);
  return "";
}

// oneDNN verbose "formats": "src_f32::blocked:aBcd16b:f0 wei_f32::blocked:ABcd16b16a:f0 ..." ->
// the tag of argument `arg` (src, wei, dst); "" when absent.
std::string format_tag(std::string_view formats, std::string_view arg) {
  size_t pos = 0;
  while (pos < formats.size()) {
    size_t end = formats.find(' ', pos);
    if (end == std::string_view::npos) end = formats.size();
    std::string_view item = formats.substr(pos, end - pos);
    pos = end + 1;
    size_t underscore = item.find('_');
    if (underscore == std::string_view::npos || item.substr(0, underscore) != arg) continue;
    // <arg>_<dt>:<extra>:<kind>:<tag>:<flags>; "::" leaves an empty extra field.
    std::vector<std::string_view> fields;
    size_t f = 0;
    while (f <= item.size()) {
      size_t colon = item.find(':', f);
      if (colon == std::string_view::npos) colon = item.size();
      fields.push_back(item.substr(f, colon - f));
      f = colon + 1;
    }
    return fields.size() >= 4 ? std::string(fields[3]) : "";
  }
  return "";
}

// oneDNN verbose problem descriptor, e.g. "g32mb1_ic32oc32_ih56oh56kh3sh1dh0ph1_iw56ow56kw3sw1dw0pw1":
// letters followed by a number -> key/value ("kh" -> 3).
std::map<std::string, int64_t> desc_values(std::string_view desc) {
  std::map<std::string, int64_t> out;
  size_t i = 0;
  while (i < desc.size()) {
    size_t k = i;
    while (k < desc.size() && std::isalpha(static_cast<unsigned char>(desc[k]))) ++k;
    size_t v = k;
    int64_t value = 0;
    while (v < desc.size() && std::isdigit(static_cast<unsigned char>(desc[v])) && v - k < 18)
      value = value * 10 + (desc[v++] - '0');
    if (k > i && v > k) out[std::string(desc.substr(i, k - i))] = value;
    i = v > i ? v : i + 1;
    while (i < desc.size() && desc[i] == '_') ++i;
  }
  return out;
}

// oneDNN's verbose post-ops ("sum+eltwise_relu", "eltwise_clip:0:6", "eltwise_relu:0.01", entries
// separated by '+' in 2.x and ';' in older versions) in the bound's notation (FusionChain::post_ops):
// "sum+relu", "clip", "leaky_relu".
std::string onednn_post_ops(std::string_view text) {
  while (!text.empty() && (text.back() == '\'' || text.back() == ';' || text.back() == '+'))
    text.remove_suffix(1);
  while (!text.empty() && text.front() == '\'') text.remove_prefix(1);
  if (text.empty() || text == "none") return "none";
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find_first_of("+;", start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view entry = text.substr(start, end - start);
    start = end + 1;
    if (entry.empty()) continue;
    size_t colon = entry.find(':');
    std::string_view name = entry.substr(0, colon);
    std::string_view args = colon == std::string_view::npos ? std::string_view() : entry.substr(colon + 1);
    if (starts_with(name, "eltwise_")) name.remove_prefix(8);
    std::string n(name);
    if (n == "clip_v2") n = "clip";
    // relu with a non-zero negative slope is oneDNN's leaky ReLU.
    if (n == "relu" && !args.empty() && std::strtod(std::string(args).c_str(), nullptr) != 0)
      n = "leaky_relu";
    out += (out.empty() ? "" : "+") + n;
  }
  return out.empty() ? "none" : out;
}

bool is_layout_kernel(std::string_view name) {
  std::string n = lower(name);
  for (const char* k : {"nchwtonhwc", "nhwctonchw", "nchw_to_nhwc", "nhwc_to_nchw", "nchw2nhwc", "nhwc2nchw"})
    if (n.find(k) != std::string::npos) return true;
  return false;
}

std::string device_category(const SpanRecord& s) {
  const auto a = static_cast<ActivityType>(s.activity);
  if (is_memcpy(a)) return "memcpy";
  if (a == ActivityType::kMemset) return "memset";
  if (a == ActivityType::kSync) return "sync";
  if (a == ActivityType::kGraph) return "graph";
  return "kernel";
}

}  // namespace

std::string call_class_of(std::string_view name) {
  if (starts_with(name, "onednn::")) {
    std::string_view kind = name.substr(8);
    if (kind == "convolution" || kind == "deconvolution") return "conv";
    if (kind == "inner_product" || kind == "matmul") return "gemm";
    if (starts_with(kind, "pooling")) return "pool";
    if (kind == "eltwise" || kind == "prelu") return "eltwise";
    if (kind == "batch_normalization") return "batch_norm";
    if (starts_with(kind, "softmax") || starts_with(kind, "logsoftmax")) return "softmax";
    if (kind == "binary" || kind == "sum") return "binary";
    if (kind == "concat") return "concat";
    if (kind == "lrn") return "lrn";
    if (kind == "reorder") return "reorder";
    return "other";
  }
  if (starts_with(name, "cudnn")) {
    // PyTorch's cuDNN v8+ path runs convolutions through the backend (graph) API.
    if (name == "cudnnConvolutionForward" || name == "cudnnConvolutionBiasActivationForward" ||
        name == "cudnnBackendExecute")
      return "conv";
    if (name == "cudnnPoolingForward") return "pool";
    if (name == "cudnnActivationForward") return "eltwise";
    if (starts_with(name, "cudnnBatchNormalizationForward")) return "batch_norm";
    if (name == "cudnnSoftmaxForward") return "softmax";
    if (name == "cudnnAddTensor" || name == "cudnnOpTensor") return "binary";
    if (name == "cudnnTransformTensor") return "reorder";
    if (starts_with(name, "cudnnLRN")) return "lrn";
    return "other";
  }
  if (starts_with(name, "cublas")) {
    std::string n = lower(name);
    return n.find("gemm") != std::string::npos || n.find("matmul") != std::string::npos ? "gemm" : "other";
  }
  return "other";
}

std::string expected_call_class(const std::string& op) {
  if (op == "Conv") return "conv";
  if (op == "Gemm" || op == "MatMul") return "gemm";
  if (op.find("Pool") != std::string::npos) return "pool";
  if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "Clip" || op == "Elu" || op == "LeakyRelu")
    return "eltwise";
  if (op == "BatchNormalization") return "batch_norm";
  if (op == "Softmax") return "softmax";
  if (op == "Add" || op == "Mul" || op == "Sub" || op == "Div") return "binary";
  if (op == "Concat") return "concat";
  if (op == "LRN") return "lrn";
  return "";
}

CallParams parse_call(const model::Trace& trace, size_t span) {
  CallParams p;
  std::string_view name = trace.name(trace.spans[span]);
  p.call_class = call_class_of(name);
  auto str = [&](std::string_view key) {
    auto a = trace.find_attr(span, key);
    return a ? trace.attr_value_string(*a) : std::string();
  };
  auto integer = [&](std::string_view key, int64_t fallback) {
    std::string v = str(key);
    std::vector<int64_t> d = parse_dims(v);
    return d.size() == 1 ? d[0] : fallback;
  };
  if (starts_with(name, "onednn::")) {
    p.library = "onednn";
    p.algorithm = str("impl");
    // "src:[1,3,224,224] weights:[64,3,7,7] dst:[1,64,112,112]" (see src/onednn/onednn_interposer.cc)
    std::string shapes = str("shapes");
    size_t pos = 0;
    while (pos < shapes.size()) {
      size_t colon = shapes.find(":[", pos), close = shapes.find(']', pos);
      if (colon == std::string::npos || close == std::string::npos || close < colon) break;
      std::string label = shapes.substr(pos, colon - pos);
      while (!label.empty() && label.front() == ' ') label.erase(label.begin());
      std::vector<int64_t> dims = parse_dims(std::string_view(shapes).substr(colon + 2, close - colon - 2));
      if (label == "src") p.src = dims;
      if (label == "weights") p.weights = dims;
      if (label == "dst") p.dst = dims;
      pos = close + 1;
    }
    // Grouped convolution weights are G x O/G x I/G x spatial: fold to ONNX's O x I/G x spatial.
    if (p.call_class == "conv" && !p.src.empty() && p.weights.size() == p.src.size() + 1) {
      p.groups = p.weights[0];
      Shape folded(p.weights.begin() + 1, p.weights.end());
      folded[0] *= p.groups;
      p.weights = folded;
    } else if (p.call_class == "conv" && !p.weights.empty()) {
      p.groups = 1;
    }
    // Written by the oneDNN tracer (from the primitive descriptor or oneDNN's verbose line) where
    // it could: data type, format tags, attributes (post-ops), the problem descriptor, prop kind.
    p.dtype = dtype_of(str("dtype"));
    p.prop_kind = str("prop_kind");
    std::string formats = str("formats");
    if (!formats.empty() && p.src.size() == 4) p.layout = layout_from_tag(format_tag(formats, "src"));
    if (!formats.empty()) p.weights_layout = layout_from_tag(format_tag(formats, "wei"));
    if (p.call_class == "reorder" && !formats.empty()) {
      std::string from = format_tag(formats, "src"), to = format_tag(formats, "dst");
      if (!from.empty() && !to.empty()) p.conversion = from + " -> " + to;
    }
    if (auto attrs = trace.find_attr(span, "attrs")) {
      std::string text = trace.attr_value_string(*attrs);
      size_t at = text.find("post-ops:");
      std::string post = at == std::string::npos ? "none" : text.substr(at + 9, text.find(' ', at) - at - 9);
      if (p.call_class == "conv") p.post_ops = onednn_post_ops(post);
    }
    if (p.call_class == "conv" || p.call_class == "pool") {
      std::map<std::string, int64_t> d = desc_values(str("desc"));
      std::vector<std::string> axes;
      for (const char* axis : {"d", "h", "w"})
        if (d.count(std::string("k") + axis)) axes.push_back(axis);
      if (!axes.empty()) {
        p.strides.clear();
        p.pads.clear();
        p.dilations.clear();
        p.window.clear();
        for (const std::string& a : axes) {
          p.window.push_back(d["k" + a]);
          p.strides.push_back(d.count("s" + a) ? d["s" + a] : 1);
          p.pads.push_back(d.count("p" + a) ? d["p" + a] : 0);
          p.dilations.push_back((d.count("d" + a) ? d["d" + a] : 0) + 1);  // oneDNN counts from 0
        }
        if (p.call_class == "conv" && d.count("g")) p.groups = d["g"];
      }
    }
  } else if (starts_with(name, "cudnn")) {
    p.library = "cudnn";
    p.src = parse_dims(str("x.shape"));
    p.weights = parse_dims(str("w.shape"));
    p.dst = parse_dims(str("y.shape"));
    p.dtype = dtype_of(str("x.dtype"));
    p.layout = layout_from_strides(p.src, parse_dims(str("x.strides")));
    if (p.call_class == "reorder") {  // cudnnTransformTensor: x and y differ in layout only
      std::string to = layout_from_strides(p.dst, parse_dims(str("y.strides")));
      if (!p.layout.empty() && !to.empty()) p.conversion = p.layout + " -> " + to;
    }
    p.weights_layout = lower(str("w.format"));
    if (p.weights_layout == "other") p.weights_layout.clear();
    const bool pool = p.call_class == "pool";
    p.pads = parse_dims(str(pool ? "pool.pads" : "conv.pads"));
    p.strides = parse_dims(str(pool ? "pool.strides" : "conv.strides"));
    p.dilations = parse_dims(str("conv.dilations"));
    p.window = parse_dims(str("pool.window"));
    p.groups = integer("conv.groups", 0);
    if (name == "cudnnConvolutionForward" || name == "cudnnConvolutionBiasActivationForward") {
      int64_t algo = integer("algorithm", -1);
      p.algorithm = cudnn_conv_algorithm(algo);
      p.post_ops =
          name == "cudnnConvolutionForward" ? "none" : cudnn_activation(integer("activation.mode", 5));
    }
  } else if (starts_with(name, "cublas")) {
    p.library = "cublas";
    p.gemm_m = integer("m", 0);
    p.gemm_n = integer("n", 0);
    p.gemm_k = integer("k", 0);
    p.dtype = dtype_of(str("a.dtype"));
  }
  return p;
}

InefficiencyFindings find_inefficiencies(const LayerModel& model, const model::Trace& trace,
                                         const std::vector<size_t>& ops, const std::vector<int32_t>& op_layer,
                                         int64_t window_start, int64_t window_end) {
  InefficiencyFindings f;
  const uint8_t layer_level = static_cast<uint8_t>(Level::kLayer);
  const uint8_t library_level = static_cast<uint8_t>(Level::kLibrary);
  const uint8_t runtime_level = static_cast<uint8_t>(Level::kRuntimeApi);
  const uint8_t device_level = static_cast<uint8_t>(Level::kDevice);

  std::unordered_map<size_t, size_t> op_of;  // span index -> position in ops
  for (size_t k = 0; k < ops.size(); ++k) op_of[ops[k]] = k;
  std::vector<int32_t> slot_of_op(ops.size(), -1);  // position in ops -> f.layers
  std::vector<std::pair<int32_t, size_t>> matched;
  for (size_t k = 0; k < ops.size() && k < op_layer.size(); ++k)
    if (op_layer[k] >= 0 && static_cast<size_t>(op_layer[k]) < model.layers.size())
      matched.push_back({op_layer[k], k});
  std::sort(matched.begin(), matched.end());
  for (auto& [layer, k] : matched) {
    slot_of_op[k] = static_cast<int32_t>(f.layers.size());
    LayerCalls lc;
    lc.layer = static_cast<uint32_t>(layer);
    lc.framework_op = std::string(trace.name(trace.spans[ops[k]]));
    lc.op_ns = static_cast<double>(trace.spans[ops[k]].duration_ns());
    f.layers.push_back(std::move(lc));
  }

  std::vector<size_t> library, runtime, device;
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    uint8_t level = trace.spans[i].level;
    if (level == library_level)
      library.push_back(i);
    else if (level == runtime_level)
      runtime.push_back(i);
    else if (level == device_level)
      device.push_back(i);
  }
  if (library.empty() && runtime.empty() && device.empty())
    return f;  // layer-level trace: nothing to inspect

  const model::SpanTree tree = model::build_span_tree(trace);
  auto in_window = [&](size_t i) {
    return trace.spans[i].start_ns >= window_start && trace.spans[i].end_ns <= window_end;
  };
  // The framework op (outermost, in this iteration) a span ran under: its position in ops; -1 when it
  // ran under none; -2 when it ran under a framework op outside the analysed iteration.
  auto owner_of = [&](size_t i) -> int64_t {
    bool under_op = false;
    int32_t cur = tree.parent(i);
    for (int guard = 0; cur != model::kNoParent && guard < 4096; ++guard) {
      auto it = op_of.find(static_cast<size_t>(cur));
      if (it != op_of.end()) return static_cast<int64_t>(it->second);
      if (trace.spans[static_cast<size_t>(cur)].level == layer_level) under_op = true;
      cur = tree.parent(static_cast<size_t>(cur));
    }
    return under_op ? -2 : -1;
  };
  // The (outermost) library call a runtime call or device work happened inside; kNoParent when none.
  auto library_ancestor = [&](size_t i) -> int32_t {
    int32_t found = model::kNoParent;
    int32_t cur = tree.parent(i);
    for (int guard = 0; cur != model::kNoParent && guard < 4096; ++guard) {
      uint8_t level = trace.spans[static_cast<size_t>(cur)].level;
      if (level == library_level) found = cur;
      if (level < library_level) break;
      cur = tree.parent(static_cast<size_t>(cur));
    }
    return found;
  };

  // Library calls: a layer's own calls, or calls made outside every matched layer.
  struct Orphan {
    ObservedCall call;
    int64_t owner;
  };
  std::vector<Orphan> orphans;
  std::unordered_map<size_t, std::pair<int32_t, size_t>> call_at;  // span -> (slot or -1, call/orphan index)
  std::sort(library.begin(), library.end(),
            [&](size_t a, size_t b) { return trace.spans[a].start_ns < trace.spans[b].start_ns; });
  for (size_t i : library) {
    int32_t parent = tree.parent(i);
    if (parent != model::kNoParent && trace.spans[static_cast<size_t>(parent)].level == library_level)
      continue;  // a call the library made to itself: part of the outer call
    int64_t owner = owner_of(i);
    if (owner == -2 || (owner == -1 && !in_window(i))) continue;  // another iteration
    f.has_library_spans = true;
    ObservedCall c;
    c.span = i;
    c.name = std::string(trace.name(trace.spans[i]));
    c.params = parse_call(trace, i);
    c.start_ns = trace.spans[i].start_ns;
    c.host_ns = static_cast<double>(trace.spans[i].duration_ns());
    int32_t slot = owner >= 0 ? slot_of_op[static_cast<size_t>(owner)] : -1;
    if (slot >= 0) {
      call_at[i] = {slot, f.layers[static_cast<size_t>(slot)].calls.size()};
      f.layers[static_cast<size_t>(slot)].calls.push_back(std::move(c));
    } else {
      call_at[i] = {-1, orphans.size()};
      orphans.push_back({std::move(c), owner});
    }
  }
  auto owner_name = [&](int64_t owner) {
    return owner >= 0 ? std::string(trace.name(trace.spans[ops[static_cast<size_t>(owner)]])) : std::string();
  };
  auto owner_layer = [&](int64_t owner) -> int32_t {
    if (owner < 0) return -1;
    int32_t slot = slot_of_op[static_cast<size_t>(owner)];
    return slot >= 0 ? static_cast<int32_t>(f.layers[static_cast<size_t>(slot)].layer) : -1;
  };
  // Work the framework did itself inside a layer that made library calls is extra; inside a layer
  // that made none it is the layer's own implementation (e.g. PyTorch's native ReLU), not extra.
  auto layer_made_calls = [&](int64_t owner) {
    int32_t slot = owner >= 0 ? slot_of_op[static_cast<size_t>(owner)] : -1;
    return slot < 0 || !f.layers[static_cast<size_t>(slot)].calls.empty();
  };

  for (size_t i : device) {
    const SpanRecord& s = trace.spans[i];
    if (s.kind == static_cast<uint8_t>(SpanKind::kInstant) ||
        s.kind == static_cast<uint8_t>(SpanKind::kCounter))
      continue;
    int64_t owner = owner_of(i);
    if (owner == -2 || (owner == -1 && !in_window(i))) continue;
    f.has_device_spans = true;
    double ns = static_cast<double>(s.duration_ns());
    std::string name(trace.name(s));
    int32_t lib = library_ancestor(i);
    if (lib != model::kNoParent) {
      auto it = call_at.find(static_cast<size_t>(lib));
      if (it == call_at.end()) continue;  // inside a call of another iteration
      ObservedCall& c = it->second.first >= 0
                            ? f.layers[static_cast<size_t>(it->second.first)].calls[it->second.second]
                            : orphans[it->second.second].call;
      c.device_ns += ns;
      if (is_layout_kernel(name)) c.layout_kernels.push_back({name, ns});
      continue;
    }
    if (!layer_made_calls(owner)) continue;
    f.extras.push_back(
        {name, device_category(s), true, owner_layer(owner), owner_name(owner), "", ns, i, ""});
  }
  for (size_t i : runtime) {
    const SpanRecord& s = trace.spans[i];
    if (s.kind == static_cast<uint8_t>(SpanKind::kLaunch)) continue;  // its device work is counted
    if (library_ancestor(i) != model::kNoParent) continue;
    int64_t owner = owner_of(i);
    if (owner == -2 || (owner == -1 && !in_window(i)) || !layer_made_calls(owner)) continue;
    f.extras.push_back({std::string(trace.name(s)), "runtime_api", false, owner_layer(owner),
                        owner_name(owner), "", static_cast<double>(s.duration_ns()), i, ""});
  }

  // Each layer: its main call, and the rest as extra calls (reorders labelled with the operand).
  for (LayerCalls& lc : f.layers) {
    const Layer& layer = model.layers[lc.layer];
    const std::string want = expected_call_class(layer.op_type);
    double covered = 0, longest = -1;
    for (size_t c = 0; c < lc.calls.size(); ++c) {
      covered += lc.calls[c].host_ns;
      if (!want.empty() && lc.calls[c].params.call_class == want && lc.calls[c].time_ns() > longest) {
        longest = lc.calls[c].time_ns();
        lc.main_call = static_cast<int32_t>(c);
      }
    }
    lc.outside_calls_ns = lc.calls.empty() ? 0 : std::max(0.0, lc.op_ns - covered);
    const ObservedCall* main = lc.main_call >= 0 ? &lc.calls[static_cast<size_t>(lc.main_call)] : nullptr;
    // Operand shapes to recognise a reorder by: the main call's, else the layer's.
    Shape src = main && !main->params.src.empty() ? main->params.src
                : layer.input_shapes.empty()      ? Shape{}
                                                  : layer.input_shapes[0];
    Shape dst = main && !main->params.dst.empty() ? main->params.dst
                : layer.output_shapes.empty()     ? Shape{}
                                                  : layer.output_shapes[0];
    Shape weights = main && !main->params.weights.empty() ? main->params.weights
                    : layer.weight_shapes.empty()         ? Shape{}
                                                          : layer.weight_shapes[0];
    Shape raw_weights;  // oneDNN reorders grouped weights in their G x O/G x ... form
    if (main && main->params.groups > 1 && !weights.empty()) {
      raw_weights = weights;
      raw_weights[0] /= main->params.groups;
      raw_weights.insert(raw_weights.begin(), main->params.groups);
    }
    for (size_t c = 0; c < lc.calls.size(); ++c) {
      if (static_cast<int32_t>(c) == lc.main_call) continue;
      const ObservedCall& call = lc.calls[c];
      ExtraWork w{call.name,
                  "library_call",
                  call.device_ns > 0,
                  static_cast<int32_t>(lc.layer),
                  lc.framework_op,
                  "",
                  call.time_ns(),
                  call.span,
                  ""};
      if (call.params.call_class == "reorder") {
        w.category = "reorder";
        w.detail = call.params.conversion;
        const Shape& d = !call.params.src.empty() ? call.params.src : call.params.dst;
        bool before = !main || call.start_ns < main->start_ns;
        if (!d.empty() && (d == weights || d == raw_weights) && d != src && d != dst)
          w.role = "weights";
        else if (!d.empty() && d == src && (before || d != dst))
          w.role = "src";
        else if (!d.empty() && d == dst)
          w.role = "dst";
        else if (!d.empty() && (d == weights || d == raw_weights))
          w.role = "weights";
      }
      f.extras.push_back(std::move(w));
    }
  }
  for (Orphan& o : orphans) {
    bool reorder = o.call.params.call_class == "reorder";
    f.extras.push_back({o.call.name, reorder ? "reorder" : "library_call", o.call.device_ns > 0, -1,
                        owner_name(o.owner), "", o.call.time_ns(), o.call.span, o.call.params.conversion});
  }
  return f;
}

namespace {

struct Mismatch {
  std::string parameter, expected, observed;
};

std::string pads_text(const std::vector<int64_t>& begin, const std::vector<int64_t>& end) {
  return begin == end ? dims_text(begin) : dims_text(begin) + " / " + dims_text(end);
}

// The layer's parameters vs the call's, where the call's tracer recorded them.
std::vector<Mismatch> compare_params(const LayerModel& model, uint32_t li, const ModelEstimate& e,
                                     const CallParams& p) {
  std::vector<Mismatch> out;
  const Layer& layer = model.layers[li];
  const std::string& cls = p.call_class;
  const size_t spatial =
      !layer.input_shapes.empty() && layer.input_shapes[0].size() > 2 ? layer.input_shapes[0].size() - 2 : 0;
  auto spatial_attr = [&](const char* key, int64_t fallback) {
    std::vector<int64_t> v = layer.ints_attr(key);
    if (v.size() != spatial) v.assign(spatial, fallback);
    return v;
  };
  std::vector<int64_t> pads = layer.ints_attr("pads");
  if (pads.size() != 2 * spatial) pads.assign(2 * spatial, 0);
  std::vector<int64_t> pads_begin(pads.begin(), pads.begin() + static_cast<long>(spatial));
  std::vector<int64_t> pads_end(pads.begin() + static_cast<long>(spatial), pads.end());
  const bool global_pool = starts_with(layer.op_type, "Global");

  bool padded_outside = false;
  if (!p.src.empty() && !layer.input_shapes.empty() && cls != "gemm" && cls != "binary" && cls != "concat") {
    const Shape& want = layer.input_shapes[0];
    if (p.src != want) {
      bool grown = (cls == "conv" || cls == "pool") && p.src.size() == want.size() && want.size() > 2 &&
                   p.src[0] == want[0] && p.src[1] == want[1];
      for (size_t d = 2; grown && d < want.size(); ++d) grown = p.src[d] >= want[d];
      if (grown) {
        padded_outside = true;
        out.push_back({"padding", "pads " + pads_text(pads_begin, pads_end) + " inside the call",
                       "input padded outside the call: " + shape_text(want) + " -> " + dims_text(p.src)});
      } else {
        out.push_back({"src shape", shape_text(want), dims_text(p.src)});
      }
    }
  }
  if (!p.weights.empty() && cls == "conv" && !layer.weight_shapes.empty() &&
      p.weights != layer.weight_shapes[0])
    out.push_back({"weights shape", shape_text(layer.weight_shapes[0]), dims_text(p.weights)});
  if (!p.dst.empty() && !layer.output_shapes.empty() && p.dst != layer.output_shapes[0])
    out.push_back({"dst shape", shape_text(layer.output_shapes[0]), dims_text(p.dst)});
  if (cls == "conv") {
    if (!p.pads.empty() && !padded_outside && p.pads != pads_begin)
      out.push_back({"padding", pads_text(pads_begin, pads_end), dims_text(p.pads)});
    else if (p.library == "cudnn" && !p.pads.empty() && !padded_outside && pads_begin != pads_end)
      out.push_back({"padding", "asymmetric " + pads_text(pads_begin, pads_end),
                     "symmetric " + dims_text(p.pads) + " (cannot express it)"});
    if (!p.strides.empty() && p.strides != spatial_attr("strides", 1))
      out.push_back({"strides", dims_text(spatial_attr("strides", 1)), dims_text(p.strides)});
    if (!p.dilations.empty() && p.dilations != spatial_attr("dilations", 1))
      out.push_back({"dilations", dims_text(spatial_attr("dilations", 1)), dims_text(p.dilations)});
    if (p.groups > 0 && p.groups != layer.int_attr("group", 1))
      out.push_back({"groups", std::to_string(layer.int_attr("group", 1)), std::to_string(p.groups)});
  }
  if (cls == "pool" && !global_pool) {
    if (!p.window.empty() && p.window != spatial_attr("kernel_shape", 1))
      out.push_back({"window", dims_text(spatial_attr("kernel_shape", 1)), dims_text(p.window)});
    if (!p.strides.empty() && p.strides != spatial_attr("strides", 1))
      out.push_back({"strides", dims_text(spatial_attr("strides", 1)), dims_text(p.strides)});
    if (!p.pads.empty() && !padded_outside && p.pads != pads_begin)
      out.push_back({"padding", pads_text(pads_begin, pads_end), dims_text(p.pads)});
  }
  if (cls == "gemm" && p.gemm_m > 0 && !layer.input_shapes.empty() && !layer.output_shapes.empty() &&
      layer.input_shapes[0].size() == 2 && layer.output_shapes[0].size() == 2) {
    int64_t n = layer.input_shapes[0][0], k = layer.input_shapes[0][1], o = layer.output_shapes[0][1];
    bool ok = p.gemm_k == k && ((p.gemm_m == n && p.gemm_n == o) || (p.gemm_m == o && p.gemm_n == n));
    if (!ok)
      out.push_back(
          {"gemm m/n/k", "{" + std::to_string(n) + "," + std::to_string(o) + "}/" + std::to_string(k),
           std::to_string(p.gemm_m) + "," + std::to_string(p.gemm_n) + "/" + std::to_string(p.gemm_k)});
  }
  if (!p.dtype.empty() && p.dtype != e.dtype) out.push_back({"data type", e.dtype, p.dtype});
  // The bound's activation layout: nchw/nhwc, or "blocked" (any blocked tag the library picks).
  auto layout_ok = [&](const std::string& seen) {
    return e.layout == "blocked" ? starts_with(seen, "blocked") : seen == e.layout;
  };
  if (!p.layout.empty() && cls != "gemm" && !layout_ok(p.layout))
    out.push_back({"layout", e.layout, p.layout});
  // oneDNN benchmarks let the library pick (and pre-pack) the weights format; cuDNN's is the layout's.
  if (p.library == "cudnn" && cls == "conv" && !p.weights_layout.empty() && p.weights_layout != e.layout)
    out.push_back({"weights layout", e.layout, p.weights_layout});
  if (!p.prop_kind.empty() && p.prop_kind != "forward_inference" && cls != "reorder")
    out.push_back({"propagation kind", "forward_inference", p.prop_kind});
  if (cls == "conv" && !p.post_ops.empty()) {
    std::string want = "none";
    if (e.fused)
      if (std::optional<FusionChain> chain = fusion_chain(model, li)) want = chain->post_ops;
    if (p.library == "cudnn") {
      // cuDNN's spans record the fused activation only (a residual z is not among the attributes), in
      // cuDNN's names.
      std::vector<std::string> ops = split_post_ops(want);
      std::string act = !ops.empty() && ops.back() != "sum" && ops.back() != "none" ? ops.back() : "none";
      want = act == "logistic" ? "sigmoid" : act == "clip" ? "clipped_relu" : act;
    }
    if (p.post_ops != want) out.push_back({"post-ops", want, p.post_ops});
  }
  const BenchRecord* best = li < e.best.size() ? e.best[li] : nullptr;
  if (best && (cls == "conv" || cls == "gemm") && !p.algorithm.empty()) {
    if (p.library == "onednn" && best->backend == "cpu" && !best->implementation.empty() &&
        p.algorithm != best->implementation)
      out.push_back({"algorithm", best->algorithm + " (" + best->implementation + ")", p.algorithm});
    if (p.library == "cudnn" && best->backend == "cuda" && p.algorithm != best->algorithm)
      out.push_back({"algorithm", best->algorithm, p.algorithm});
  }
  return out;
}

std::string layout_expectation(const ModelEstimate& e) {
  return e.layout == "blocked" ? "kept in the library's blocked layout between layers (no reorder)"
                               : e.layout + " as benchmarked (no reorder)";
}

}  // namespace

InefficiencyReport analyze_inefficiencies(const LayerModel& model, const ModelEstimate& e,
                                          const InefficiencyFindings& f) {
  InefficiencyReport r;
  std::string backend = "cpu";
  for (const LayerCalls& lc : f.layers)
    for (const ObservedCall& c : lc.calls)
      if (c.params.library == "cudnn" || c.params.library == "cublas") backend = "cuda";
  std::map<int32_t, std::vector<const ExtraWork*>> extras_of;
  for (const ExtraWork& w : f.extras) {
    if (w.layer >= 0) {
      extras_of[w.layer].push_back(&w);
      (w.category == "reorder" ? r.reorder_ns : r.extra_in_layers_ns) += w.ns;
    } else {
      r.extra_outside_layers_ns += w.ns;
    }
  }
  for (const LayerCalls& lc : f.layers) {
    const Layer& layer = model.layers[lc.layer];
    LayerInefficiency li;
    li.layer = lc.layer;
    li.framework_op = lc.framework_op;
    li.expected_call = plan_layer(layer, backend, e.dtype, e.layout).library_call;
    li.calls = lc.calls.size();
    if (lc.layer < e.status.size() && e.status[lc.layer] == LayerStatus::kMeasured)
      li.bound_ns = e.latency_ns[lc.layer];
    std::set<std::string> deviated;
    if (lc.main_call >= 0) {
      const ObservedCall& main = lc.calls[static_cast<size_t>(lc.main_call)];
      li.main_call_ns = main.time_ns();
      std::vector<Mismatch> mismatches = compare_params(model, lc.layer, e, main.params);
      for (const auto& [kernel, ns] : main.layout_kernels)
        mismatches.push_back({"layout (inside the call)", layout_expectation(e), "converted by " + kernel});
      if (!mismatches.empty()) {
        double excess = li.bound_ns >= 0 ? std::max(0.0, li.main_call_ns - li.bound_ns) : 0;
        li.deviation_excess_ns = excess;
        for (const Mismatch& m : mismatches) {
          r.deviations.push_back({lc.layer, main.name, m.parameter, m.expected, m.observed, main.time_ns(),
                                  excess, mismatches.size() > 1});
          deviated.insert(m.parameter);
        }
      }
    }
    for (const ExtraWork* w : extras_of[static_cast<int32_t>(lc.layer)]) {
      if (w->category != "reorder") {
        li.extra_ns += w->ns;
        continue;
      }
      li.reorder_ns += w->ns;
      std::string parameter = w->role.empty() ? "layout" : w->role + " layout";
      std::string expected =
          w->role == "weights" ? "pre-packed once (reorder not per call)" : layout_expectation(e);
      std::string observed = w->role == "weights" ? "reordered at every call"
                             : w->role == "dst"   ? "reordered after the call"
                             : w->role == "src"   ? "reordered before the call"
                                                  : "reorder around the call";
      if (!w->detail.empty()) observed += " (" + w->detail + ")";
      r.deviations.push_back({lc.layer, w->name, parameter, expected, observed, w->ns, w->ns, false});
      deviated.insert(parameter);
    }
    if (!f.has_device_spans) li.outside_ns = lc.outside_calls_ns;
    li.deviated.assign(deviated.begin(), deviated.end());
    if (!li.deviated.empty()) ++r.deviating_layers;
    r.outside_calls_ns += li.outside_ns;
    r.deviation_excess_ns += li.deviation_excess_ns;
    r.layers.push_back(std::move(li));
  }
  std::stable_sort(r.layers.begin(), r.layers.end(),
                   [](const LayerInefficiency& a, const LayerInefficiency& b) {
                     return a.overhead_ns() > b.overhead_ns();
                   });
  std::stable_sort(
      r.deviations.begin(), r.deviations.end(),
      [](const ParameterDeviation& a, const ParameterDeviation& b) { return a.cost_ns > b.cost_ns; });
  return r;
}

std::vector<Table> inefficiency_tables(const LayerModel& model, const ModelEstimate& e,
                                       const InefficiencyFindings& f, double end_to_end_ns, size_t top) {
  InefficiencyReport r = analyze_inefficiencies(model, e, f);
  std::vector<Table> tables;
  const char* no_library =
      "no library-level spans in the analysed iteration: record with --level library (oneDNN on CPU; "
      "cuDNN/cuBLAS with the GPU collector) to inspect the calls";

  Table dev;
  dev.name = "parameter_deviations";
  dev.title = "Parameter deviations: library calls that ran differently from what the layer needs";
  dev.columns = {"rank",     "layer",   "call",    "parameter", "expected",
                 "observed", "call_us", "cost_us", "cost_is"};
  for (size_t k = 0; k < r.deviations.size() && k < top; ++k) {
    const ParameterDeviation& d = r.deviations[k];
    bool conversion = call_class_of(d.call) == "reorder";
    dev.rows.push_back({Cell::integer(static_cast<int64_t>(k + 1)), Cell::text(model.layers[d.layer].name),
                        Cell::text(d.call), Cell::text(d.parameter), Cell::text(d.expected),
                        Cell::text(d.observed), Cell::real(d.call_ns / 1e3, 2),
                        Cell::real(d.cost_ns / 1e3, 2),
                        Cell::text(conversion      ? "conversion time"
                                   : d.shared_cost ? "call excess, shared"
                                                   : "call excess")});
  }
  if (!f.has_library_spans && !f.has_device_spans) dev.notes.push_back(no_library);
  // Per parameter: layers and cost (a call's shared excess counted once per layer).
  std::map<std::string, std::pair<std::set<uint32_t>, double>> by_parameter;
  std::set<std::pair<std::string, uint32_t>> counted;
  for (const ParameterDeviation& d : r.deviations) {
    auto& agg = by_parameter[d.parameter];
    agg.first.insert(d.layer);
    if (!d.shared_cost || counted.insert({d.parameter, d.layer}).second) agg.second += d.cost_ns;
  }
  for (const auto& [parameter, agg] : by_parameter) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%s: %zu layers, %.2f us", parameter.c_str(), agg.first.size(),
                  agg.second / 1e3);
    dev.notes.push_back(buf);
  }
  if (r.deviations.size() > top)
    dev.notes.push_back(std::to_string(r.deviations.size() - top) + " more deviations not shown (--top)");
  dev.notes.push_back(
      "cost: for a conversion (reorder) its time; for the call's own parameters the call's time over the "
      "benchmarked latency, shared by that call's deviations (counted once in totals)");
  bool onednn = false, onednn_described = false;  // described: data type / format tags were recorded
  for (const LayerCalls& lc : f.layers)
    for (const ObservedCall& c : lc.calls)
      if (c.params.library == "onednn") {
        onednn = true;
        onednn_described = onednn_described || !c.params.dtype.empty() || !c.params.layout.empty();
      }
  if (onednn && !onednn_described)
    dev.notes.push_back(
        "these oneDNN spans record the implementation and logical shapes only: data type, format tags, "
        "strides/padding and post-ops are not compared; layouts are seen through the reorders around a call");
  tables.push_back(std::move(dev));

  Table extra;
  extra.name = "extra_calls";
  extra.title = "Extra calls and device work: what no layer's expected library call accounts for";
  extra.columns = {"rank", "name", "category", "where", "count", "layers", "total_us", "share_of_measured"};
  struct Agg {
    uint64_t count = 0;
    std::set<int32_t> layers;
    double ns = 0;
  };
  std::map<std::tuple<std::string, std::string, bool>, Agg> groups;
  double extra_total = 0;
  for (const ExtraWork& w : f.extras) {
    Agg& a = groups[{w.name, w.category, w.device}];
    ++a.count;
    if (w.layer >= 0) a.layers.insert(w.layer);
    a.ns += w.ns;
    extra_total += w.ns;
  }
  std::vector<std::pair<std::tuple<std::string, std::string, bool>, Agg>> ranked(groups.begin(),
                                                                                 groups.end());
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  auto share = [&](double ns) {
    return end_to_end_ns > 0 ? Cell::real(ns / end_to_end_ns, 3) : Cell::empty();
  };
  for (size_t k = 0; k < ranked.size() && k < top; ++k) {
    const auto& [key, a] = ranked[k];
    extra.rows.push_back({Cell::integer(static_cast<int64_t>(k + 1)), Cell::text(std::get<0>(key)),
                          Cell::text(std::get<1>(key)), Cell::text(std::get<2>(key) ? "device" : "host"),
                          Cell::integer(static_cast<int64_t>(a.count)),
                          Cell::integer(static_cast<int64_t>(a.layers.size())), Cell::real(a.ns / 1e3, 2),
                          share(a.ns)});
  }
  if (!ranked.empty())
    extra.rows.push_back({Cell::text("TOTAL"), Cell::text(""), Cell::text(""), Cell::text(""),
                          Cell::integer(static_cast<int64_t>(f.extras.size())), Cell::empty(),
                          Cell::real(extra_total / 1e3, 2), share(extra_total)});
  if (!f.has_library_spans && !f.has_device_spans) extra.notes.push_back(no_library);
  auto ms = [](double ns) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.3f ms", ns / 1e6);
    return std::string(buf);
  };
  extra.notes.push_back(
      "inside matched layers: reorders " + ms(r.reorder_ns) + ", other " + ms(r.extra_in_layers_ns) +
      "; in framework ops without an ONNX layer or outside every op: " + ms(r.extra_outside_layers_ns));
  extra.notes.push_back(
      "counted: library calls other than a layer's one expected call, and (GPU) kernels, copies, memsets and "
      "non-launch runtime calls made outside library calls by a layer that also called the library; a layer "
      "that made no library call ran its own kernels, which are its work, not extra");
  if (r.outside_calls_ns > 0)
    extra.notes.push_back("framework time inside matched ops outside their library calls (host, CPU runs): " +
                          ms(r.outside_calls_ns) + " (per layer: framework_inefficiency.outside_calls_us)");
  tables.push_back(std::move(extra));

  Table per_layer;
  per_layer.name = "framework_inefficiency";
  per_layer.title =
      "Framework inefficiency per layer: deviations, conversions and extra work around each call";
  per_layer.columns = {
      "rank",     "layer",      "type",       "framework_op", "expected_call",    "calls",      "call_us",
      "bound_us", "deviations", "reorder_us", "extra_us",     "outside_calls_us", "overhead_us"};
  double total_overhead = 0, total_reorder = 0, total_extra = 0, total_outside = 0;
  size_t shown = 0;
  for (const LayerInefficiency& li : r.layers) {
    total_overhead += li.overhead_ns();
    total_reorder += li.reorder_ns;
    total_extra += li.extra_ns;
    total_outside += li.outside_ns;
    if (shown >= top || li.overhead_ns() <= 0) continue;
    ++shown;
    std::string deviations;
    for (const std::string& d : li.deviated) deviations += (deviations.empty() ? "" : "; ") + d;
    const Layer& l = model.layers[li.layer];
    per_layer.rows.push_back({Cell::integer(static_cast<int64_t>(shown)), Cell::text(l.name),
                              Cell::text(l.op_type), Cell::text(li.framework_op),
                              Cell::text(li.expected_call), Cell::integer(static_cast<int64_t>(li.calls)),
                              li.main_call_ns >= 0 ? Cell::real(li.main_call_ns / 1e3, 2) : Cell::empty(),
                              li.bound_ns >= 0 ? Cell::real(li.bound_ns / 1e3, 2) : Cell::empty(),
                              Cell::text(deviations), Cell::real(li.reorder_ns / 1e3, 2),
                              Cell::real(li.extra_ns / 1e3, 2), Cell::real(li.outside_ns / 1e3, 2),
                              Cell::real(li.overhead_ns() / 1e3, 2)});
  }
  if (!r.layers.empty())
    per_layer.rows.push_back({Cell::text("TOTAL"), Cell::text(""), Cell::text(""), Cell::text(""),
                              Cell::text(""), Cell::empty(), Cell::empty(), Cell::empty(),
                              Cell::text(std::to_string(r.deviating_layers) + " layers deviate"),
                              Cell::real(total_reorder / 1e3, 2), Cell::real(total_extra / 1e3, 2),
                              Cell::real(total_outside / 1e3, 2), Cell::real(total_overhead / 1e3, 2)});
  if (!f.has_library_spans && !f.has_device_spans) per_layer.notes.push_back(no_library);
  per_layer.notes.push_back(
      "overhead = reorders + extra calls/device work + framework time outside the calls (CPU runs only: on a "
      "GPU "
      "run host gaps overlap device work) + the call's excess over its bound when its parameters deviate");
  per_layer.notes.push_back(
      "call_us: the layer's expected library call as run (device time where it launched "
      "work); empty when the framework ran its own kernel instead");
  tables.push_back(std::move(per_layer));
  return tables;
}

}  // namespace strata::lowerbound
