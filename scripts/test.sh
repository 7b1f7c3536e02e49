#!/usr/bin/env bash
# Every test, from a fresh Debian 12 machine: install dependencies, build, run the C++ and Python
# suites, run the suite again under ASan+UBSan, and run each libFuzzer target for a bounded time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# 15 s per fuzzer in CI (the gate stays inside 45 minutes, issue 35); scripts/fuzz_long.sh runs longer.
fuzz_seconds=${STRATA_FUZZ_SECONDS:-15}
fuzz_jobs=${STRATA_FUZZ_JOBS:-$(nproc)}
# Each phase's wall time is printed at the end (and when a phase fails), so the gate's cost is
# measured where it runs (docs/testing.md keeps the figures).
phase_names=(); phase_starts=()
phase() {
  phase_names+=("$*"); phase_starts+=("$(date +%s)")
  echo; echo "=== $* ($(date -u +%H:%M:%S)) ==="
}
phase_times() {
  local now i end
  now=$(date +%s)
  echo; echo "=== phase times ==="
  for i in "${!phase_names[@]}"; do
    end=${phase_starts[$((i + 1))]:-$now}
    printf '%6ds  %s\n' "$((end - phase_starts[i]))" "${phase_names[$i]%% (*}"
  done
  printf '%6ds  total\n' "$((now - phase_starts[0]))"
}
cleanup() { phase_times; }
trap cleanup EXIT

phase "setup"
bash "$root/scripts/setup.sh"

phase "include check (docs/architecture.md module map)"; /usr/bin/python3 "$root/scripts/check_includes.py" "$root"
phase "namespace check (namespaces follow folders)"; /usr/bin/python3 "$root/scripts/check_namespaces.py" "$root"
phase "size check (docs/architecture.md size limits)"; /usr/bin/python3 "$root/scripts/check_function_size.py" "$root"
phase "environment variables check (src/core/env_vars.h, docs/environment.md)"; /usr/bin/python3 "$root/scripts/check_env_vars.py" "$root"

phase "build"
bash "$root/scripts/build.sh" "$root/build"

phase "Release build as users and packagers make it (plain cmake: no -Werror; tool and libraries)"
# A user's compiler may warn where ours does not: their build must not fail on it, and must build.
cmake -S "$root" -B "$root/build-release" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_BUILD_TESTS=OFF \
  -DSTRATA_BUILD_BENCHMARKS=OFF >/dev/null
if grep -q -- "-Werror" "$root/build-release/build.ninja"; then
  echo "a plain Release configure turned warnings into errors"; exit 1
fi
ninja -C "$root/build-release" -j "$(nproc)" | tee "$root/build-release/build.log"
# ... and cleanly: a compiler's false positive is suppressed for that compiler in CMakeLists.txt.
if grep -q "warning:" "$root/build-release/build.log"; then echo "the Release build printed warnings (above)"; exit 1; fi

phase "PostgreSQL for the shared performance-database tests"
pg_log=$(mktemp)
STRATA_TEST_PG_URL=$(bash "$root/scripts/start_postgres.sh" 2>"$pg_log") || { cat "$pg_log"; exit 1; }
export STRATA_TEST_PG_URL
pg_dir=$(sed -n 's/.*server in \(.*\) (stop.*/\1/p' "$pg_log")
cleanup() { phase_times; bash "$root/scripts/start_postgres.sh" stop "$pg_dir" 2>/dev/null || true; }
echo "server at $STRATA_TEST_PG_URL"

phase "C++ tests"
(cd "$root/build" && ctest --output-on-failure --timeout 600 -j2)

phase "Python tests"
# --durations: the slowest tests are named in the log, where the gate's time is measured.
STRATA_BUILD_DIR="$root/build" /usr/bin/python3 -m pytest -q -p no:cacheprovider --durations=15 "$root/tests/python"

phase "install test (.deb unpacked into a clean root: --version, find_package, pkg-config, import strata)"
bash "$root/scripts/install_test.sh" "$root/build"

phase "build with ASan+UBSan"
STRATA_BUILD_TYPE=Debug bash "$root/scripts/build.sh" "$root/build-asan" -DSTRATA_SANITIZE=ON -DSTRATA_BUILD_BENCHMARKS=OFF

phase "C++ tests under ASan+UBSan"
# verify_asan_link_order=0: the tests preload the instrumented libstrata.so into child programs.
# handle_segv=0: the crash test checks Strata's own fatal-signal flush, not ASan's report.
# Left out here (they run in the normal build above): sampling-share accuracy (ASan's slowdown shifts
# the CPU split the sampler is checked against) and the bundle's size limit (instrumented libraries
# are larger than the ones carried to a GPU machine).
(cd "$root/build-asan" && ASAN_OPTIONS=verify_asan_link_order=0:handle_segv=0:detect_leaks=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure --timeout 900 -j2 -E '^(SampleShares\.|Bundle\.ArchiveStaysUnder64MiB$)')

phase "collector under ThreadSanitizer"
# The recorder is lock-free between traced threads and its writer: race-check it on its own.
# collect_test needs no `strata` tool (record_test has the tests that run it): 49 objects, not 203.
cmake -S "$root" -B "$root/build-tsan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_BUILD_BENCHMARKS=OFF \
  -DSTRATA_WERROR=ON \
  -DCMAKE_CXX_FLAGS=-fsanitize=thread -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread \
  -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >/dev/null
ninja -C "$root/build-tsan" -j "$(nproc)" collect_test
TSAN_OPTIONS=halt_on_error=1 "$root/build-tsan/bin/collect_test" --gtest_filter='Session.*:TraceContext.*:Structure.*:ExitPaths.*' --gtest_brief=1

phase "fuzzers (${fuzz_seconds}s each, ${fuzz_jobs} at a time)"
# The libraries under test are built instrumented too (coverage and sanitizers inside the readers):
# see STRATA_BUILD_FUZZERS in CMakeLists.txt. scripts/fuzz_long.sh runs each for longer.
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$root/build-fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSTRATA_WERROR=ON \
  -DSTRATA_BUILD_FUZZERS=ON -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCHMARKS=OFF >/dev/null
# Only the fuzz targets (and what they link): the rest is already tested above.
mapfile -t fuzzers < "$root/build-fuzz/fuzzers.txt"
ninja -C "$root/build-fuzz" -j "$(nproc)" "${fuzzers[@]}"
seeds=$(mktemp -d)
bash "$root/scripts/make_fuzz_seeds.sh" "$root/build" "$seeds/native"
source "$root/scripts/fuzz_seeds.sh"
# A libFuzzer run uses one core: one fuzzer per core at a time, each for its full time.
fuzz_logs=$(mktemp -d)
# Runs in the background: one fuzzer, its output in $fuzz_logs/NAME.log.
fuzz_one() {
  local name=$1 corpus seed_dirs
  mapfile -t seed_dirs < <(fuzz_seed_dirs "$name" "$root" "$seeds")
  corpus=$(mktemp -d)
  # -malloc_limit_mb: one allocation past it is a finding (an unchecked size from the input).
  # exec: the background job's pid is the fuzzer's, so a failure elsewhere can stop it.
  exec "$root/build-fuzz/bin/$name" -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -max_len=65536 -print_final_stats=0 "$corpus" "${seed_dirs[@]}" >"$fuzz_logs/$name.log" 2>&1
}
declare -A fuzz_running=()  # pid -> fuzzer
fuzz_wait_one() {
  local pid=0 rc=0 name
  wait -n -p pid "${!fuzz_running[@]}" || rc=$?
  name=${fuzz_running[$pid]}
  unset "fuzz_running[$pid]"
  echo "-- $name"
  if [ "$rc" -ne 0 ]; then
    tail -n 60 "$fuzz_logs/$name.log"
    echo "fuzzer $name failed (exit status $rc): its input is above (crash-*, leak-*, oom-*, timeout-*)"
    kill "${!fuzz_running[@]}" 2>/dev/null || true
    exit 1
  fi
  tail -n 2 "$fuzz_logs/$name.log"
}
for name in "${fuzzers[@]}"; do
  if [ "${#fuzz_running[@]}" -ge "$fuzz_jobs" ]; then fuzz_wait_one; fi
  fuzz_one "$name" &
  fuzz_running[$!]=$name
done
while [ "${#fuzz_running[@]}" -gt 0 ]; do fuzz_wait_one; done
phase "done"
