#!/usr/bin/env bash
# Full-size runs of the realistic answers suite (tests/python/test_realistic_leveled.py; CI runs it
# trimmed): leveled runs of resnet50 with 1 and 3 runs per level, and per-op statistics of a 300-step
# LSTM training loop, every answer checked against the recorded spans.
#   scripts/realistic_answers.sh [BUILD_DIR]      (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
STRATA_REALISTIC_FULL=1 STRATA_BUILD_DIR="$build" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  "$root/tests/python/test_realistic_leveled.py"
