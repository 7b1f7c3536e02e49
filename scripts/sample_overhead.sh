#!/usr/bin/env bash
# Overhead of CPU sampling on resnet18 batch-1 CPU inference (issue 15 acceptance: <= 1% at 99 Hz,
# <= 3% at 999 Hz): the same script run plain, under `strata record --level model`, with
# --sample=99 / --sample=999, and for comparison under `perf record -F 999 -g` and Austin at ~99 and
# ~999 Hz (when installed), rounds interleaved so machine load drifts alike over all modes.
#
# Three estimates, printed side by side (docs/performance.md says which answers the issue and why):
#  1. End to end, per mode over all runs: median wall ms and process CPU ms per inference (all
#     threads: the sampler's and the kernel's work for the process included) and their ratio to
#     plain; the minimum-of-runs ratio (min mode / min plain: the least-disturbed run of each).
#  2. Paired: per round, mode / plain of the same round (wall and CPU); the median of those ratios
#     and a bootstrap 90% interval over rounds. Rounds share load drift, so pairing cancels part of it.
#  3. Decomposed, for Strata's sampling modes, from what the collector accounts itself (the trace's
#     sample.collector_cpu_ns and sample.samples_taken, docs/trace-format.md): collector CPU over the
#     rest of the process's CPU, independent of how fast each run happened to be; and samples_taken x
#     the per-sample cost bench/sample measures in this same session, as a cross-check of it. Neither
#     includes the kernel's work for each sample in the sampled thread (the interrupt, the callchain
#     walk): that part is only in the end-to-end and paired figures. The SIGTRAP handler's own time in
#     the sampled threads (sample.handler_ns) is added to the collector's: the accounted share; with
#     KERNEL_NS (the kernel's + signal's ns per sample, scripts/sample_signal_cost.sh) also
#     samples x KERNEL_NS: the accounted total.
#  4. PAIRED=concurrent: instead of 1-3, plain and --sample=99 / --sample=999 run AT THE SAME TIME,
#     each pinned to its own core (taskset; the sampled process's sampling and writer threads share
#     its core), the cores swapped every round, one 99 Hz and one 999 Hz pair per round: per pair
#     the ratio of process CPU per inference (all threads) and of median wall per inference; the
#     median ratio over pairs with a bootstrap 90% interval. Machine load that changes during a
#     run hits both processes of a pair; a core's own speed cancels over the swaps.
# Each run also reports the CPU of the tools outside the process (strata record's parent, perf,
# Austin: all CPU of the run's process tree minus the Python process's own).
#
# Usage: scripts/sample_overhead.sh [BUILD_DIR] [ROUNDS] [ITERATIONS]
#   AUSTIN=/path/to/austin  Austin >= 3 (Debian's austin 1.0.1 cannot read Python 3.11: skipped, said)
#   MODES="plain sample999" run only these modes (plain is always added: every ratio needs it)
#   BASELINE=/path/to/other/build  adds modes base99/base999: --sample=99/999 with that build's strata
#     (bin/ and lib/ of e.g. main's build), interleaved with this build's in every round
#   PAIRED=concurrent  mode 4 (ROUNDS pairs at each rate; needs 2 CPUs and taskset);
#     CONCURRENT_BASE=model: the baseline runs under `strata record --level model` (no sampling)
#     CONCURRENT_FLOOR=1: each round also runs, the same way against plain, the floor under any
#     sampler at each rate: the workload with a bare task-clock sampling event (no ring, no reader,
#     no unwinding: the interrupts alone) and, at 999 Hz, with a thread that only wakes 999 times a
#     second (bench/sample/interrupt_floor.c, preloaded; rows floor99, floor999, wake999)
#   KERNEL_NS=N  the kernel's and the signal's ns per sample in the sampled thread, for the total
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-5}
iterations=${3:-40}
strata="$build/bin/strata"
python=/usr/bin/python3
work=$(mktemp -d)
# Every process this script starts in the background gets its own process group (setsid), listed in
# $work/groups: killed or interrupted, the script takes them all down with it (a background job of a
# non-interactive shell ignores SIGINT, and a plain kill of the script reaches only the script: the
# pairs of PAIRED=concurrent kept running as orphans). SIGKILL of the script cannot be trapped.
cleanup() {
  trap - EXIT INT TERM HUP
  [ -s "$work/pair.pid" ] && { kill "$(cat "$work/pair.pid")" 2>/dev/null || true; }  # the pair's waiting subshell
  if [ -s "$work/groups" ]; then
    while read -r group; do kill -TERM -- "-$group" 2>/dev/null || true; done <"$work/groups"
    sleep 0.5
    while read -r group; do kill -KILL -- "-$group" 2>/dev/null || true; done <"$work/groups"
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM HUP
# Starts "$@" in the background as the leader of a new process group (a background child of this
# non-interactive shell is no group leader, so setsid(1) execs in place: $! is the group's id).
spawn_group() {
  setsid "$@" &
  echo "$!" >>"$work/groups"
}
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
# Wall time per inference (what a user sees; noisy on a shared machine), the process's CPU time per
# inference (every thread's, the sampler's and the kernel's work for it included), and the process's
# whole CPU time (what the collector's own accounting is compared with).
print("median_ms", statistics.median(times) * 1e3)
print("cpu_ms", cpu / n * 1e3)
print("proc_cpu_ms", time.process_time() * 1e3)
PY

austin=${AUSTIN:-$(command -v austin || true)}
austin_note=""
if [ -n "$austin" ]; then
  # Austin 1.x predates Python 3.11's interpreter layout: it times out finding the interpreter state.
  if ! "$austin" -i 10000 -o "$work/austin_probe" "$python" -c 'import time; t = time.time()
while time.time() - t < 0.3: pass' >/dev/null 2>"$work/austin_probe.err" || ! grep -q '^P' "$work/austin_probe"; then
    austin_note="austin ($("$austin" -V 2>&1 | head -1)) gave no samples of $python ($(head -1 "$work/austin_probe.err")): Austin modes skipped (set AUSTIN to an Austin >= 3)"
    austin=""
  fi
fi
all_modes=(plain model sample99 sample999)
command -v perf >/dev/null && all_modes+=(perf999)
[ -n "$austin" ] && all_modes+=(austin99 austin999)
if [ -n "${MODES:-}" ]; then
  read -r -a all_modes <<<"plain ${MODES//plain/}"
fi
if [ -n "${BASELINE:-}" ]; then
  BASELINE=$(cd "$BASELINE" && pwd)
  all_modes+=(base99 base999)
fi

# Prints "wall_ms cpu_ms proc_cpu_ms tree_cpu_ms collector_cpu_ns samples_taken handler_ns" for one run.
run() {
  local mode=$1 out="$work/$1.strata" cmd
  rm -f "$out" "$work/perf.data" "$work/austin.txt"
  local infer=("$python" "$work/infer.py" "$iterations")
  case $mode in
    plain) cmd=("${infer[@]}") ;;
    model) cmd=("$strata" record --quiet --level model -o "$out" -- "${infer[@]}") ;;
    sample99) cmd=("$strata" record --quiet --level model --sample=99 -o "$out" -- "${infer[@]}") ;;
    sample999) cmd=("$strata" record --quiet --level model --sample=999 -o "$out" -- "${infer[@]}") ;;
    base99) cmd=("$BASELINE/bin/strata" record --quiet --level model --sample=99 -o "$out" -- "${infer[@]}") ;;
    base999) cmd=("$BASELINE/bin/strata" record --quiet --level model --sample=999 -o "$out" -- "${infer[@]}") ;;
    perf999) cmd=(perf record -q -F 999 -g -o "$work/perf.data" -- "${infer[@]}") ;;
    austin99) cmd=("$austin" -i 10101us -o "$work/austin.txt" "${infer[@]}") ;;
    austin999) cmd=("$austin" -i 1001us -o "$work/austin.txt" "${infer[@]}") ;;
  esac
  # bash's `time` on a subshell: user + system CPU of the whole process tree (the tool's included).
  local TIMEFORMAT='tree_cpu_s %U %S'
  { time "${cmd[@]}" >"$work/run.out" 2>"$work/run.err"; } 2>"$work/time.out"
  local collector=- taken=- handler=-
  if [[ $mode == sample* || $mode == base* ]]; then
    "$strata" info "$out" >"$work/info.txt"
    collector=$(awk '$3 == "sample.collector_cpu_ns" {s += $4} END {print s + 0}' "$work/info.txt")
    taken=$(awk '$3 == "sample.samples_taken" {s += $4} END {print s + 0}' "$work/info.txt")
    handler=$(awk '$3 == "sample.handler_ns" {s += $4} END {print s + 0}' "$work/info.txt")
  fi
  awk -v collector="$collector" -v taken="$taken" -v handler="$handler" -v tf="$work/time.out" '
    /^median_ms/ {w = $2} /^cpu_ms/ {c = $2} /^proc_cpu_ms/ {p = $2}
    END {while ((getline line < tf) > 0) if (split(line, t) == 3 && t[1] == "tree_cpu_s") tree = (t[2] + t[3]) * 1e3
         print w, c, p, tree, collector, taken, handler}' "$work/run.out"
}

# Mode 4: plain and the sampled mode at the same time, each on its own core. Prints per run
# "wall_ms cpu_ms proc_cpu_ms collector_ns taken handler_ns" of the plain one, then of the other.
# KIND: sample (strata record --sample=HZ), floor or wake (interrupt_floor.c preloaded, against plain).
concurrent_pair() {
  local hz=$1 plain_cpu=$2 sampled_cpu=$3 kind=${4:-sample} out="$work/pair.strata"
  rm -f "$out" "$work/base.strata"
  local infer=("$python" "$work/infer.py" "$iterations") base=() sampled=()
  # CONCURRENT_BASE=model: the baseline is recorded too (--level model, no sampling): the ratio is
  # the sampler's alone, without the recording's own cost. The floors are always against plain.
  [ "${CONCURRENT_BASE:-plain}" = model ] && [ "$kind" = sample ] &&
    base=("$strata" record --quiet --level model -o "$work/base.strata" --)
  case $kind in
    sample) sampled=("$strata" record --quiet --level model --sample="$hz" -o "$out" --) ;;
    floor) sampled=(env LD_PRELOAD="$floor_lib" STRATA_FLOOR_PERF_HZ="$hz") ;;
    wake) sampled=(env LD_PRELOAD="$floor_lib" STRATA_FLOOR_WAKE_HZ="$hz") ;;
  esac
  spawn_group taskset -c "$plain_cpu" "${base[@]}" "${infer[@]}" >"$work/plain.out" 2>"$work/plain.err"
  local plain_pid=$!
  spawn_group taskset -c "$sampled_cpu" "${sampled[@]}" "${infer[@]}" >"$work/sampled.out" 2>"$work/sampled.err"
  local sampled_pid=$!
  local plain_rc=0 sampled_rc=0
  wait "$plain_pid" || plain_rc=$?
  wait "$sampled_pid" || sampled_rc=$?
  if [ "$plain_rc" != 0 ] || [ "$sampled_rc" != 0 ]; then  # >128: killed by signal rc-128
    echo "sample_overhead.sh: $kind pair at $hz Hz: baseline exited $plain_rc, the other $sampled_rc" >&2
    cat "$work/plain.err" "$work/sampled.err" >&2
    return 1
  fi
  : >"$work/groups"  # both groups ended: nothing left to kill (their ids may be reused)
  if grep -q '^interrupt_floor:' "$work/sampled.err"; then cat "$work/sampled.err" >&2; return 1; fi
  local stats="0 0 0"
  if [ "$kind" = sample ]; then
    "$strata" info "$out" >"$work/info.txt"
    stats=$(awk '$3 == "sample.collector_cpu_ns" {c += $4} $3 == "sample.samples_taken" {t += $4}
                 $3 == "sample.handler_ns" {h += $4} END {print c + 0, t + 0, h + 0}' "$work/info.txt")
  fi
  for f in plain sampled; do
    awk '/^median_ms/ {w = $2} /^cpu_ms/ {c = $2} /^proc_cpu_ms/ {p = $2} END {printf "%s %s %s ", w, c, p}' "$work/$f.out"
  done
  echo "$stats"
}

if [ "${PAIRED:-}" = concurrent ]; then
  command -v taskset >/dev/null || { echo "sample_overhead.sh: PAIRED=concurrent needs taskset (util-linux)" >&2; exit 1; }
  [ "$(nproc)" -ge 2 ] || { echo "sample_overhead.sh: PAIRED=concurrent needs 2 CPUs" >&2; exit 1; }
  pair_kinds=("99 sample" "999 sample")
  if [ -n "${CONCURRENT_FLOOR:-}" ]; then
    floor_lib="$build/lib/libsample_interrupt_floor.so"
    [ -f "$floor_lib" ] || { echo "sample_overhead.sh: CONCURRENT_FLOOR needs $floor_lib (build target sample_interrupt_floor)" >&2; exit 1; }
    pair_kinds+=("99 floor" "999 floor" "999 wake")
  fi
  echo "load before: $(uptime)"
  : >"$work/pairs.tsv"
  for ((r = 0; r < rounds; ++r)); do
    for pk in "${pair_kinds[@]}"; do  # the plain process takes core r%2, the other one the other
      read -r hz kind <<<"$pk"
      # In the background and waited for: a signal interrupts `wait` at once and the trap runs (a
      # foreground command would be waited out first).
      concurrent_pair "$hz" $((r % 2)) $((1 - r % 2)) "$kind" >"$work/pair.txt" &
      echo "$!" >"$work/pair.pid"
      wait "$!" || { echo "sample_overhead.sh: a run failed" >&2; exit 1; }
      pair=$(cat "$work/pair.txt")
      label=$hz
      [ "$kind" = sample ] || label=$kind$hz
      echo "$label $r $((r % 2)) $pair" >>"$work/pairs.tsv"
    done
  done
  echo "load after: $(uptime)"
  echo "concurrent pairs: $rounds per rate x $iterations inferences; baseline (${CONCURRENT_BASE:-plain}) on core r%2, sampled on the other"
  "$python" - "$work/pairs.tsv" "${KERNEL_NS:-0}" <<'PY'
import random, statistics, sys
rng = random.Random(15)
kernel_ns = float(sys.argv[2])
def boot90(xs):
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(2000))
    return meds[int(0.05 * len(meds))], meds[int(0.95 * len(meds)) - 1]
pairs = {}
for line in open(sys.argv[1]):
    hz, r, core, pw, pc, pp, sw, sc, sp, coll, taken, handler = line.split()
    pairs.setdefault(hz, []).append(tuple(float(x) for x in (pw, pc, pp, sw, sc, sp, coll, taken, handler)))
for hz, ps in sorted(pairs.items(), key=lambda kv: (int("".join(c for c in kv[0] if c.isdigit())), not kv[0].isdigit(), kv[0])):
    cpu = [p[4] / p[1] for p in ps]
    wall = [p[3] / p[0] for p in ps]
    if not hz.isdigit():  # a floor: the interruptions alone, nothing accounted
        print(f"{hz:>9}  {len(ps)} pairs  CPU/inference x{statistics.median(cpu):.4f} "
              f"[{boot90(cpu)[0]:.4f}, {boot90(cpu)[1]:.4f}]  wall/inference x{statistics.median(wall):.4f} "
              f"[{boot90(wall)[0]:.4f}, {boot90(wall)[1]:.4f}]  (against plain)")
        continue
    # Accounted: the sampling thread + writer plugin, the handler; over the rest of the process.
    acc = [(p[6] + p[8]) / 1e6 / (p[5] - (p[6] + p[8]) / 1e6) for p in ps]
    line = (f"{hz:>6} Hz  {len(ps)} pairs  CPU/inference x{statistics.median(cpu):.4f} "
            f"[{boot90(cpu)[0]:.4f}, {boot90(cpu)[1]:.4f}]  wall/inference x{statistics.median(wall):.4f} "
            f"[{boot90(wall)[0]:.4f}, {boot90(wall)[1]:.4f}]  accounted {100 * statistics.median(acc):.2f}%"
            f"  samples {statistics.median([p[7] for p in ps]):.0f}")
    if kernel_ns > 0:
        tot = [(p[6] + p[8] + p[7] * kernel_ns) / 1e6 / (p[5] - (p[6] + p[8] + p[7] * kernel_ns) / 1e6) for p in ps]
        line += f"  with kernel {100 * statistics.median(tot):.2f}%"
    print(line)
PY
  exit 0
fi

# bench/sample's per-sample cost of the sampling thread (frame-pointer callchain), this session.
bench_ns=""
if [ -x "$build/bin/sample_cost_bench" ]; then
  bench_ns=$("$build/bin/sample_cost_bench" --benchmark_filter=BM_SampleFpCallchain --benchmark_min_time=0.5 \
    --benchmark_format=csv 2>/dev/null | awk -F, '/BM_SampleFpCallchain/ {printf "%.0f\n", $12 * 1e9; exit}')
fi

echo "load before: $(uptime)"
[ -n "$austin_note" ] && echo "$austin_note"
: >"$work/runs.tsv"
for ((r = 0; r < rounds; ++r)); do
  for mode in "${all_modes[@]}"; do echo "$r $mode $(run "$mode")" >>"$work/runs.tsv"; done
done
echo "load after: $(uptime)"
echo "modes: ${all_modes[*]}; $rounds rounds x $iterations inferences; bench/sample fp_callchain: ${bench_ns:-n/a} ns/sample"
"$python" - "$work/runs.tsv" "${bench_ns:-0}" "${KERNEL_NS:-0}" <<'PY'
import random, statistics, sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
bench_ns = float(sys.argv[2])
kernel_ns = float(sys.argv[3])
runs = {}  # mode -> [(round, wall, cpu, proc_cpu, tree_cpu, collector_ns, taken, handler_ns)]
for r, mode, wall, cpu, proc, tree, coll, taken, handler in rows:
    num = lambda s: float(s) if s not in ("-", "") else None
    runs.setdefault(mode, []).append((int(r), float(wall), float(cpu), float(proc), num(tree), num(coll), num(taken),
                                      num(handler)))
plain = {r[0]: r for r in runs["plain"]}
rng = random.Random(15)

def boot90(ratios):
    if len(ratios) < 3:
        return float("nan"), float("nan")
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
    return meds[int(0.05 * len(meds))], meds[int(0.95 * len(meds)) - 1]

print("\n1-2. end to end and paired (ratios to plain; paired = per-round mode/plain, median [bootstrap 90%])")
print(f"{'mode':<10} {'wall ms':>8} {'x med':>7} {'x min':>7} {'x paired [90%]':>24} | {'cpu ms':>7} {'x med':>7} {'x min':>7} {'x paired [90%]':>24} | tool cpu ms")
for mode, rs in runs.items():
    wall = [x[1] for x in rs]; cpu = [x[2] for x in rs]
    pw = [x[1] / plain[x[0]][1] for x in rs if x[0] in plain]
    pc = [x[2] / plain[x[0]][2] for x in rs if x[0] in plain]
    bw, bc = boot90(pw), boot90(pc)
    pwall = [x[1] for x in runs["plain"]]; pcpu = [x[2] for x in runs["plain"]]
    tool = [x[4] - x[3] for x in rs if x[4] is not None]
    print(f"{mode:<10} {statistics.median(wall):8.2f} {statistics.median(wall) / statistics.median(pwall):7.3f} "
          f"{min(wall) / min(pwall):7.3f} {statistics.median(pw):7.3f} [{bw[0]:6.3f}, {bw[1]:6.3f}]   | "
          f"{statistics.median(cpu):7.2f} {statistics.median(cpu) / statistics.median(pcpu):7.3f} "
          f"{min(cpu) / min(pcpu):7.3f} {statistics.median(pc):7.3f} [{bc[0]:6.3f}, {bc[1]:6.3f}]   | "
          f"{statistics.median(tool) if tool else float('nan'):8.1f}")

print("\n3. decomposed (the collector's own accounting, per run): collector CPU / the rest of the process's CPU;"
      "\n   samples x bench per-sample cost / the same; medians over runs [min, max]")
for mode, rs in runs.items():
    acc = [x for x in rs if x[5] is not None and x[3] > 0]
    if not acc:
        continue
    share = [x[5] / 1e6 / (x[3] - x[5] / 1e6) for x in acc]
    per_sample = [x[5] / x[6] for x in acc if x[6]]
    line = (f"{mode:<10} collector {100 * statistics.median(share):6.2f}% [{100 * min(share):.2f}, {100 * max(share):.2f}]"
            f"  samples {statistics.median([x[6] for x in acc]):8.0f}  collector ns/sample {statistics.median(per_sample) if per_sample else float('nan'):8.0f}")
    if bench_ns > 0:
        est = [x[6] * bench_ns / 1e6 / (x[3] - x[5] / 1e6) for x in acc]
        line += f"  samples x bench {100 * statistics.median(est):6.3f}%"
    # Accounted: collector + the SIGTRAP handler's own time (+ samples x KERNEL_NS when given).
    own = [x[5] + (x[7] or 0) for x in acc]
    line += f"  +handler {100 * statistics.median(o / 1e6 / (x[3] - o / 1e6) for o, x in zip(own, acc)):6.2f}%"
    if kernel_ns > 0:
        tot = [o + x[6] * kernel_ns for o, x in zip(own, acc)]
        line += f"  +kernel {100 * statistics.median(t / 1e6 / (x[3] - t / 1e6) for t, x in zip(tot, acc)):6.2f}%"
    print(line)
PY
