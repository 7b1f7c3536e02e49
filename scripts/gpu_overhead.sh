#!/usr/bin/env bash
# Recording overhead on a GPU node: examples/pytorch/train_gpu.py plain, under `strata record --level
# device`, and with --gpu-pc-sampling, interleaved in ROUNDS rounds; one line per run (the median step
# time of 30 steps) appended to OUT/overhead.txt as it finishes, so a run cut short keeps its lines.
# TREE is a relocatable Strata tree (scripts/bundle.sh BUILD --dir TREE), as for gpu_validate.sh.
#
#   scripts/gpu_overhead.sh TREE OUT [ROUNDS]
set -uo pipefail
tree=$(realpath "${1:?usage: gpu_overhead.sh TREE OUT [ROUNDS]}")
out=$(realpath -m "${2:?usage: gpu_overhead.sh TREE OUT [ROUNDS]}")
rounds=${3:-4}
mkdir -p "$out"
S=$tree/bin/strata
py=$(command -v python3)
root=$(cd "$(dirname "$0")/.." && pwd)
t=$root/examples/pytorch/train_gpu.py
# CUDA libraries from the node (PyTorch's wheels), the node's libstdc++ when it is newer (as gpu_validate.sh).
libdirs=/usr/local/cuda/lib64:$("$py" -c 'import nvidia, os; b=list(nvidia.__path__)[0]; print(":".join(sorted({r for r,_,fs in os.walk(b) for f in fs if f.startswith(("libcudnn.so","libcublas.so","libcupti.so","libcublasLt.so"))})))' 2>/dev/null)
export LD_LIBRARY_PATH=$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
sys_cxx=$(ldconfig -p | awk '/libstdc\+\+.so.6 / {print $NF; exit}')
if [ -n "$sys_cxx" ] && strings "$sys_cxx" | grep -q '^GLIBCXX_3.4.30$'; then
  mv -f "$tree/lib/libstdc++.so.6" "$tree/lib/libstdc++.so.6.bundled" 2>/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$S" record --quiet --force --level device -o "$tmp/warm.strata" -- "$py" "$t" --steps 2 > /dev/null 2>&1  # compiles the torch bridge once
for round in $(seq "$rounds"); do
  echo "round $round plain $("$py" "$t" --steps 30 2>&1 | grep step_ms)" >> "$out/overhead.txt"
  echo "round $round device $("$S" record --quiet --force --level device -o "$tmp/d.strata" -- "$py" "$t" --steps 30 2>&1 | grep step_ms)" >> "$out/overhead.txt"
  echo "round $round pcs $("$S" record --quiet --force --level device --gpu-pc-sampling -o "$tmp/p.strata" -- "$py" "$t" --steps 30 2>&1 | grep step_ms)" >> "$out/overhead.txt"
done
cat "$out/overhead.txt"
