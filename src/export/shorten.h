// Shortening long names for the aligned text tables without making different names look the same:
// GPU kernel names (templated C++ signatures) often share their first 60 characters and differ deep
// inside. CSV and JSON always carry the full names.
#pragma once

#include <string>
#include <vector>

namespace strata::exporter {

// The cells of one column, each at most `width` bytes (width >= 30): a longer cell keeps its head
// and tail around "..."; cells that would then collide keep, in addition, the part where they first
// differ ("head...differing part...tail"); any still equal get " #k" (k-th in full-name order).
// Cuts never split a UTF-8 sequence. Returns how many cells were shortened through *shortened.
std::vector<std::string> shorten_column(const std::vector<std::string>& cells, size_t width, size_t* shortened);

}  // namespace strata::exporter
