#include "core/torch_nvtx_names.h"

#include <charconv>

namespace strata {
namespace {

constexpr std::string_view kFieldSeparator = ", ";

// A balanced bracket group starting at text[0] == '['; its length, or 0 when it never closes.
size_t bracket_group(std::string_view text) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    if (text[i] == ']' && --depth == 0) return i + 1;
  }
  return 0;
}

// Where the first ", KEY = " of a known key starts, or npos: an op name itself may hold ", "
// ("Optimizer.step#AdamW.step" does not, but user-named ranges can), so only a known key splits.
size_t first_field(std::string_view name) {
  for (size_t at = name.find(kFieldSeparator); at != std::string_view::npos;
       at = name.find(kFieldSeparator, at + 1)) {
    std::string_view rest = name.substr(at + kFieldSeparator.size());
    for (std::string_view key : {"seq = ", "op_id = ", "sizes = ", "input_op_ids = "})
      if (rest.starts_with(key)) return at;
  }
  return std::string_view::npos;
}

}  // namespace

bool parse_torch_nvtx_name(std::string_view name, TorchNvtxName* out) {
  const size_t split = first_field(name);
  if (split == std::string_view::npos || split == 0) return false;
  TorchNvtxName r;
  r.op = name.substr(0, split);
  std::string_view rest = name.substr(split);
  bool seen[4] = {false, false, false, false};
  while (!rest.empty()) {
    if (!rest.starts_with(kFieldSeparator)) return false;
    rest.remove_prefix(kFieldSeparator.size());
    const size_t eq = rest.find(" = ");
    if (eq == std::string_view::npos) return false;
    const std::string_view key = rest.substr(0, eq);
    rest.remove_prefix(eq + 3);
    const int field = key == "seq"            ? 0
                      : key == "op_id"        ? 1
                      : key == "sizes"        ? 2
                      : key == "input_op_ids" ? 3
                                              : -1;
    if (field < 0 || seen[field]) return false;
    seen[field] = true;
    if (field <= 1) {  // an integer
      int64_t value = 0;
      auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
      if (ec != std::errc() || end == rest.data()) return false;
      (field == 0 ? r.sequence_nr : r.op_id) = value;
      rest.remove_prefix(static_cast<size_t>(end - rest.data()));
    } else {  // a bracketed list, kept as written
      if (!rest.starts_with('[')) return false;
      const size_t n = bracket_group(rest);
      if (n == 0) return false;
      (field == 2 ? r.shapes : r.input_op_ids) = rest.substr(0, n);
      rest.remove_prefix(n);
    }
  }
  *out = r;
  return true;
}

}  // namespace strata
