#!/usr/bin/env bash
# Full-size merge benchmark (issue 17): 16 generated ranks x 1M spans each (bench/ranks), then
# `strata merge` (read, clock alignment, one sort, save) and the cross-rank analyses on the merged
# job. Prints wall time and peak memory of each step, and the machine load.
#   scripts/bench_ranks.sh [BUILD_DIR] [RANKS] [SPANS_PER_RANK]
set -euo pipefail
build=${1:-build}
ranks=${2:-16}
spans=${3:-1000000}
dir=$(mktemp -d /tmp/strata-ranks-XXXXXX)
trap 'rm -rf "$dir"' EXIT
uptime
ninja -C "$build" -j2 -l4 strata_tool make_rank_traces >/dev/null
"$build/bin/make_rank_traces" "$ranks" "$spans" "$dir"
du -sh "$dir"
step() {
  local name=$1
  shift
  /usr/bin/time -f "$name: %e s wall, %M KiB peak RSS" "$@"
}
step merge "$build/bin/strata" merge "$dir"/rank*.strata -o "$dir/job.strata"
step rank_breakdown "$build/bin/strata" analyze "$dir/job.strata" --analysis rank_breakdown --format csv >/dev/null
step collective_wait "$build/bin/strata" analyze "$dir/job.strata" --analysis collective_wait --format csv >/dev/null
for a in idle_time comm_overlap step_time kernel_distribution launch_stats queue_length; do
  step "$a" "$build/bin/strata" analyze "$dir/job.strata" --analysis "$a" --format csv >/dev/null || true  # (launch_stats: the generated ranks have no launch calls)
done
uptime
