#!/usr/bin/env bash
# Validates Strata's GPU collectors on a real GPU node, from a relocatable tree (scripts/bundle.sh
# BUILD --dir DIR) built elsewhere. Runs, each with a time limit so one hang costs one step:
#   1. the environment: GPU, driver, PyTorch, where CUPTI/cuDNN/cuBLAS come from;
#   2. examples/pytorch/train_gpu.py plain (baseline step time), under `strata record --level device`
#      (CUPTI callbacks + activities, NVTX ranges per op, cuDNN/cuBLAS interposers), and under
#      torch.profiler (Kineto) as the reference the Strata trace is compared with;
#   3. examples/cuda/launch_loop.cu plain and recorded (overhead per launch, attribution to NVTX ranges);
#   4. the per-kernel metrics path (--metrics flops,dram,occupancy: CUPTI Range Profiler);
#   5. Nsight Compute's CSV of the first kernels of the same program (for `strata import --metrics`).
# And, with GPU_VALIDATE_STEPS naming them (issue 15 item 9, and what the first H100 run left):
#   pcsampling  GPU PC sampling on train_gpu.py: continuous (twice: PCs stable across runs?) and
#               serialized, each with a time limit and stacks printed on a hang;
#   stalls      examples/cuda/stall_kernels.cu (known dominant stalls, -lineinfo) recorded with PC
#               sampling, and Nsight Compute's own PC sampling of the same kernels (raw page);
#   churn       examples/cuda/context_churn.cu (contexts and modules created and destroyed while kernels
#               run) with PC sampling polled every 1 ms: the locking check (docs/gpu-collector.md, 6b);
#   features    examples/pytorch/gpu_features.py (CUDA graph replay, NCCL, two streams) recorded by
#               Strata and by Kineto;
#   cpusample   CPU sampling (--sample) of train_gpu.py next to --level device: perf_event or its
#               fallback in this machine, Python frames of this Python, samples under the ops;
#   bench       `strata bench run --backend cuda` of resnet18.onnx into an SQLite database;
#   pcmatrix    stall_kernels under PC sampling configurations (CUPTI's default period, its worker
#               woken every 10 ms, periods 2^15 and 2^17, a 2 GiB hardware buffer): which one keeps the
#               hardware buffer from filling and every kernel sampled;
#   graphs      gpu_features.py's CUDA graph part recorded node by node (default) and by graph
#               (STRATA_CUDA_GRAPH_TRACE=graph);
#   nvtxnames   train_gpu.py --nvtx-ops at --level layer (emit_nvtx's op ranges become spans named by op)
#   gpubound    resnet18 inference on the GPU recorded at --level device, the CUDA micro-benchmarks of
#               its layers, and `strata lowerbound --backend cuda --trace` of the two (Benanza on a GPU)
#   pcoverhead  train_gpu.py plain, --level device, --level device --gpu-pc-sampling, interleaved.
# The CUDA programs are compiled with nvcc here unless GPU_VALIDATE_BIN names a folder that already
# holds stall_kernels, context_churn and churn_kernel.cubin (built elsewhere with the same CUDA).
# Everything it writes goes to OUT (default ./gpu-validate-out): traces, the reference, logs.
#
#   scripts/gpu_validate.sh STRATA_TREE [OUT]
# GPU_VALIDATE_STEPS="torch kineto launch metrics ncu" (the default) picks the steps to run; also
# "overhead" (plain, Strata --level device and Kineto runs interleaved, twice) and "fixtures" (3-step
# Strata and Kineto traces of the same program, small enough for tests/data).
set -uo pipefail
steps=" ${GPU_VALIDATE_STEPS:-torch kineto launch metrics ncu} "
want() { [[ "$steps" == *" $1 "* ]]; }
tree=$(realpath "${1:?usage: gpu_validate.sh STRATA_TREE [OUT]}")
out=$(realpath -m "${2:-gpu-validate-out}")
mkdir -p "$out"
root=$(cd "$(dirname "$0")/.." && pwd)
log="$out/validate.log"
strata="$tree/bin/strata"
py=$(command -v python3)
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; } >> "$log"
run() {  # run LIMIT_SECONDS CMD...: output to the log, status line after it
  local limit=$1; shift
  echo "\$ $*" >> "$log"
  local t0=$(date +%s%N)
  timeout --kill-after=5 "$limit" "$@" >> "$log" 2>&1
  local rc=$?
  echo "-> rc=$rc in $(( ($(date +%s%N) - t0) / 1000000 )) ms" >> "$log"
  return $rc
}
# Like run, but a command still running after LIMIT seconds gets its processes' stacks printed
# (cuda-gdb, when the machine has it) before it is killed: a hang says where it hangs.
run_or_backtrace() {
  local limit=$1; shift
  echo "\$ $*" >> "$log"
  "$@" >> "$log" 2>&1 &
  local pid=$! waited=0
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt "$limit" ]; do sleep 1; waited=$((waited + 1)); done
  if kill -0 "$pid" 2>/dev/null; then
    echo "-> still running after ${limit} s: stacks of its processes" >> "$log"
    for p in $pid $(pgrep -P "$pid") $(pgrep -P "$(pgrep -P "$pid" | head -1)" 2>/dev/null); do
      echo "--- pid $p: $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null)" >> "$log"
      if command -v cuda-gdb >/dev/null; then
        timeout 60 cuda-gdb -p "$p" -batch -ex "thread apply all bt 25" >> "$log" 2>&1
      else
        for t in /proc/$p/task/*; do echo "$t $(cat $t/wchan 2>/dev/null)" >> "$log"; done
      fi
    done
    pkill -KILL -P "$pid"; kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid"; echo "-> rc=$?" >> "$log"
}

step "environment"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
  uname -r; ldd --version | head -1
  "$py" -c 'import torch,sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  echo "libstdc++: $(ldconfig -p | grep -m1 'libstdc++.so.6 ' )"
  strings "$(ldconfig -p | awk '/libstdc\+\+.so.6 / {print $NF; exit}')" 2>/dev/null | grep -c '^GLIBCXX_3.4.3'
} >> "$log" 2>&1

# The tree bundles this build machine's libstdc++; a preloaded library must not pull an older
# libstdc++ into a process whose framework needs a newer one: keep the target's when it is newer.
sys_cxx=$(ldconfig -p | awk '/libstdc\+\+.so.6 / {print $NF; exit}')
if [ -n "$sys_cxx" ] && strings "$sys_cxx" | grep -q '^GLIBCXX_3.4.30$'; then
  mv -f "$tree/lib/libstdc++.so.6" "$tree/lib/libstdc++.so.6.bundled" 2>/dev/null && \
    echo "using the target's libstdc++ ($sys_cxx): it provides GLIBCXX_3.4.30" >> "$log"
fi

# CUDA libraries come from the target: the toolkit's CUPTI and PyTorch's wheels (cuDNN, cuBLAS).
libdirs=""
for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 \
  $("$py" -c 'import nvidia, os; b = list(nvidia.__path__)[0]; print(" ".join(sorted({os.path.join(r) for r, _, fs in os.walk(b) for f in fs if f.startswith(("libcudnn.so", "libcublas.so", "libcupti.so", "libcublasLt.so"))})))' 2>/dev/null); do
  [ -d "$d" ] && libdirs="$libdirs${libdirs:+:}$d"
done
export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >> "$log"
run 20 "$strata" --version

train="$root/examples/pytorch/train_gpu.py"
if want torch; then
  step "PyTorch: plain, Strata --level device with NVTX op ranges"
  run 120 "$py" "$train" --steps 30
  run 120 "$py" "$train" --steps 30 --nvtx-ops
  run 180 "$strata" record --level device -o "$out/h100_train_device.strata" -- "$py" "$train" --steps 30 --nvtx-ops
  run 60 "$strata" info "$out/h100_train_device.strata"
fi
if want kineto; then
  step "PyTorch under torch.profiler (Kineto): the reference"
  run 180 "$py" "$train" --steps 30 --kineto "$out/h100_train_kineto.json"
  gzip -f "$out/h100_train_kineto.json"
fi

if want overhead; then
  step "overhead: plain, strata --level device, Kineto; interleaved, twice"
  for round in 1 2; do
    run 120 "$py" "$train" --steps 30
    run 120 "$strata" record --quiet --force --level device -o "/tmp/overhead-$round.strata" -- "$py" "$train" --steps 30
    run 120 "$py" "$train" --steps 30 --kineto "/tmp/overhead-$round.json"
  done
fi
if want fixtures; then
  step "fixtures: 3 steps recorded by Strata (--level device, NVTX op ranges) and by Kineto"
  run 120 "$strata" record --level device -o "$out/h100_train3_device.strata" -- "$py" "$train" --steps 3 --nvtx-ops
  run 120 "$py" "$train" --steps 3 --kineto "$out/h100_train3_kineto.json"
  gzip -f "$out/h100_train3_kineto.json"
fi

if want launch && command -v nvcc >/dev/null; then
  step "launch-bound loop: overhead per launch and attribution"
  run 120 nvcc -O2 -I/usr/local/cuda/include -o "$out/launch_loop" "$root/examples/cuda/launch_loop.cu" -lcuda
  run 60 "$out/launch_loop" 20000
  run 120 "$strata" record --level device -o "$out/launch_loop.strata" -- "$out/launch_loop" 20000
  run 60 "$strata" analyze "$out/launch_loop.strata" --analysis kernels_by_name
  rm -f "$out/launch_loop"
fi

if want metrics; then
  step "per-kernel metrics (CUPTI Range Profiler)"
  run_or_backtrace 60 "$strata" record --level device --metrics flops,dram,occupancy \
    -o "$out/h100_train_metrics.strata" -- "$py" "$train" --steps 2
  run 60 "$strata" info "$out/h100_train_metrics.strata"
fi

if want ncu && command -v ncu >/dev/null; then
  step "Nsight Compute CSV of the first kernels"
  timeout 150 ncu --csv --launch-count 60 --metrics \
gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
    "$py" "$train" --steps 1 > "$out/h100_train_ncu.csv" 2>> "$log"
  echo "ncu rc=$? lines=$(wc -l < "$out/h100_train_ncu.csv")" >> "$log"
fi

cuda_bin() {  # the prebuilt CUDA programs, or build them into OUT/bin
  local bin=${GPU_VALIDATE_BIN:-}
  if [ -n "$bin" ] && [ -x "$bin/stall_kernels" ]; then echo "$(realpath "$bin")"; return; fi
  bin="$out/bin"; mkdir -p "$bin"
  if [ ! -x "$bin/stall_kernels" ]; then
    run 120 nvcc -O2 -lineinfo -arch=sm_90 -o "$bin/stall_kernels" "$root/examples/cuda/stall_kernels.cu"
    run 60 nvcc -cubin -arch=sm_90 -o "$bin/churn_kernel.cubin" "$root/examples/cuda/churn_kernel.cu"
    run 60 nvcc -O2 -o "$bin/context_churn" "$root/examples/cuda/context_churn.cu" -lcuda
  fi
  echo "$bin"
}

if want pcsampling; then
  step "GPU PC sampling on train_gpu.py: continuous twice, then serialized"
  run_or_backtrace 120 "$strata" record --level device --gpu-pc-sampling -o "$out/h100_train_pcs.strata" -- "$py" "$train" --steps 10 --nvtx-ops
  run 60 "$strata" info "$out/h100_train_pcs.strata"
  run_or_backtrace 90 "$strata" record --level device --gpu-pc-sampling -o "$out/h100_train_pcs2.strata" -- "$py" "$train" --steps 3
  run_or_backtrace 150 "$strata" record --level device --gpu-pc-sampling --gpu-pc-sampling-mode serialized -o "$out/h100_train_pcs_serial.strata" -- "$py" "$train" --steps 2
  run 60 "$strata" info "$out/h100_train_pcs_serial.strata"
fi

if want stalls; then
  step "kernels with known stalls: Strata's PC sampling and Nsight Compute's"
  bin=$(cuda_bin)
  run 60 "$bin/stall_kernels" 0.5
  run_or_backtrace 90 "$strata" record --level device --gpu-pc-sampling -o "$out/stalls_pcs.strata" -- "$bin/stall_kernels" 0.5
  run 60 "$strata" info "$out/stalls_pcs.strata"
  run 60 "$strata" analyze "$out/stalls_pcs.strata" --analysis gpu_stalls
  if command -v ncu >/dev/null; then
    timeout 150 ncu --csv --page raw --section WarpStateStats --section SourceCounters \
      -k regex:'pointer_chase|fma_chain|barrier_imbalance' "$bin/stall_kernels" --once > "$out/stalls_ncu_raw.csv" 2>> "$log"
    echo "ncu rc=$? lines=$(wc -l < "$out/stalls_ncu_raw.csv")" >> "$log"
  fi
fi

if want churn; then
  step "contexts and modules created and destroyed while sampling polls every 1 ms"
  bin=$(cuda_bin)
  run 60 "$bin/context_churn" "$bin/churn_kernel.cubin" 20 5
  STRATA_GPU_PC_SAMPLING_POLL_MS=1 run_or_backtrace 120 "$strata" record --level device --gpu-pc-sampling \
    -o "$out/churn_pcs.strata" -- "$bin/context_churn" "$bin/churn_kernel.cubin" 20 5
  run 60 "$strata" info "$out/churn_pcs.strata"
fi

features="$root/examples/pytorch/gpu_features.py"
if want features; then
  step "CUDA graph replay, NCCL, two streams: Strata and Kineto"
  run_or_backtrace 150 "$strata" record --level device -o "$out/h100_features.strata" -- "$py" "$features"
  run 60 "$strata" info "$out/h100_features.strata"
  run 150 "$py" "$features" --kineto "$out/h100_features_kineto.json"
  gzip -f "$out/h100_features_kineto.json"
fi

if want cpusample; then
  step "CPU sampling of a CUDA training process (--sample) with --level device"
  run_or_backtrace 120 "$strata" record --level device --sample -o "$out/h100_train_sampled.strata" -- "$py" "$train" --steps 10 --nvtx-ops
  run 60 "$strata" info "$out/h100_train_sampled.strata"
  run 60 "$strata" profile "$out/h100_train_sampled.strata" --by op --top 15
fi

if want bench; then
  step "strata bench run --backend cuda (cuDNN/cuBLAS micro-benchmarks of resnet18's layers)"
  run 200 "$strata" bench run "$root/tests/lowerbound/data/resnet18.onnx" --backend cuda --db "$out/h100_bench.sqlite" --dtype fp32,fp16 --repetitions 5
fi

if want pcmatrix; then
  step "PC sampling configurations on kernels that keep every SM busy"
  bin=$(cuda_bin)
  run 60 "$bin/stall_kernels" 0.3
  for config in default worker10 period15 period17 hwbuf2g; do
    unset STRATA_GPU_PC_SAMPLING_PERIOD STRATA_GPU_PC_SAMPLING_WORKER_MS STRATA_GPU_PC_SAMPLING_HW_BUFFER_MB
    case $config in
      worker10) export STRATA_GPU_PC_SAMPLING_WORKER_MS=10 ;;
      period15) export STRATA_GPU_PC_SAMPLING_PERIOD=15 ;;
      period17) export STRATA_GPU_PC_SAMPLING_PERIOD=17 ;;
      hwbuf2g) export STRATA_GPU_PC_SAMPLING_HW_BUFFER_MB=2048 STRATA_GPU_PC_SAMPLING_WORKER_MS=10 ;;
    esac
    echo "config $config" >> "$log"
    run_or_backtrace 60 "$strata" record --level device --gpu-pc-sampling -o "$out/stalls_$config.strata" -- "$bin/stall_kernels" 0.3
    "$strata" info "$out/stalls_$config.strata" 2>&1 | grep -E "pc_sampling|lost events" >> "$log"
  done
  unset STRATA_GPU_PC_SAMPLING_PERIOD STRATA_GPU_PC_SAMPLING_WORKER_MS STRATA_GPU_PC_SAMPLING_HW_BUFFER_MB
fi

if want graphs; then
  step "CUDA graph replays traced by node (default) and by graph"
  run_or_backtrace 120 "$strata" record --level device -o "$out/graphs_node.strata" -- "$py" "$features" --nccl-calls 0
  STRATA_CUDA_GRAPH_TRACE=graph run_or_backtrace 120 "$strata" record --level device -o "$out/graphs_graph.strata" -- "$py" "$features" --nccl-calls 0
  run 150 "$py" "$features" --nccl-calls 0 --kineto "$out/graphs_kineto.json"
  gzip -f "$out/graphs_kineto.json"
fi

if want nvtxnames; then
  step "emit_nvtx op ranges recorded at --level layer"
  run_or_backtrace 120 "$strata" record --level layer -o "$out/h100_train_nvtx_layer.strata" -- "$py" "$train" --steps 3 --nvtx-ops
fi

if want gpubound; then
  step "resnet18 on the GPU: recorded run, cuDNN/cuBLAS micro-benchmarks, lower bound"
  onnx="$root/tests/lowerbound/data/resnet18.onnx"
  run 120 "$strata" bench run "$onnx" --backend cuda --db "$out/h100_resnet18_bench.sqlite" --dtype fp32
  run_or_backtrace 150 "$strata" record --level device -o "$out/h100_resnet18_infer.strata" -- "$py" \
    "$root/examples/pytorch/infer.py" --model resnet18 --batch 1 --iterations 20 --device cuda
  run 120 "$strata" lowerbound "$onnx" --backend cuda --db "$out/h100_resnet18_bench.sqlite" \
    --trace "$out/h100_resnet18_infer.strata"
fi

if want pcoverhead2; then
  step "overhead of PC sampling by period: plain, --level device, + PC sampling at 2^15 and 2^17"
  run 120 "$py" "$train" --steps 30
  run 120 "$strata" record --quiet --force --level device -o /tmp/pco2-d.strata -- "$py" "$train" --steps 30
  STRATA_GPU_PC_SAMPLING_PERIOD=15 run 120 "$strata" record --quiet --force --level device --gpu-pc-sampling -o /tmp/pco2-15.strata -- "$py" "$train" --steps 30
  STRATA_GPU_PC_SAMPLING_PERIOD=17 run 120 "$strata" record --quiet --force --level device --gpu-pc-sampling -o /tmp/pco2-17.strata -- "$py" "$train" --steps 30
  run 120 "$strata" record --quiet --force --level device --gpu-pc-sampling -o /tmp/pco2-def.strata -- "$py" "$train" --steps 30
fi

if want pcoverhead; then
  step "overhead of PC sampling: plain, --level device, + --gpu-pc-sampling; interleaved, twice"
  for round in 1 2; do
    run 120 "$py" "$train" --steps 30
    run 120 "$strata" record --quiet --force --level device -o "/tmp/pco-d-$round.strata" -- "$py" "$train" --steps 30
    run 120 "$strata" record --quiet --force --level device --gpu-pc-sampling -o "/tmp/pco-p-$round.strata" -- "$py" "$train" --steps 30
  done
fi

step "done"
ls -la "$out" >> "$log"
