#include "core/level.h"

#include <array>
#include <charconv>
#include <utility>

namespace strata {
namespace {

constexpr std::array<std::pair<SpanKind, std::string_view>, 6> kKindNames{{
    {SpanKind::kSpan, "span"},
    {SpanKind::kLaunch, "launch"},
    {SpanKind::kExecution, "execution"},
    {SpanKind::kInstant, "instant"},
    {SpanKind::kCounter, "counter"},
    {SpanKind::kSample, "sample"},
}};

}  // namespace

std::string level_name(uint8_t value) {
  for (const auto& [level, name] : kLevels)
    if (static_cast<uint8_t>(level) == value) return std::string(name);
  return "level(" + std::to_string(value) + ")";
}

bool is_known_level(uint8_t value) {
  for (const auto& entry : kLevels)
    if (static_cast<uint8_t>(entry.level) == value) return true;
  return false;
}

std::optional<Level> parse_level(std::string_view text) {
  for (const auto& [level, name] : kLevels)
    if (name == text) return level;
  if (text == "runtime" || text == "api") return Level::kRuntimeApi;
  if (text == "kernel" || text == "activity") return Level::kDevice;
  if (text == "sample" || text == "cpu") return Level::kCpuSample;
  if (text == "all") return kDeepestLevel;
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && ptr == text.data() + text.size() && value > 0 && value < 256)
    return static_cast<Level>(value);
  return std::nullopt;
}

std::string kind_name(uint8_t value) {
  for (const auto& [kind, name] : kKindNames)
    if (static_cast<uint8_t>(kind) == value) return std::string(name);
  return "kind(" + std::to_string(value) + ")";
}

}  // namespace strata
