#!/usr/bin/env bash
# Iteration mining at 10^7 ops (issue 12): the generated nested training loops of
# tests/iterations/nested_loops_test.cc up to 10 million ops (the CI suite stops at 10^6), then the
# mining benchmarks side by side with the trace load time (bench/iterations).
#
#   scripts/iterations_scale.sh [BUILD_DIR]     (default build/; needs iterations_test, iterations_bench)
set -euo pipefail
BUILD=${1:-build}
for bin in iterations_test iterations_bench; do
  [ -x "$BUILD/bin/$bin" ] || { echo "$BUILD/bin/$bin not built (ninja -C $BUILD $bin)"; exit 2; }
done
echo "uptime: $(uptime)"
STRATA_ITER_MAX_OPS=${STRATA_ITER_MAX_OPS:-10000000} "$BUILD/bin/iterations_test" --gtest_filter='NestedLoops.*'
"$BUILD/bin/iterations_bench" --benchmark_repetitions=${REPETITIONS:-5} --benchmark_report_aggregates_only=true \
  --benchmark_filter='BM_Mine|BM_LoadTrace|BM_RunIterations'
echo "uptime: $(uptime)"
