// Rank analyses split into a per-rank partial and a combine (issue 17 item 5: strata.dask runs the
// partial on the worker that loads a rank and the combine on the driver). The local run goes through
// the same two steps (partial of the whole trace, combine of that one partial), so the split run and
// the local run cannot drift. A partial is opaque bytes: compact per-rank records, never the rank's
// spans (kernel_distribution: one record per kernel name and rank; collective_wait: start and end of
// each collective call; step_time: start and end of each step).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "analysis/analysis.h"

namespace strata::analysis {

struct RankPartial {
  std::string_view analysis;
  // The records of every owner (rank) in `trace`; they depend on that owner's spans and the --param
  // values only (the same `params` the combine gets).
  std::string (*partial)(const trace::Trace& trace, const Params& params);
  // The analysis's result over the owners of all `partials` (each owner in one partial), with the
  // --param values `params` (validated by the caller as for the local run).
  AnalysisResult (*combine)(std::span<const std::string_view> partials, const Params& params);
};

// The analyses that have a partial; nullptr for any other name (those ship the rank's trace).
const RankPartial* find_rank_partial(std::string_view analysis);

// Called by STRATA_REGISTER_RANK_PARTIAL during static initialization, next to the analysis (its
// library is linked whole, as for STRATA_REGISTER_ANALYSIS); returns true.
bool register_rank_partial(const RankPartial& partial);
#define STRATA_REGISTER_RANK_PARTIAL(TAG, NAME, PARTIAL, COMBINE) \
  [[maybe_unused]] static const bool strata_rank_partial_##TAG =  \
      ::strata::analysis::register_rank_partial({(NAME), &(PARTIAL), &(COMBINE)})

// The partials' encoding: fixed-width binary in host byte order (the workers and the driver run the
// same build); a read past the end throws kTruncated.
namespace wire {

inline constexpr const char* kTruncated = "a partial is truncated (not written by this build)";

template <typename T>
void put(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename T>
T take(std::string_view* in) {
  if (in->size() < sizeof(T)) throw std::runtime_error(kTruncated);
  T value;
  std::memcpy(&value, in->data(), sizeof value);
  in->remove_prefix(sizeof value);
  return value;
}

inline void put_text(std::string* out, std::string_view text) {
  put(out, static_cast<uint32_t>(text.size()));
  out->append(text);
}

inline std::string take_text(std::string_view* in) {
  const auto length = take<uint32_t>(in);
  if (in->size() < length) throw std::runtime_error(kTruncated);
  std::string text(in->substr(0, length));
  in->remove_prefix(length);
  return text;
}

}  // namespace wire
}  // namespace strata::analysis
