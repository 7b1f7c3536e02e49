#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: install dependencies, build, profile a real program
# with `strata record`, then show the summary, the analysis and a Perfetto-ready export.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup.sh"
bash "$root/scripts/build.sh" "$root/build" -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCHMARKS=OFF
strata="$root/build/bin/strata"
out="$root/out"
mkdir -p "$out"
cd "$out"

echo "== strata record: a Python program instrumented with the span API (model + layer levels) =="
"$strata" record --level layer -o "$out/demo.strata" -- /usr/bin/python3 "$root/examples/python/spans_demo.py"
echo
echo "== strata info =="
"$strata" info "$out/demo.strata" | head -30
"$strata" export "$out/demo.strata" --format chrome -o "$out/demo.chrome.json"
"$strata" export "$out/demo.strata" --format csv -o "$out/demo.spans.csv"
echo
echo "Chrome/Perfetto trace: $out/demo.chrome.json (open in ui.perfetto.dev); spans: $out/demo.spans.csv"
