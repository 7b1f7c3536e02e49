#!/usr/bin/env bash
# Full-size collector stress (issue 13 item 8): 64 threads x 200,000 nested spans each (50,000
# iterations of outer { middle { inner } api }) on a 1 MiB event budget, structure and counts checked
# (tests/collect/structure_test.cc; the CI runs the same test at 1,500 iterations). Then a 10 M-span
# burst at full speed with the default (growing) budget and with a fixed 64 MiB one.
# Usage: scripts/collector_stress.sh [BUILD_DIR]   (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
echo "load: $(cat /proc/loadavg)"
STRATA_STRESS_ITERATIONS=50000 "$build/bin/collect_test" --gtest_filter='Structure.SixtyFourThreads*'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for budget in default 64; do
  if [ "$budget" = default ]; then unset STRATA_BUFFER_MB; else export STRATA_BUFFER_MB=$budget; fi
  STRATA_OUTPUT="$tmp/burst.strata" "$build/bin/strata_test_program" spans 10000000
  kept=$("$build/bin/strata" info "$tmp/burst.strata" | awk '/^spans:/ {print $2}')
  echo "10 M spans at full speed, budget $budget: $kept kept"
  rm -f "$tmp/burst.strata"
done
