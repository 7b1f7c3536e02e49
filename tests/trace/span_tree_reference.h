// A reference span tree: the pre-pass implementation, for equivalence tests of the passes.
#pragma once

#include <cstdint>
#include <vector>

#include "trace/span_tree.h"

namespace strata::trace::testing {

struct ReferenceReport {
  uint64_t explicit_links = 0, missing_parents = 0, correlation_links = 0, external_links = 0,
           external_rejected = 0, reconstructed = 0, cross_thread = 0, ambiguous = 0, late_records = 0,
           cycles_broken = 0, roots = 0;
};

struct ReferenceTree {
  std::vector<int32_t> parent;
  std::vector<uint32_t> depth;
  std::vector<uint8_t> flags;  // kSpanFlagParentReconstructed, kSpanFlagAmbiguousParent
  std::vector<uint32_t> child_begin, child_index, roots;
  std::vector<int32_t> external_owner;
  ReferenceReport report;
};

ReferenceTree reference_span_tree(const Trace& trace, const SpanTreeOptions& options = {});

}  // namespace strata::trace::testing
