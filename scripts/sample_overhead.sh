#!/usr/bin/env bash
# Overhead of CPU sampling on resnet18 batch-1 CPU inference (issue 15 acceptance: <= 1% at 99 Hz,
# <= 3% at 999 Hz): the same script run plain, under `strata record --level model`, and with
# --sample=99 / --sample=999 (and perf record -F 999 -g for comparison, when perf is installed),
# rounds interleaved so machine load drifts alike over all modes. Each run prints its median wall
# milliseconds per inference and its process CPU milliseconds per inference (all threads: the
# sampling thread's and the kernel's work included); the script prints each mode's median of both
# over the rounds and their ratios to the plain run. On a loaded machine the wall figures scatter
# far more than the overhead sought; the CPU figures are the ones to compare there. Usage: scripts/sample_overhead.sh [BUILD_DIR] [ROUNDS] [ITERATIONS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-5}
iterations=${3:-40}
strata="$build/bin/strata"
python=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/infer.py" <<'PY'
import statistics, sys, time
import torch, torchvision
torch.set_num_threads(1)
model = torchvision.models.resnet18(weights=None).eval()
x = torch.randn(1, 3, 224, 224)
n = int(sys.argv[1])
with torch.no_grad():
    for _ in range(5):
        model(x)
    times = []
    cpu = time.process_time()
    for _ in range(n):
        t = time.perf_counter()
        model(x)
        times.append(time.perf_counter() - t)
    cpu = time.process_time() - cpu
# Wall time per inference (what a user sees; noisy on a shared machine) and the process's CPU time
# per inference (every thread's, the sampler's and the kernel's work for it included).
print("median_ms", statistics.median(times) * 1e3)
print("cpu_ms", cpu / n * 1e3)
PY
modes=(plain model sample99 sample999)
command -v perf >/dev/null && modes+=(perf999)
run() {
  local mode=$1 out="$work/$1.strata"
  rm -f "$out" "$work/perf.data"
  case $mode in
    plain) "$python" "$work/infer.py" "$iterations" ;;
    model) "$strata" record --quiet --level model -o "$out" -- "$python" "$work/infer.py" "$iterations" ;;
    sample99) "$strata" record --quiet --level model --sample=99 -o "$out" -- "$python" "$work/infer.py" "$iterations" ;;
    sample999) "$strata" record --quiet --level model --sample=999 -o "$out" -- "$python" "$work/infer.py" "$iterations" ;;
    perf999) perf record -q -F 999 -g -o "$work/perf.data" -- "$python" "$work/infer.py" "$iterations" 2>/dev/null ;;
  esac | awk '/^median_ms/ {w = $2} /^cpu_ms/ {c = $2} END {print w "/" c}'
}
declare -A results
echo "load before: $(uptime)"
for ((r = 0; r < rounds; ++r)); do
  for mode in "${modes[@]}"; do results[$mode]+="$(run "$mode") "; done
done
echo "load after: $(uptime)"
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
field() { tr ' ' '\n' | grep -v '^$' | cut -d/ -f"$1"; }
wall_base=$(echo "${results[plain]}" | field 1 | median)
cpu_base=$(echo "${results[plain]}" | field 2 | median)
for mode in "${modes[@]}"; do
  w=$(echo "${results[$mode]}" | field 1 | median)
  c=$(echo "${results[$mode]}" | field 2 | median)
  awk -v mode="$mode" -v w="$w" -v c="$c" -v wb="$wall_base" -v cb="$cpu_base" -v all="${results[$mode]}" \
    'BEGIN {printf "%-10s wall %.2f ms (x%.4f)  cpu %.2f ms (x%.4f)  runs wall/cpu: %s\n", mode, w, w / wb, c, c / cb, all}'
done
