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

}  // namespace strata::exporter
