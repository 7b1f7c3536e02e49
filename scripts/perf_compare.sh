#!/usr/bin/env bash
# Side-by-side benchmark comparison of two revisions, for a change to a hot path:
#   scripts/perf_compare.sh BASE HEAD        (any git revisions: main, HEAD, a sha, h/branch)
# Builds only the benchmark binaries of each revision (Release, ccache when present), then runs each
# benchmark binary alternately BASE, HEAD, HEAD, BASE, ... ROUNDS times in one session, so load
# drift hits both sides alike, and prints per benchmark the medians, the HEAD/BASE ratio of medians
# and two intervals: min-max of the per-round paired ratios and a bootstrap 95% interval over all
# repetitions. The load average is printed around every round; a busy machine widens the intervals,
# it does not bias one side. Exits non-zero when a build or a benchmark run fails.
#
# Environment (defaults in brackets):
#   BENCHES  binaries to run [span_bench trace_io_bench bench_import analysis_bench]
#            (span_bench: span sites; trace_io_bench: writer and load; bench_import: import;
#            analysis_bench: load + analyses). A binary missing in one revision is skipped, said so.
#   FILTER   --benchmark_filter regex for every binary [all]
#   ROUNDS   alternations [3]      REPS  --benchmark_repetitions per run [5] (a benchmark that
#            reports aggregates only gives its median: one value per round)
#   METRIC   real_time or cpu_time [cpu_time]
#   JOBS     build parallelism [2] TASKSET  e.g. "taskset -c 1" to pin every run [none]
#   PERF_DIR builds, kept per commit and reused by later calls [<repo>/build-perf]
#   BENCH_FILES  files (paths in the repository) that BASE takes from HEAD, e.g.
#            bench/collect/span_bench.cc when the change edits a benchmark: both libraries then
#            run the same benchmark code [none]
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: scripts/perf_compare.sh BASE HEAD   (see the header for ROUNDS, REPS, BENCHES, FILTER)" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
benches=${BENCHES:-span_bench trace_io_bench bench_import analysis_bench}
rounds=${ROUNDS:-3}
reps=${REPS:-5}
metric=${METRIC:-cpu_time}
jobs=${JOBS:-2}
perf_dir=${PERF_DIR:-$root/build-perf}
case $metric in real_time | cpu_time) ;; *) echo "perf_compare: METRIC must be real_time or cpu_time" >&2; exit 2 ;; esac
[[ $rounds =~ ^[1-9][0-9]*$ && $reps =~ ^[1-9][0-9]*$ ]] || { echo "perf_compare: ROUNDS and REPS must be positive integers" >&2; exit 2; }

resolve() {
  git -C "$root" rev-parse --verify --quiet "$1^{commit}" || { echo "perf_compare: no such revision: $1" >&2; exit 2; }
}
base_sha=$(resolve "$1")
head_sha=$(resolve "$2")
mkdir -p "$perf_dir"
# Warnings are not errors here: an older revision must build with today's compiler, and older
# CMakeLists.txt hard-code -Werror. The launcher puts -Wno-error last (through ccache when present).
launcher=$perf_dir/compile-no-werror.sh
cat >"$launcher" <<'SH'
#!/bin/sh
if command -v ccache >/dev/null; then exec ccache "$@" -Wno-error; fi
exec "$@" -Wno-error
SH
chmod +x "$launcher"

# Builds the benchmark binaries of one commit into $perf_dir/<sha>/build/bin (sources from
# `git archive`, so the working tree is never touched). Prints the binaries it built.
build_rev() {
  local sha=$1 dir=$perf_dir/$2 target built=() file
  if [[ ! -f $dir/src/.complete ]]; then
    rm -rf "$dir/src"
    mkdir -p "$dir/src"
    git -C "$root" archive "$sha" | tar -x -C "$dir/src"
    if [[ $sha == "$base_sha" ]]; then
      for file in ${BENCH_FILES:-}; do
        mkdir -p "$(dirname "$dir/src/$file")"
        git -C "$root" show "$head_sha:$file" >"$dir/src/$file" || { echo "perf_compare: $file is not in HEAD" >&2; return 1; }
      done
    fi
    touch "$dir/src/.complete"
  fi
  if ! cmake -S "$dir/src" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_BUILD_TESTS=OFF \
      -DSTRATA_BUILD_BENCHMARKS=ON -DSTRATA_BUILD_FUZZERS=OFF -DSTRATA_WERROR=OFF \
      -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" -DCMAKE_C_COMPILER_LAUNCHER="$launcher" >"$dir/configure.log" 2>&1; then
    echo "perf_compare: configuring ${sha:0:10} failed (see $dir/configure.log)" >&2
    return 1
  fi
  for target in $benches; do
    if ninja -C "$dir/build" -t query "$target" >/dev/null 2>&1; then built+=("$target"); fi
  done
  if [[ ${#built[@]} -eq 0 ]]; then
    echo "perf_compare: ${sha:0:10} has none of: $benches" >&2
    return 1
  fi
  if ! ninja -C "$dir/build" -j "$jobs" "${built[@]}" >"$dir/build.log" 2>&1; then
    echo "perf_compare: building ${sha:0:10} failed (see $dir/build.log)" >&2
    tail -n 20 "$dir/build.log" >&2
    return 1
  fi
  echo "${built[@]}"
}

echo "== perf_compare: BASE $1 = ${base_sha:0:10}, HEAD $2 = ${head_sha:0:10}"
echo "   machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "   building (Release, -j$jobs) into $perf_dir"
base_dir=$base_sha
if [[ -n ${BENCH_FILES:-} ]]; then
  base_dir=$base_sha-with-$(printf '%s\n' "$head_sha" "$BENCH_FILES" | sha1sum | cut -c1-10)
  echo "   BASE runs HEAD's $BENCH_FILES"
fi
base_built=$(build_rev "$base_sha" "$base_dir") || exit 1
head_built=$(build_rev "$head_sha" "$head_sha") || exit 1
run_list=()
for target in $benches; do
  if [[ " $base_built " == *" $target "* && " $head_built " == *" $target "* ]]; then
    run_list+=("$target")
  else
    echo "   skipped $target: not in both revisions"
  fi
done

results=$(mktemp -d "${TMPDIR:-/tmp}/strata-perf-compare.XXXXXX")
trap 'rm -rf "$results"' EXIT
filter_args=()
[[ -n ${FILTER:-} ]] && filter_args=("--benchmark_filter=$FILTER")
read -r -a pin <<<"${TASKSET:-}"

run_one() {  # side round target
  local side=$1 round=$2 target=$3 sha
  if [[ $side == base ]]; then sha=$base_dir; else sha=$head_sha; fi
  local out=$results/$target.$side.$round.json
  # Each binary runs from a scratch directory: benchmarks that write files write them there.
  if ! (cd "$results" && "${pin[@]}" "$perf_dir/$sha/build/bin/$target" --benchmark_repetitions="$reps" \
      "${filter_args[@]}" --benchmark_format=json --benchmark_out="$out" >/dev/null 2>"$results/$target.$side.$round.err"); then
    echo "perf_compare: $target ($side, round $round) failed:" >&2
    tail -n 20 "$results/$target.$side.$round.err" >&2
    return 1
  fi
}

for ((round = 1; round <= rounds; round++)); do
  if ((round % 2 == 1)); then order=(base head); else order=(head base); fi
  echo "   round $round/$rounds (${order[*]}): load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for target in "${run_list[@]}"; do
    for side in "${order[@]}"; do run_one "$side" "$round" "$target" || exit 1; done
  done
done
echo "   done: load average $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$results" "$metric" "$rounds" "${run_list[@]}" <<'PY'
import json, random, statistics, sys
results, metric, rounds, targets = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]

def load(target, side, rnd):
    with open(f"{results}/{target}.{side}.{rnd}.json") as f:
        doc = json.load(f)
    runs, medians = {}, {}
    for b in doc["benchmarks"]:
        if b.get("error_occurred"):
            continue
        name = b.get("run_name", b["name"])
        unit = b.get("time_unit", "ns")
        if b.get("run_type") != "aggregate":
            runs.setdefault(name, ([], unit))[0].append(float(b[metric]))
        elif b.get("aggregate_name") == "median":
            medians[name] = ([float(b[metric])], unit)
    # A benchmark that reports aggregates only (ReportAggregatesOnly in its code) gives one value
    # per run: its median.
    for name, value in medians.items():
        runs.setdefault(name, value)
    return runs

rng = random.Random(38)
def bootstrap(base, head, n=2000):
    ratios = sorted(statistics.median(rng.choices(head, k=len(head))) /
                    statistics.median(rng.choices(base, k=len(base))) for _ in range(n))
    return ratios[int(0.025 * n)], ratios[int(0.975 * n) - 1]

print(f"\n{metric}, medians over {rounds} rounds; ratio = HEAD/BASE (<1: HEAD faster); "
      "[paired: min-max of per-round ratios] [bootstrap 95%]")
print(f"{'benchmark':58} {'BASE':>12} {'HEAD':>12} {'ratio':>7}  {'paired':>15}  {'bootstrap':>15}")
for target in targets:
    per_round = [(load(target, "base", r), load(target, "head", r)) for r in range(1, rounds + 1)]
    names = [n for n in per_round[0][0] if all(n in b and n in h for b, h in per_round)]
    for name in names:
        unit = per_round[0][0][name][1]
        base_all = [v for b, _ in per_round for v in b[name][0]]
        head_all = [v for _, h in per_round for v in h[name][0]]
        mb, mh = statistics.median(base_all), statistics.median(head_all)
        if mb <= 0 or mh <= 0:
            continue
        paired = [statistics.median(h[name][0]) / statistics.median(b[name][0]) for b, h in per_round]
        lo, hi = bootstrap(base_all, head_all)
        print(f"{(target + ':' + name)[:58]:58} {mb:>9.4g} {unit:2} {mh:>9.4g} {unit:2} {mh / mb:>7.3f}  "
              f"[{min(paired):.3f}, {max(paired):.3f}]  [{lo:.3f}, {hi:.3f}]")
PY
