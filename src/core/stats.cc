#include "core/stats.h"

#include <algorithm>
#include <array>

namespace strata::stats {
namespace {

// clang-format off
#define STRATA_STAT_INFO(id, name, disk, disk_key, scope, severity, source, description) \
  StatInfo{Stat::id, name, Disk::disk, disk_key, Scope::scope, Severity::severity, Source::source, description},
constexpr std::array<StatInfo, kStatCount> kStats{{STRATA_STATS(STRATA_STAT_INFO)}};
// clang-format on
#undef STRATA_STAT_INFO

// The registry lists stats in enum order: info(stat) is an index.
constexpr bool in_enum_order() {
  for (size_t i = 0; i < kStatCount; ++i)
    if (static_cast<size_t>(kStats[i].id) != i) return false;
  return true;
}
static_assert(in_enum_order());

}  // namespace

std::span<const StatInfo> all_stats() { return kStats; }

const StatInfo& info(Stat stat) { return kStats[static_cast<size_t>(stat)]; }

std::optional<Stat> find(std::string_view name_or_disk_key) {
  if (name_or_disk_key.empty()) return std::nullopt;
  for (const StatInfo& s : kStats)
    if (s.name == name_or_disk_key || s.disk_key == name_or_disk_key) return s.id;
  return std::nullopt;
}

bool keeps_event(Stat stat) {
  return stat == Stat::kCollectorEndLost || stat == Stat::kCollectorStringTruncated ||
         stat == Stat::kCollectorSampleUnwindFailed || stat == Stat::kCollectorSamplePythonStack;
}

std::string_view severity_name(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kDataLoss:
      return "data-loss";
    case Severity::kError:
      return "error";
  }
  return "?";
}

std::string_view source_name(Source source) {
  switch (source) {
    case Source::kCollector:
      return "collector";
    case Source::kFormat:
      return "format";
    case Source::kLoader:
      return "loader";
    case Source::kImport:
      return "import";
    case Source::kCorrelation:
      return "correlation";
  }
  return "?";
}

void StatSet::add(Stat stat, uint64_t n) {
  auto it = std::lower_bound(values_.begin(), values_.end(), stat,
                             [](const auto& entry, Stat s) { return entry.first < s; });
  if (it != values_.end() && it->first == stat)
    it->second += n;
  else
    values_.insert(it, {stat, n});
}

void StatSet::set(Stat stat, uint64_t value) {
  auto it = std::lower_bound(values_.begin(), values_.end(), stat,
                             [](const auto& entry, Stat s) { return entry.first < s; });
  if (it != values_.end() && it->first == stat)
    it->second = value;
  else
    values_.insert(it, {stat, value});
}

uint64_t StatSet::get(Stat stat) const {
  auto it = std::lower_bound(values_.begin(), values_.end(), stat,
                             [](const auto& entry, Stat s) { return entry.first < s; });
  return it != values_.end() && it->first == stat ? it->second : 0;
}

uint64_t StatSet::get(std::string_view name_or_disk_key) const {
  if (std::optional<Stat> stat = find(name_or_disk_key)) return get(*stat);
  auto it = unregistered_.find(std::string(name_or_disk_key));
  return it == unregistered_.end() ? 0 : it->second;
}

void StatSet::add_unregistered(const std::string& disk_key, uint64_t n) { unregistered_[disk_key] += n; }

void StatSet::merge(const StatSet& other) {
  for (const auto& [stat, value] : other.values_) add(stat, value);
  for (const auto& [key, value] : other.unregistered_) unregistered_[key] += value;
}

std::vector<std::pair<Stat, uint64_t>> StatSet::nonzero() const {
  std::vector<std::pair<Stat, uint64_t>> out;
  for (const auto& entry : values_)
    if (entry.second != 0) out.push_back(entry);
  return out;
}

bool StatSet::empty() const {
  for (const auto& entry : values_)
    if (entry.second != 0) return false;
  for (const auto& entry : unregistered_)
    if (entry.second != 0) return false;
  return true;
}

}  // namespace strata::stats
