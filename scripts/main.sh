#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: install dependencies, build, profile a real
# torchvision model on Debian's PyTorch with `strata record` (model, layer and oneDNN library levels,
# no change to the script), then print the analysis and write a Perfetto-ready export.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup.sh"
bash "$root/scripts/build.sh" "$root/build" -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCHMARKS=OFF
strata="$root/build/bin/strata"
out="$root/out"
mkdir -p "$out"
cd "$out"
model=${STRATA_MODEL:-resnet18}

echo "== strata record: $model inference at batch sizes 1, 2, 4 (levels model + layer + library) =="
"$strata" record --force --level library -o "$out/$model.strata" -- \
  /usr/bin/python3 "$root/examples/pytorch/infer.py" --model "$model" --batch 1,2,4 --iterations 3
echo
echo "== strata analyze: model table (optimal batch size), layer table, by-type aggregation, per-op statistics =="
"$strata" analyze "$out/$model.strata" \
  --analysis model_table,layer_type_aggregate,op_stats,kernels_by_name,conv_share --param top=15
"$strata" analyze "$out/$model.strata" --analysis layer_table --format csv --output "$out/analysis" --force >/dev/null
"$strata" export "$out/$model.strata" --format chrome --force -o "$out/$model.chrome.json"
echo
echo "Full layer table: $out/analysis/; timeline: $out/$model.chrome.json (open in ui.perfetto.dev)"
