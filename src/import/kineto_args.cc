// Kineto's args as canonical attributes: the spellings Kineto gives facts the rest of Strata names
// in core/attr_keys.h (the table is in kineto_importer.cc's header comment). Kept apart from the
// converter (kineto_importer.cc), which installs it as the builder's arg translation.
#include <cctype>
#include <charconv>
#include <string_view>
#include <utility>
#include <vector>

#include "core/attr_keys.h"
#include "import/converters.h"

namespace strata::import {
namespace {

// "[4, 1, 1]" -> {4, 1, 1}; false unless three integers.
bool parse_triple(std::string_view text, int64_t out[3]) {
  size_t at = 0, n = 0;
  auto skip = [&] {
    while (at < text.size() && (text[at] == ' ' || text[at] == '[' || text[at] == ',')) ++at;
  };
  for (; n < 3; ++n) {
    skip();
    size_t begin = at;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) ++at;
    if (at == begin || at - begin > 12) return false;
    std::from_chars(text.data() + begin, text.data() + at, out[n]);  // at most 12 digits: fits
  }
  while (at < text.size() && text[at] == ' ') ++at;
  return at + 1 == text.size() && text[at] == ']';
}

// Kineto's spellings of canonical facts (see the header comment): renamed, and "grid"/"block"
// [x, y, z] split into three integers like CUPTI's own record (kept as they are otherwise).
}  // namespace

bool kineto_arg(const ChromeArg& arg, ImportBuilder& builder, std::vector<AttrRecord>* out) {
  namespace k = attr_keys;
  static constexpr std::pair<std::string_view, std::string_view> kRenames[] = {
      {"Input Dims", k::kShapes},
      {"Input type", k::kInputTypes},
      {"External id", k::kExternalCorrelationId},
      {"est. achieved occupancy %", k::kAchievedOccupancy},
      {"registers per thread", k::kRegistersPerThread},
      {"shared memory", k::kSharedMemoryBytes},
  };
  static constexpr std::string_view kDims[3][4] = {{"grid", k::kGridX, k::kGridY, k::kGridZ},
                                                   {"block", k::kBlockX, k::kBlockY, k::kBlockZ},
                                                   {"cluster", k::kClusterX, k::kClusterY, k::kClusterZ}};
  // Every key handled here is 4, 5, 7, 10, 11, 13, 20 or 25 bytes long: most args leave at once.
  const size_t n = arg.key.size();
  if (n != 4 && n != 5 && n != 7 && n != 10 && n != 11 && n != 13 && n != 20 && n != 25) return false;
  const JsonScalar& v = arg.value;
  for (const auto& [from, to] : kRenames) {
    if (arg.key != from) continue;
    switch (v.kind) {
      case JsonScalar::kInt:
      case JsonScalar::kBool:
        out->push_back(builder.int_attr(to, v.i));
        return true;
      case JsonScalar::kDouble:
        out->push_back(builder.double_attr(to, v.d));
        return true;
      case JsonScalar::kString:
      case JsonScalar::kRaw:
        out->push_back(builder.string_attr(to, v.text));
        return true;
      default:
        return true;  // null: nothing to keep, as for any other arg
    }
  }
  for (const auto& keys : kDims) {
    int64_t d[3];
    if (arg.key != keys[0] || v.kind != JsonScalar::kRaw || !parse_triple(v.text, d)) continue;
    for (int i = 0; i < 3; ++i) out->push_back(builder.int_attr(keys[1 + i], d[i]));
    return true;
  }
  return false;
}

}  // namespace strata::import
