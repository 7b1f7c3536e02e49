#include "export/shorten.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

namespace strata::exporter {
namespace {

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The first `n` bytes of s, moved back to a character boundary.
std::string_view head(std::string_view s, size_t n) {
  n = std::min(n, s.size());
  while (n > 0 && n < s.size() && continuation(s[n])) --n;
  return s.substr(0, n);
}

// The last `n` bytes of s, moved forward to a character boundary.
std::string_view tail(std::string_view s, size_t n) {
  size_t start = s.size() > n ? s.size() - n : 0;
  while (start < s.size() && continuation(s[start])) ++start;
  return s.substr(start);
}

// s[from, from + n), both ends moved to character boundaries.
std::string_view middle(std::string_view s, size_t from, size_t n) {
  from = std::min(from, s.size());
  while (from > 0 && from < s.size() && continuation(s[from])) --from;
  return head(s.substr(from), n);
}

std::string head_and_tail(std::string_view s, size_t width) {
  const size_t keep = width - 3, front = keep * 2 / 3;
  return std::string(head(s, front)) + "..." + std::string(tail(s, keep - front));
}

// Keeps head, the part around `at` (where this name first differs from the ones it collided with),
// and tail.
std::string around(std::string_view s, size_t at, size_t width) {
  const size_t front = 14, back = 12;
  const size_t window = width - front - back - 6;
  const size_t from = at > 6 ? at - 6 : 0;
  if (from <= front || from + window + back >= s.size()) return head_and_tail(s, width);
  return std::string(head(s, front)) + "..." + std::string(middle(s, from, window)) + "..." +
         std::string(tail(s, back));
}

size_t first_difference(std::string_view a, std::string_view b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

std::vector<std::string> shorten_column(const std::vector<std::string>& cells, size_t width, size_t* shortened) {
  width = std::max<size_t>(width, 30);
  std::vector<std::string> out(cells.size());
  size_t count = 0;
  for (size_t i = 0; i < cells.size(); ++i) {
    out[i] = cells[i].size() > width ? head_and_tail(cells[i], width) : cells[i];
    count += cells[i].size() > width;
  }
  // Different full names that now read the same: show where each differs from the others.
  std::map<std::string, std::set<std::string_view>> by_short;
  for (size_t i = 0; i < cells.size(); ++i) by_short[out[i]].insert(cells[i]);
  for (size_t i = 0; i < cells.size(); ++i) {
    const auto& same = by_short[out[i]];
    if (same.size() < 2 || cells[i].size() <= width) continue;
    size_t at = cells[i].size();
    for (std::string_view other : same)
      if (other != cells[i]) at = std::min(at, first_difference(cells[i], other));
    out[i] = around(cells[i], at, width);
  }
  // Still equal: number them in full-name order.
  std::map<std::string, std::set<std::string_view>> again;
  for (size_t i = 0; i < cells.size(); ++i) again[out[i]].insert(cells[i]);
  for (size_t i = 0; i < cells.size(); ++i) {
    const auto& same = again[out[i]];
    if (same.size() < 2 || cells[i].size() <= width) continue;
    const size_t k = static_cast<size_t>(std::distance(same.begin(), same.find(cells[i]))) + 1;
    const std::string mark = " #" + std::to_string(k);
    out[i] = std::string(head(out[i], width - mark.size())) + mark;
  }
  if (shortened != nullptr) *shortened = count;
  return out;
}

}  // namespace strata::exporter
