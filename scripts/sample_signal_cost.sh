#!/usr/bin/env bash
# Per-sample cost of CPU sampling in the sampled threads (issue 15; docs/performance.md, "Per-sample
# cost in the sampled threads"): the part that neither sample.collector_cpu_ns (the sampling thread)
# nor sample.handler_ns (the SIGTRAP handler's own time) holds: the task-clock overflow interrupt,
# the user callchain walk, the ring write, the signal's delivery and sigreturn.
#
# A fixed compute-bound loop's work rate (iterations per thread-CPU second of the working threads;
# the sampling and writer threads are not in it) is measured in configurations interleaved in a
# shuffled order every round, many short runs:
#   none       bench/sample/signal_cost, no event
#   perf       the recorder's task-clock event at HZ, user callchain (perf_sampler.cc's attributes)
#   sigtrap    the same with sigtrap=1 and a handler that only counts its calls
#   pnone, pperf, psigtrap  the same three PAIRED (signal_cost.c): a sampled and an unsampled
#              worker at the same time, each pinned to its own CPU, the CPUs swapped every round;
#              the baseline is the unsampled worker of the same run (pnone: neither is sampled,
#              the two CPUs' difference: the floor). This is the figure that resolves a few us.
#   recoff     `strata record` (no sampling) around signal_cost none: the same preloads and threads
#   rec        `strata record --sample=HZ` around signal_cost none (the real recorder; a C program:
#              no Python, no SIGTRAP)
#   pyplain    a pure-Python loop at a fixed frame depth, plain
#   pyrecoff   the same under `strata record` without sampling
#   pyrec      the same under `strata record --sample=HZ` (SIGTRAP handler reading its stack)
# rec and pyrec are compared with recoff and pyrecoff: only the sampling differs (a Python loop's
# speed also moves with the preloads' change of the address layout).
# ns per sample = (CPU ns per iteration of the mode - of the baseline in the same round)
#                 x iterations of the mode / the loop's samples,
# the loop's samples being its threads' CPU time x HZ (the task clock samples once per period of
# thread CPU; the trace's sample.samples_taken also holds the interpreter's start-up and the other
# threads: its rate per loop CPU second is printed as a check),
# per round, then the median over rounds and a bootstrap 90% interval; pyrec also prints the
# handler's own ns per call (sample.handler_ns / sample.handler_calls of its trace) and the rest.
#
# Usage: scripts/sample_signal_cost.sh [BUILD_DIR] [ROUNDS] [SECONDS] [THREADS] [HZ]
#   defaults: build 15 1.0 1 999. THREADS > 1 only for the C modes (the Python loop has one thread).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-15}
seconds=${3:-1.0}
threads=${4:-1}
hz=${5:-999}
strata="$build/bin/strata"
cost="$build/bin/sample_signal_cost"
python=/usr/bin/python3
for f in "$strata" "$cost"; do
  [ -x "$f" ] || { echo "sample_signal_cost.sh: $f missing: build the strata_tool and sample_signal_cost targets" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The Python loop: a fixed amount of bytecode per call at DEPTH frames, its thread's CPU time.
cat >"$work/loop.py" <<'PY'
import sys, time
def down(depth, n):
    if depth == 0:
        s = 0
        for i in range(n):
            s += i * i
        return s
    return down(depth - 1, n) + 1
seconds, depth = float(sys.argv[1]), int(sys.argv[2])
cpu0 = time.thread_time_ns()
end = time.monotonic() + seconds
iterations = 0
while time.monotonic() < end:
    down(depth, 2000)
    iterations += 2000
print("loop", iterations, time.thread_time_ns() - cpu0)
PY

stat_of() {  # the sum of a stats key over the trace's processes, as `strata info` prints it
  "$strata" info "$1" | awk -v k="$2" '$3 == k {s += $4} END {print s + 0}'
}

# Prints "iterations cpu_ns samples handler_ns handler_calls base_iterations base_cpu_ns" for one
# run of a mode in round $2 (base_*: the paired modes' unsampled worker, else 0).
run() {
  local mode=$1 round=$2 out="$work/run.strata"
  rm -f "$out"
  case $mode in
    none | perf | sigtrap)
      "$cost" "$mode" "$threads" "$seconds" "$hz" | awk '{print $3, $4, $5, 0, 0, 0, 0}' ;;
    pnone | pperf | psigtrap)
      PAIRED=$((round % 2)) "$cost" "${mode#p}" 2 "$seconds" "$hz" | awk '{print $4, $5, $8, 0, 0, $6, $7}' ;;
    rec | recoff)
      local line sample=(--sample="$hz")
      [ "$mode" = recoff ] && sample=()
      line=$("$strata" record --quiet --level model "${sample[@]}" -o "$out" -- "$cost" none "$threads" "$seconds" "$hz")
      echo "$(awk '{print $3, $4}' <<<"$line") $(stat_of "$out" sample.samples_taken) 0 0 0 0" ;;
    pyplain)
      "$python" "$work/loop.py" "$seconds" 25 | awk '{print $2, $3, 0, 0, 0, 0, 0}' ;;
    pyrec | pyrecoff)
      local line sample=(--sample="$hz")
      [ "$mode" = pyrecoff ] && sample=()
      line=$("$strata" record --quiet --level model "${sample[@]}" -o "$out" -- "$python" "$work/loop.py" "$seconds" 25)
      echo "$(awk '{print $2, $3}' <<<"$line") $(stat_of "$out" sample.samples_taken)" \
        "$(stat_of "$out" sample.handler_ns) $(stat_of "$out" sample.handler_calls) 0 0" ;;
  esac
}

echo "load before: $(uptime)"
modes=(none perf sigtrap pnone pperf psigtrap recoff rec pyplain pyrecoff pyrec)
[ "$(nproc)" -ge 2 ] || modes=(none perf sigtrap recoff rec pyplain pyrecoff pyrec)
: >"$work/runs.tsv"
for ((r = 0; r < rounds; ++r)); do
  for mode in $(printf '%s\n' "${modes[@]}" | shuf); do echo "$r $mode $(run "$mode" "$r")" >>"$work/runs.tsv"; done
done
echo "load after: $(uptime)"
echo "$rounds rounds x ${seconds} s, $threads C thread(s), $hz Hz; modes in a shuffled order each round"
"$python" - "$work/runs.tsv" "$hz" <<'PY'
import random, statistics, sys
runs = {}  # mode -> {round: (iterations, cpu_ns, samples, handler_ns, handler_calls, base_it, base_cpu)}
for line in open(sys.argv[1]):
    r, mode, *v = line.split()
    runs.setdefault(mode, {})[int(r)] = tuple(float(x) for x in v)
rng = random.Random(15)
hz = float(sys.argv[2])

def boot90(xs):
    if len(xs) < 3:
        return float("nan"), float("nan")
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(2000))
    return meds[int(0.05 * len(meds))], meds[int(0.95 * len(meds)) - 1]

print(f"{'mode':<8} {'vs':<8} {'ns/iter':>9} {'samples/cpu-s':>13} {'ns/sample, median [90%]':>28} {'handler ns/call':>15}")
for mode, base in (("none", None), ("perf", "none"), ("sigtrap", "none"), ("pnone", "paired"), ("pperf", "paired"),
                   ("psigtrap", "paired"), ("recoff", "none"), ("rec", "recoff"), ("pyplain", None),
                   ("pyrecoff", "pyplain"), ("pyrec", "pyrecoff"), ("pyrec", "pyplain")):
    rs = runs.get(mode, {})
    if not rs:
        continue
    nspi = statistics.median(v[1] / v[0] for v in rs.values())
    rate = statistics.median(v[2] / v[1] * 1e9 for v in rs.values())
    line = f"{mode:<8} {base or '-':<8} {nspi:9.3f} {rate:13.1f}"
    if base:
        if base == "paired":  # the unsampled worker of the same run
            costs = [(v[1] / v[0] - v[6] / v[5]) * v[0] / (v[1] * hz / 1e9) for v in rs.values()]
        else:
            costs = [(v[1] / v[0] - runs[base][r][1] / runs[base][r][0]) * v[0] / (v[1] * hz / 1e9)
                     for r, v in rs.items() if r in runs[base]]
        lo, hi = boot90(costs)
        line += f" {statistics.median(costs):12.0f} [{lo:7.0f}, {hi:7.0f}]"
        calls = [v[3] / v[4] for v in rs.values() if v[4] > 0]
        if calls:
            line += f" {statistics.median(calls):15.0f}"
    print(line)
PY
