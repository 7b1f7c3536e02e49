#!/usr/bin/env bash
# Runs every libFuzzer target (or those named) for longer than CI's bounded time and reports, per
# fuzzer, the executions and the coverage reached: edges ("cov") and features ("ft"), as libFuzzer
# counts them over the instrumented harness and libraries. Crashes are kept under OUT/artifacts.
#
#   scripts/fuzz_long.sh [--seconds N] [--out DIR] [--build DIR] [--keep-corpus] [FUZZER...]
#
# Defaults: 600 s each, OUT=fuzz-long-<date>, BUILD=build-fuzz (configured and built here when
# missing, as scripts/test.sh does; native seeds come from the plain build in build/). Writes
# OUT/results.md (a Markdown table for docs/testing.md) and OUT/<fuzzer>.log.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=600 out="" build="$root/build-fuzz" keep=0
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --keep-corpus) keep=1; shift ;;
    -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
    -*) echo "fuzz_long.sh: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
out=${out:-$root/fuzz-long-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out/artifacts"
if [ ! -f "$build/fuzzers.txt" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSTRATA_BUILD_FUZZERS=ON -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCHMARKS=OFF >/dev/null
fi
[ ${#names[@]} -gt 0 ] || mapfile -t names < "$build/fuzzers.txt"
ninja -C "$build" "${names[@]}" >/dev/null
seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
if [ -x "$root/build/bin/strata" ]; then
  bash "$root/scripts/make_fuzz_seeds.sh" "$root/build" "$seeds/native" >/dev/null
else
  echo "fuzz_long.sh: no plain build in $root/build: native fuzzers start from fuzz/corpus only" >&2
  mkdir -p "$seeds/native"
fi
source "$root/scripts/fuzz_seeds.sh"

{
  echo "Fuzzed $(date -u +%Y-%m-%d) for ${seconds} s each on $(nproc) cores (load before: $(cut -d' ' -f1-3 /proc/loadavg))."
  echo
  echo "| fuzzer | seconds | executions | exec/s | edges (cov) | features (ft) | corpus | result |"
  echo "|---|---:|---:|---:|---:|---:|---:|---|"
} > "$out/results.md"
status=0
for name in "${names[@]}"; do
  mapfile -t seed_dirs < <(fuzz_seed_dirs "$name" "$root" "$seeds")
  corpus="$out/corpus/$name"
  mkdir -p "$corpus"
  echo "-- $name (${seconds} s)" >&2
  result=ok
  "$build/bin/$name" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$out/artifacts/$name-" "$corpus" "${seed_dirs[@]}" \
    > "$out/$name.log" 2>&1 || { result="FAILED (see $name.log, artifacts/)"; status=1; }
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$name.log" | tail -n 1)
  last=$(grep -E '^#[0-9]+' "$out/$name.log" | grep -E 'cov: [0-9]+' | tail -n 1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<< "$last")
  execs=${execs:-0}
  rate=$(( execs / (seconds > 0 ? seconds : 1) ))
  echo "| $name | $seconds | $execs | $rate | ${cov:-?} | ${ft:-?} | ${corp:-?} | $result |" >> "$out/results.md"
  [ "$keep" = 1 ] || rm -rf "$corpus"
done
cat "$out/results.md"
exit $status
