#!/usr/bin/env bash
# JSON ingest speed beside a raw simdjson On Demand scan of the same bytes, in one run of bench_import
# (bench/import/import_bench.cc): medians of CPU-time MB/s, their ratio, and the machine load.
# Usage: scripts/ingest_bench.sh [BUILD_DIR] [JSON_FILE] [REPETITIONS]
#   JSON_FILE: plain Kineto JSON (default: the V100 trace in tests/data); for the full-size figure,
#   scripts/gen_kineto.py --mb 500 --out /tmp/kineto_500mb.json first.
set -euo pipefail
build=${1:-build}
json=${2:-}
reps=${3:-5}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load before: $(uptime)"
STRATA_BENCH_JSON="$json" "$build/bin/bench_import" --benchmark_filter='BM_ImportKinetoJson|BM_ImportKinetoJsonGeneric|BM_RawSimdjsonScan' \
  --benchmark_repetitions="$reps" --benchmark_min_time=0.5 --benchmark_format=json >"$out"
echo "load after:  $(uptime)"
/usr/bin/python3 - "$out" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
med = {r["run_name"]: r["bytes_per_second"] / 1e6 for r in runs if r.get("aggregate_name") == "median"}
wall = {r["run_name"]: r["real_time"] for r in runs if r.get("aggregate_name") == "median"}
imp, raw = med["BM_ImportKinetoJson"], med["BM_RawSimdjsonScan"]
print(f"import   median {imp:8.1f} MB/s (CPU time; wall {wall['BM_ImportKinetoJson']:.0f} ms)")
print(f"raw scan median {raw:8.1f} MB/s (CPU time; wall {wall['BM_RawSimdjsonScan']:.0f} ms)")
gen = med.get("BM_ImportKinetoJsonGeneric")
if gen:
    print(f"generic  median {gen:8.1f} MB/s (CPU time; the event scanner off, same run)")
print(f"ratio import/raw = {imp / raw:.3f}" + (f" (generic path: {gen / raw:.3f})" if gen else ""))
PY
