// `strata profile` rows as CSV or JSON (the table and the folded stacks are profile/profile.h's).
#pragma once

#include <string>

#include "profile/profile.h"

namespace strata::exporter {

// One line per row: rank,name,where,self,total,self_pct,total_pct,parent. --by op/layer: each op's
// culprit functions follow it with the op's name in `parent` (and total = self = their samples).
std::string format_profile_csv(const profile::Profile& profile, const profile::ProfileOptions& options);
// {"by":..., "samples":N, "period_ns":N, "outside_ops":N, "rows":[{"name","where","self","total",
// "culprits":[{"function","samples"}]}], "notes":[...]}: every row, not only the top N.
std::string format_profile_json(const profile::Profile& profile, const profile::ProfileOptions& options);

// speedscope's file format (https://www.speedscope.app/file-format-schema.json): shared frames
// (name, file, line), one "sampled" profile per thread with root-first stacks and their sample
// counts as weights (unit "none"); the layer spans open at a sample lead its stack as "[op] NAME".
std::string format_profile_speedscope(const trace::Trace& trace, const profile::ProfileOptions& options,
                                      profile::FrameNamer& namer);

}  // namespace strata::exporter
