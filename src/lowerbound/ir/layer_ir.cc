#include "lowerbound/ir/layer_ir.h"

#include <cstdlib>

namespace strata::lowerbound {

std::string shape_text(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += 'x';
    out += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
  }
  return out;
}

std::string Layer::signature() const {
  std::string sig = op_type + "|in=";
  for (size_t i = 0; i < input_shapes.size(); ++i) sig += (i ? "," : "") + shape_text(input_shapes[i]);
  sig += "|w=";
  for (size_t i = 0; i < weight_shapes.size(); ++i) sig += (i ? "," : "") + shape_text(weight_shapes[i]);
  sig += "|out=";
  for (size_t i = 0; i < output_shapes.size(); ++i) sig += (i ? "," : "") + shape_text(output_shapes[i]);
  for (const auto& [key, value] : attributes) sig += "|" + key + "=" + value;
  return sig;
}

std::vector<int64_t> Layer::ints_attr(const std::string& key) const {
  std::vector<int64_t> values;
  auto it = attributes.find(key);
  if (it == attributes.end()) return values;
  const char* p = it->second.c_str();
  while (*p) {
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
      char* end = nullptr;
      values.push_back(std::strtoll(p, &end, 10));
      p = end;
    } else {
      ++p;
    }
  }
  return values;
}

int64_t Layer::int_attr(const std::string& key, int64_t fallback) const {
  std::vector<int64_t> values = ints_attr(key);
  return values.empty() ? fallback : values[0];
}

}  // namespace strata::lowerbound
