#!/usr/bin/env bash
# The cost of `strata summary` against `strata info` (and the default `strata analyze`) on a generated
# trace of SPANS spans (default 5,000,000: bench/analysis/make_trace, GPU-shaped, about 420 MB):
# wall and CPU (user + sys) medians of RUNS runs each, peak RSS, and the time the summary's open (load
# and span tree) took, with the load average. docs/performance/summary.md has the figures.
#   scripts/summary_cost.sh [BUILD_DIR] [SPANS] [RUNS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
spans=${2:-5000000}
runs=${3:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/bin/make_trace" "$spans" "$work/t.strata" start >/dev/null
echo "trace: $spans spans, $(( $(stat -c %s "$work/t.strata") / 1048576 )) MiB; load average $(cut -d' ' -f1-3 /proc/loadavg)"
median() { sort -n | sed -n "$(( (runs + 1) / 2 ))p"; }
for cmd in info summary analyze; do
  : >"$work/walls"; : >"$work/cpus"
  for _ in $(seq "$runs"); do
    /usr/bin/time -f '%e %U %S %M' -o "$work/time.txt" "$build/bin/strata" $cmd "$work/t.strata" >/dev/null 2>&1
    read -r wall user sys peak <"$work/time.txt"
    echo "$wall" >>"$work/walls"
    echo "$user + $sys" | bc >>"$work/cpus"
  done
  printf '%-8s wall median %5s s  cpu median %5s s  peak %s KB\n' "$cmd" "$(median <"$work/walls")" \
    "$(median <"$work/cpus")" "$peak"
done
"$build/bin/strata" summary -v "$work/t.strata" 2>&1 >/dev/null | grep ' read ' || true
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
