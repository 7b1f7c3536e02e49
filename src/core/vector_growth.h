// Room for more elements in a vector that is filled in steps (a chunk, a file, a run at a time).
#pragma once

#include <algorithm>
#include <cstddef>

namespace strata {

// Reserves room for `extra` more elements, at least doubling the capacity when it grows. A reserve of
// exactly the size needed, repeated at every step, reallocates and copies the whole vector each
// time: quadratic in the number of steps (a 5.4-million-span trace loaded chunk by chunk spent most
// of its time in that copy and in faulting the new pages).
template <typename Vector>
void reserve_more(Vector& v, size_t extra) {
  const size_t needed = v.size() + extra;
  if (v.capacity() < needed) v.reserve(std::max(needed, 2 * v.capacity()));
}

}  // namespace strata
