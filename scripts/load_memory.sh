#!/usr/bin/env bash
# Peak memory of opening a trace, as a multiple of its file size (issue: `analyze` within 1.5x).
# Writes generated traces of SPANS spans (default 4,000,000: about 330 MB) in the order a recording
# writes them (each span when it ends, so opening has to sort), then runs `strata info`, `analyze`
# (the default analyses) and `export --format csv` on each under /usr/bin/time and prints peak RSS,
# file size and their ratio, with the machine load. The suite keeps a trimmed version
# (trace_memory_test); this is the full size.
#   scripts/load_memory.sh [BUILD_DIR] [SPANS] [STRATA_BINARY_TO_COMPARE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
spans=${2:-4000000}
other=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/bin/make_trace" "$spans" "$work/end.strata" end >/dev/null
"$build/bin/make_trace" "$spans" "$work/start.strata" start >/dev/null
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %-7s %-8s %12s %12s %7s %8s\n' build order command file_kb peak_kb ratio wall_s
for strata in "$build/bin/strata" $other; do
  label=$( [ "$strata" = "$build/bin/strata" ] && echo this || echo other )
  for order in end start; do
    file_kb=$(( $(stat -c %s "$work/$order.strata") / 1024 ))
    for cmd in info analyze "export --format csv"; do
      /usr/bin/time -f '%M %e' -o "$work/time.txt" "$strata" $cmd "$work/$order.strata" >/dev/null 2>"$work/err.txt" ||
        { echo "$strata $cmd failed: $(tail -1 "$work/err.txt")"; continue; }
      read -r peak wall <"$work/time.txt"
      printf '%-8s %-7s %-8s %12d %12d %7.2f %8s\n' "$label" "$order" "${cmd%% *}" "$file_kb" "$peak" \
        "$(echo "$peak / $file_kb" | bc -l)" "$wall"
    done
  done
done
