#include "lowerbound/analyses/call_params.h"

#include <cctype>
#include <cstdlib>
#include <map>

#include "core/activity_type.h"
#include "lowerbound/harness/bench_plan.h"

namespace strata::lowerbound {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s.empty() ? "-" : s;
}

bool is_layout_kernel(std::string_view name) {
  std::string n = lower(name);
  for (const char* k : {"nchwtonhwc", "nhwctonchw", "nchw_to_nhwc", "nhwc_to_nchw", "nchw2nhwc", "nhwc2nchw"})
    if (n.find(k) != std::string::npos) return true;
  return false;
}

std::string device_category(const trace::Trace& trace, size_t i) {
  // By the activity type the tracer or importer set (core/activity_type.h), never by the name.
  const ActivityType a = trace.spans[i].activity_type();
  if (is_memcpy(a)) return "memcpy";
  if (a == ActivityType::kMemset) return "memset";
  if (a == ActivityType::kSync) return "sync";
  if (a == ActivityType::kGraph) return "graph";
  return "kernel";
}

namespace {

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

CallParams parse_call(const trace::Trace& trace, size_t span) {
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

}  // namespace strata::lowerbound
