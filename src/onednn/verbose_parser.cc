#include "onednn/verbose_parser.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <optional>

namespace strata::onednn {
namespace {

using std::string_view;

constexpr size_t kMaxFields = 64;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }

bool is_marker(string_view f) { return f == "onednn_verbose" || f == "dnnl_verbose" || f == "mkldnn_verbose"; }

bool is_format_version(string_view f) {  // "v1": the layout version v3.6 added after the marker
  if (f.size() < 2 || f[0] != 'v') return false;
  for (size_t i = 1; i < f.size(); ++i)
    if (!is_digit(f[i])) return false;
  return true;
}

// Words that can stand in the operation position; anything else before one of them is a component.
bool is_operation(string_view f) {
  for (string_view op : {"exec", "info", "error", "warn", "check", "dispatch", "debuginfo", "profile"})
    if (f == op || (f.size() > op.size() && f.substr(0, op.size()) == op && f[op.size()] == ':')) return true;
  return f.substr(0, 6) == "create";
}

// "1700000000123.456789" (ms since the epoch, std::to_string's six decimals) -> ns, exactly: going
// through a double would round the ns value to 256 ns at today's epoch offsets.
std::optional<int64_t> parse_ms_to_ns(string_view text) {
  size_t i = 0;
  int64_t ms = 0;
  size_t int_digits = 0;
  while (i < text.size() && is_digit(text[i])) {
    if (++int_digits > 13) return std::nullopt;  // > ~300 years in ms: not a timestamp
    ms = ms * 10 + (text[i] - '0');
    ++i;
  }
  if (int_digits == 0 || ms > 9'000'000'000'000) return std::nullopt;  // keeps ns (and ns + a duration) in int64
  int64_t frac_ns = 0;
  if (i < text.size()) {
    if (text[i] != '.') return std::nullopt;
    ++i;
    int64_t scale = 100000;  // first decimal of a ms is 100 us = 100000 ns
    size_t frac_digits = 0;
    for (; i < text.size(); ++i) {
      if (!is_digit(text[i])) return std::nullopt;
      ++frac_digits;
      frac_ns += (text[i] - '0') * scale;
      scale /= 10;
    }
    if (frac_digits == 0) return std::nullopt;
  }
  return ms * 1000000 + frac_ns;
}

std::optional<double> parse_duration_ms(string_view text) {
  double v = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

// Descriptor grammar shared by convolution, pooling and inner product: lowercase keys followed by
// decimal values, '_' between groups ("g2mb1_ic4oc8_ih5oh3kh3sh1dh0ph0_iw5ow3kw3sw1dw0pw0").
struct KeyValues {
  std::array<std::pair<string_view, int64_t>, 40> items;
  size_t count = 0;
  std::optional<int64_t> get(string_view key) const {
    for (size_t i = 0; i < count; ++i)
      if (items[i].first == key) return items[i].second;
    return std::nullopt;
  }
};

bool parse_key_values(string_view desc, KeyValues* kv) {
  size_t i = 0;
  while (i < desc.size()) {
    if (desc[i] == '_') {
      ++i;
      continue;
    }
    size_t k = i;
    while (i < desc.size() && is_lower(desc[i])) ++i;
    if (i == k || i >= desc.size() || !is_digit(desc[i])) return false;
    string_view key = desc.substr(k, i - k);
    int64_t value = 0;
    size_t digits = 0;
    while (i < desc.size() && is_digit(desc[i])) {
      if (++digits > 15) return false;
      value = value * 10 + (desc[i] - '0');
      ++i;
    }
    if (kv->count == kv->items.size()) return false;
    kv->items[kv->count++] = {key, value};
  }
  return kv->count > 0;
}

// "1x64x56x56" -> dims; false on anything else (runtime dims print as "*").
bool parse_x_dims(string_view text, std::array<int64_t, 12>* dims, size_t* n) {
  *n = 0;
  if (text.empty()) return false;
  size_t i = 0;
  while (true) {
    int64_t v = 0;
    size_t digits = 0;
    while (i < text.size() && is_digit(text[i])) {
      if (++digits > 15) return false;
      v = v * 10 + (text[i] - '0');
      ++i;
    }
    if (digits == 0 || *n == dims->size()) return false;
    (*dims)[(*n)++] = v;
    if (i == text.size()) return true;
    if (text[i] != 'x') return false;
    ++i;
  }
}

void append_dims(std::string* out, string_view label, std::initializer_list<std::optional<int64_t>> dims) {
  if (!out->empty()) out->push_back(' ');
  out->append(label);
  out->append(":[");
  bool first = true;
  for (const auto& d : dims) {
    if (!d) continue;  // absent spatial dimension (1D/2D problems)
    if (!first) out->push_back(',');
    out->append(std::to_string(*d));
    first = false;
  }
  out->push_back(']');
}

void append_dims(std::string* out, string_view label, const int64_t* dims, size_t n) {
  if (!out->empty()) out->push_back(' ');
  out->append(label);
  out->append(":[");
  for (size_t i = 0; i < n; ++i) {
    if (i) out->push_back(',');
    out->append(std::to_string(dims[i]));
  }
  out->push_back(']');
}

// Which tensors a propagation kind reads and writes, named as the interposer's queries name them.
struct Labels {
  string_view src, weights, dst;
};
std::optional<Labels> labels_for(string_view prop_kind) {
  if (prop_kind.substr(0, 7) == "forward") return Labels{"src", "weights", "dst"};
  if (prop_kind == "backward_data") return Labels{"diff_src", "weights", "diff_dst"};
  if (prop_kind == "backward_weights") return Labels{"src", "diff_weights", "diff_dst"};
  if (prop_kind == "backward") return Labels{"diff_src", "weights", "diff_dst"};
  return std::nullopt;
}

bool conv_shapes(const Labels& l, const KeyValues& kv, std::string* out) {
  auto mb = kv.get("mb"), ic = kv.get("ic"), oc = kv.get("oc"), iw = kv.get("iw"), ow = kv.get("ow"),
       kw = kv.get("kw");
  if (!mb || !ic || !oc || !iw || !ow || !kw) return false;
  auto id = kv.get("id"), od = kv.get("od"), kd = kv.get("kd");
  auto ih = kv.get("ih"), oh = kv.get("oh"), kh = kv.get("kh");
  append_dims(out, l.src, {mb, ic, id, ih, iw});
  if (auto g = kv.get("g")) {
    // Grouped weights are 5D (6D for 3D problems) in oneDNN: [G, OC/G, IC/G, spatial...].
    if (*g <= 0 || *oc % *g != 0 || *ic % *g != 0) return false;
    append_dims(out, l.weights, {g, *oc / *g, *ic / *g, kd, kh, kw});
  } else {
    append_dims(out, l.weights, {oc, ic, kd, kh, kw});
  }
  append_dims(out, l.dst, {mb, oc, od, oh, ow});
  return true;
}

bool pooling_shapes(const Labels& l, const KeyValues& kv, std::string* out) {
  auto mb = kv.get("mb"), ic = kv.get("ic"), iw = kv.get("iw"), ow = kv.get("ow");
  if (!mb || !ic || !iw || !ow) return false;
  append_dims(out, l.src, {mb, ic, kv.get("id"), kv.get("ih"), iw});
  append_dims(out, l.dst, {mb, ic, kv.get("od"), kv.get("oh"), ow});
  return true;
}

bool inner_product_shapes(const Labels& l, const KeyValues& kv, std::string* out) {
  auto mb = kv.get("mb"), ic = kv.get("ic"), oc = kv.get("oc");
  if (!mb || !ic || !oc) return false;
  auto id = kv.get("id"), ih = kv.get("ih"), iw = kv.get("iw");
  append_dims(out, l.src, {mb, ic, id, ih, iw});
  append_dims(out, l.weights, {oc, ic, id, ih, iw});
  append_dims(out, l.dst, {mb, oc});
  return true;
}

// v2.x: "SRC:WEI:DST"; v3.x: "SRC:WEI" (dst: broadcast batch dims, then M x N).
struct MatmulDims {
  std::array<int64_t, 12> src{}, wei{}, dst{};
  size_t ns = 0, nw = 0, nd = 0;
};
bool matmul_dims(string_view desc, MatmulDims* m) {
  std::array<string_view, 3> parts;
  size_t n = 0;
  while (n < 3) {
    size_t colon = desc.find(':');
    parts[n++] = desc.substr(0, colon);
    if (colon == string_view::npos) break;
    desc.remove_prefix(colon + 1);
    if (n == 3) return false;  // a fourth part: not a matmul descriptor this knows
  }
  if (n < 2) return false;
  if (!parse_x_dims(parts[0], &m->src, &m->ns) || !parse_x_dims(parts[1], &m->wei, &m->nw) || m->ns < 2 ||
      m->ns != m->nw)
    return false;
  if (n == 3) return parse_x_dims(parts[2], &m->dst, &m->nd);
  m->nd = m->ns;
  for (size_t i = 0; i + 2 < m->ns; ++i) m->dst[i] = std::max(m->src[i], m->wei[i]);
  m->dst[m->ns - 2] = m->src[m->ns - 2];
  m->dst[m->ns - 1] = m->wei[m->nw - 1];
  return true;
}

bool matmul_shapes(string_view desc, std::string* out) {
  MatmulDims m;
  if (!matmul_dims(desc, &m)) return false;
  append_dims(out, "src", m.src.data(), m.ns);
  append_dims(out, "weights", m.wei.data(), m.nw);
  append_dims(out, "dst", m.dst.data(), m.nd);
  return true;
}

bool same_dims_shapes(string_view desc, std::string* out) {
  std::array<int64_t, 12> dims{};
  size_t n = 0;
  if (parse_x_dims(desc, &dims, &n)) {
    append_dims(out, "src", dims.data(), n);
    append_dims(out, "dst", dims.data(), n);
    return true;
  }
  // v2.x md2desc_str form for up to 5D tensors: "mb2ic64ih56iw56".
  KeyValues kv;
  if (!parse_key_values(desc, &kv)) return false;
  auto mb = kv.get("mb"), ic = kv.get("ic");
  if (!mb || !ic) return false;
  append_dims(out, "src", {mb, ic, kv.get("id"), kv.get("ih"), kv.get("iw")});
  append_dims(out, "dst", {mb, ic, kv.get("id"), kv.get("ih"), kv.get("iw")});
  return true;
}

bool is_dtype(string_view t) {
  for (string_view d : {"f32", "f16", "bf16", "s32", "s8", "u8", "f64", "boolean", "undef", "s4", "u4", "f8_e5m2",
                        "f8_e4m3", "f4_e2m1", "f4_e3m0", "e8m0", "bin"})
    if (t == d) return true;
  return false;
}

}  // namespace

const char* malformed_name(Malformed cause) {
  switch (cause) {
    case Malformed::kNone: return "none";
    case Malformed::kNoOperation: return "no_operation";
    case Malformed::kTooFewFields: return "too_few_fields";
    case Malformed::kBadTimestamp: return "bad_timestamp";
    case Malformed::kBadDuration: return "bad_duration";
    case Malformed::kEmptyPrimitive: return "empty_primitive";
    case Malformed::kCount: break;
  }
  return "unknown";
}

VerboseLine parse_verbose_line(string_view line) {
  VerboseLine v;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  std::array<string_view, kMaxFields> f;
  size_t n = 0;
  for (size_t pos = 0;;) {
    size_t comma = line.find(',', pos);
    if (comma == string_view::npos || n + 1 == kMaxFields) {
      f[n++] = line.substr(pos);  // the last field keeps any further commas
      break;
    }
    f[n++] = line.substr(pos, comma - pos);
    pos = comma + 1;
  }
  if (!is_marker(f[0])) return v;
  v.marker = f[0];
  auto malformed = [&v](Malformed cause) {
    v.event = VerboseEvent::kMalformed;
    v.malformed = cause;
    return v;
  };
  size_t i = 1;
  if (i < n && is_format_version(f[i])) v.version = f[i++];
  if (i < n && !f[i].empty() && is_digit(f[i][0])) {
    auto ts = parse_ms_to_ns(f[i]);
    if (!ts) return malformed(Malformed::kBadTimestamp);
    v.has_timestamp = true;
    v.timestamp_ns = *ts;
    ++i;
  }
  if (i + 1 < n && !is_operation(f[i]) && is_operation(f[i + 1])) v.component = f[i++];
  if (i >= n || f[i].empty()) return malformed(Malformed::kNoOperation);
  v.operation = f[i++];
  if (v.operation == "info") {
    v.event = VerboseEvent::kInfo;
    return v;
  }
  if (v.operation.substr(0, 6) == "create") {
    v.event = VerboseEvent::kCreate;
    return v;
  }
  if (v.operation != "exec" || !(v.component.empty() || v.component == "primitive")) {
    v.event = VerboseEvent::kOther;
    return v;
  }
  // ENGINE,PRIM,IMPL,PROP,MDS,ATTRS,AUX,DESC,MS. Extra commas are taken to belong to ATTRS (the
  // one free-form field); DESC, AUX and MS are read from the end.
  if (n - i < 9) return malformed(Malformed::kTooFewFields);
  v.engine = f[i];
  v.primitive = f[i + 1];
  v.impl = f[i + 2];
  v.prop_kind = f[i + 3];
  v.mds = f[i + 4];
  const string_view first_attr = f[i + 5], last_attr = f[n - 4];
  v.attrs = string_view(first_attr.data(), static_cast<size_t>(last_attr.data() + last_attr.size() - first_attr.data()));
  v.aux = f[n - 3];
  v.desc = f[n - 2];
  if (v.primitive.empty()) return malformed(Malformed::kEmptyPrimitive);
  auto ms = parse_duration_ms(f[n - 1]);
  if (!ms) return malformed(Malformed::kBadDuration);
  v.duration_ms = *ms;
  v.event = VerboseEvent::kExec;
  return v;
}

uint64_t VerboseStats::malformed_total() const {
  uint64_t total = 0;
  for (uint64_t m : malformed) total += m;
  return total;
}

void VerboseStats::count(const VerboseLine& line) {
  ++lines;
  switch (line.event) {
    case VerboseEvent::kNotVerbose: ++not_verbose; break;
    case VerboseEvent::kExec: ++exec; break;
    case VerboseEvent::kCreate: ++create; break;
    case VerboseEvent::kInfo: ++info; break;
    case VerboseEvent::kOther: ++other; break;
    case VerboseEvent::kMalformed: ++malformed[static_cast<size_t>(line.malformed)]; break;
  }
}

bool shapes_from_desc(string_view primitive, string_view prop_kind, string_view desc, std::string* out) {
  out->clear();
  bool ok = false;
  if (primitive == "matmul") {
    ok = matmul_shapes(desc, out);
  } else if (primitive == "reorder") {
    ok = same_dims_shapes(desc, out);
  } else if (primitive == "eltwise") {
    ok = prop_kind.substr(0, 7) == "forward" && same_dims_shapes(desc, out);
  } else if (auto labels = labels_for(prop_kind)) {
    KeyValues kv;
    if (parse_key_values(desc, &kv)) {
      if (primitive == "convolution" || primitive == "deconvolution") ok = conv_shapes(*labels, kv, out);
      else if (primitive == "pooling" || primitive == "pooling_v2") ok = pooling_shapes(*labels, kv, out);
      else if (primitive == "inner_product") ok = inner_product_shapes(*labels, kv, out);
    }
  }
  if (!ok) out->clear();
  return ok;
}

namespace {

// MDS entries: "src_f32::blocked:abcd:f0" (v2.x) or "src:f32::blocked:abcd::f0" (v3.x) -> (label,
// element size); the label is oneDNN's short name (src, diff_src, data, wei, bia, dst, diff_dst, ...).
void element_sizes(string_view mds, PrimitiveProblem* p, bool* has_bias) {
  *has_bias = false;
  while (!mds.empty()) {
    size_t space = mds.find(' ');
    string_view entry = mds.substr(0, space);
    mds.remove_prefix(space == string_view::npos ? mds.size() : space + 1);
    size_t colon = entry.find(':');
    string_view head = entry.substr(0, colon), label, dtype;
    string_view second = colon == string_view::npos ? string_view() : entry.substr(colon + 1);
    second = second.substr(0, second.find(':'));
    if (is_dtype(second)) {
      label = head, dtype = second;
    } else if (size_t us = head.rfind('_'); us != string_view::npos && is_dtype(head.substr(us + 1))) {
      label = head.substr(0, us), dtype = head.substr(us + 1);
    } else {
      continue;
    }
    if (dtype == "undef") continue;
    const int size = dtype_size(dtype);
    if (label == "src" || label == "diff_src" || label == "data") {
      if (p->src_bytes == 0) p->src_bytes = size;
      if (label == "data") p->dst_bytes = size;  // eltwise / batch norm: dst has data's type
    } else if (label == "wei" || label == "diff_wei") {
      p->weights_bytes = size;
    } else if (label == "bia" || label == "diff_bia") {
      p->bias_bytes = size;
      *has_bias = true;
    } else if (label == "dst" || label == "diff_dst") {
      if (p->dst_bytes == 0 || label == "dst") p->dst_bytes = size;
    }
  }
}

void to_dims(std::initializer_list<std::optional<int64_t>> values, Dims* out) {
  *out = Dims();
  for (const auto& v : values)
    if (v) out->push(*v);
}

bool conv_problem(const KeyValues& kv, PrimitiveProblem* p) {
  auto mb = kv.get("mb"), ic = kv.get("ic"), oc = kv.get("oc"), iw = kv.get("iw"), ow = kv.get("ow"),
       kw = kv.get("kw");
  if (!mb || !ic || !oc || !iw || !ow || !kw) return false;
  auto id = kv.get("id"), od = kv.get("od"), kd = kv.get("kd");
  auto ih = kv.get("ih"), oh = kv.get("oh"), kh = kv.get("kh");
  to_dims({mb, ic, id, ih, iw}, &p->src);
  if (auto g = kv.get("g")) {
    if (*g <= 0 || *oc % *g != 0 || *ic % *g != 0) return false;
    to_dims({g, *oc / *g, *ic / *g, kd, kh, kw}, &p->weights);
  } else {
    to_dims({oc, ic, kd, kh, kw}, &p->weights);
  }
  to_dims({mb, oc, od, oh, ow}, &p->dst);
  return true;
}

bool dims_of_tensor(string_view desc, Dims* out) {
  std::array<int64_t, 12> dims{};
  size_t n = 0;
  *out = Dims();
  if (parse_x_dims(desc, &dims, &n)) {
    for (size_t i = 0; i < n; ++i) out->push(dims[i]);
    return true;
  }
  KeyValues kv;
  if (!parse_key_values(desc, &kv) || !kv.get("mb") || !kv.get("ic")) return false;
  to_dims({kv.get("mb"), kv.get("ic"), kv.get("id"), kv.get("ih"), kv.get("iw")}, out);
  return true;
}

bool matmul_problem(string_view desc, PrimitiveProblem* p) {
  MatmulDims m;
  if (!matmul_dims(desc, &m)) return false;
  p->src = p->weights = p->dst = Dims();
  for (size_t i = 0; i < m.ns; ++i) p->src.push(m.src[i]);
  for (size_t i = 0; i < m.nw; ++i) p->weights.push(m.wei[i]);
  for (size_t i = 0; i < m.nd; ++i) p->dst.push(m.dst[i]);
  return true;
}

}  // namespace

bool problem_from_verbose(const VerboseLine& line, PrimitiveProblem* out) {
  PrimitiveProblem p;
  p.kind = cost_kind(line.primitive);
  if (p.kind == CostKind::kOther || line.event != VerboseEvent::kExec) return false;
  set_prop_kind(line.prop_kind, &p);
  bool has_bias = false;
  element_sizes(line.mds, &p, &has_bias);
  KeyValues kv;
  switch (p.kind) {
    case CostKind::kConvolution:
    case CostKind::kDeconvolution:
      if (!parse_key_values(line.desc, &kv) || !conv_problem(kv, &p)) return false;
      if (has_bias) to_dims({kv.get("oc")}, &p.bias);
      break;
    case CostKind::kInnerProduct: {
      if (!parse_key_values(line.desc, &kv)) return false;
      auto mb = kv.get("mb"), ic = kv.get("ic"), oc = kv.get("oc");
      if (!mb || !ic || !oc) return false;
      auto id = kv.get("id"), ih = kv.get("ih"), iw = kv.get("iw");
      to_dims({mb, ic, id, ih, iw}, &p.src);
      to_dims({oc, ic, id, ih, iw}, &p.weights);
      to_dims({mb, oc}, &p.dst);
      if (has_bias) to_dims({oc}, &p.bias);
      break;
    }
    case CostKind::kMatmul:
      if (!matmul_problem(line.desc, &p)) return false;
      if (has_bias) to_dims({p.dst.d[p.dst.n - 1]}, &p.bias);  // broadcast over rows: one value per column
      break;
    case CostKind::kEltwise:
      if (!dims_of_tensor(line.desc, &p.src)) return false;
      p.dst = p.src;
      if (p.dst_bytes == 0) p.dst_bytes = p.src_bytes;
      break;
    case CostKind::kPooling: {
      if (!parse_key_values(line.desc, &kv)) return false;
      auto mb = kv.get("mb"), ic = kv.get("ic"), iw = kv.get("iw"), ow = kv.get("ow"), kw = kv.get("kw");
      if (!mb || !ic || !iw || !ow || !kw) return false;
      to_dims({mb, ic, kv.get("id"), kv.get("ih"), iw}, &p.src);
      to_dims({mb, ic, kv.get("od"), kv.get("oh"), ow}, &p.dst);
      to_dims({kv.get("kd"), kv.get("kh"), kw}, &p.window);
      p.average = line.aux.find("pooling_avg") != string_view::npos;
      break;
    }
    case CostKind::kBatchNorm: {
      if (!dims_of_tensor(line.desc, &p.src)) return false;
      p.dst = p.src;
      if (p.dst_bytes == 0) p.dst_bytes = p.src_bytes;
      // "flags:GS": G global stats; S scale and shift; C scale; H shift (R: fused ReLU).
      size_t at = line.aux.find("flags:");
      string_view flags = at == string_view::npos ? string_view() : line.aux.substr(at + 6);
      flags = flags.substr(0, flags.find(' '));
      p.global_stats = flags.find('G') != string_view::npos;
      p.scale_shift_arrays = flags.find('S') != string_view::npos
                                 ? 2
                                 : (flags.find('C') != string_view::npos) + (flags.find('H') != string_view::npos);
      break;
    }
    case CostKind::kOther:
      return false;
  }
  *out = p;
  return true;
}

Placement place_execution(const VerboseLine& line, int64_t now_mono_ns, int64_t now_real_ns) {
  Placement p;
  // %g keeps six significant digits: rounding is well under a microsecond for any real duration.
  const double dur = std::min(line.duration_ms * 1e6, 1e15);
  const int64_t duration_ns = static_cast<int64_t>(std::llround(dur));
  if (line.has_timestamp) {
    p.start_ns = line.timestamp_ns - (now_real_ns - now_mono_ns);
    p.end_ns = p.start_ns + duration_ns;
    // The end can only precede the arrival (by the time oneDNN took to format the line); a small
    // overshoot is the two clocks' read order and gettimeofday's microsecond resolution.
    if (p.end_ns <= now_mono_ns + 1'000'000 && p.end_ns >= now_mono_ns - kMaxClockSkewNs) {
      p.end_ns = std::min(p.end_ns, now_mono_ns);
      p.start_ns = std::min(p.start_ns, p.end_ns);
      p.from_timestamp = true;
      return p;
    }
  }
  p.end_ns = now_mono_ns;
  p.start_ns = now_mono_ns - duration_ns;
  return p;
}

string_view first_dtype(string_view mds) {
  string_view entry = mds.substr(0, mds.find(' '));
  size_t colon = entry.find(':');
  if (colon == string_view::npos) return {};
  string_view head = entry.substr(0, colon);
  string_view second = entry.substr(colon + 1);
  second = second.substr(0, second.find(':'));
  if (is_dtype(second)) return second;  // v3.x: "src:f32:..."
  size_t us = head.rfind('_');          // v2.x: "src_f32:..."
  if (us != string_view::npos && is_dtype(head.substr(us + 1))) return head.substr(us + 1);
  return {};
}

}  // namespace strata::onednn
