#include <charconv>
#include <cstdlib>

#include "analysis/analysis.h"

namespace strata::analysis {

std::string Params::get(std::string_view key, std::string_view fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? std::string(fallback) : it->second;
}

double Params::get_double(std::string_view key, double fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  return end != nullptr && *end == '\0' ? v : fallback;
}

int64_t Params::get_int(std::string_view key, int64_t fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  return ec == std::errc() && ptr == it->second.data() + it->second.size() ? v : fallback;
}

// Each analysis module defines a factory; list them here (one line each).
// std::unique_ptr<Analysis> make_layer_table();  ...

const std::vector<std::unique_ptr<Analysis>>& all_analyses() {
  static const std::vector<std::unique_ptr<Analysis>> analyses = [] {
    std::vector<std::unique_ptr<Analysis>> v;
    // v.push_back(make_layer_table());
    return v;
  }();
  return analyses;
}

const Analysis* find_analysis(std::string_view name) {
  for (const auto& a : all_analyses())
    if (a->name() == name) return a.get();
  return nullptr;
}

}  // namespace strata::analysis
