#!/usr/bin/env bash
# Iteration mining on real PyTorch training loops at full sizes (issue 12): every model of
# examples/pytorch/train_realistic.py, from 5 to 10,000 steps, with an evaluation pass and with
# gradient accumulation, recorded with `strata record --level layer` and mined with
# `strata iterations`; checks the exact step count, the flagged evaluation steps and that the
# sampled mining equals the exact one (--param sample_ops=0). The CI suite runs trimmed sizes
# (tests/python/test_iterations_realistic.py).
#
#   scripts/iterations_realistic.sh [BUILD_DIR]            (default build/)
#   STEPS="5 300 2000 10000" MODELS="cnn gru_mlp" scripts/iterations_realistic.sh
#
# Traces take ~0.7 KB per op (a 2,000-step GRU loop is ~0.4 M ops, ~250 MB): they are written to
# a temporary directory and removed one by one.
set -euo pipefail
BUILD=${1:-build}
STRATA=$BUILD/bin/strata
PY=/usr/bin/python3
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SCRIPT=$ROOT/examples/pytorch/train_realistic.py
MODELS=${MODELS:-"cnn lstm gru_mlp transformer cnn_lstm_transformer"}
STEPS=${STEPS:-"5 300 2000 10000"}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
[ -x "$STRATA" ] || { echo "$STRATA not built (ninja -C $BUILD strata_tool strata strata_torch)"; exit 2; }
$PY -c "import torch" 2>/dev/null || { echo "Debian's python3-torch is needed under $PY"; exit 2; }
echo "uptime: $(uptime)"
printf '%-22s %6s %5s %9s %6s %7s %8s %9s %9s\n' model steps accum found flags sampled ops record_s mine_s
fail=0
for model in $MODELS; do
  for steps in $STEPS; do
    # The heavier models stop at 2,000 steps unless asked (10,000 GRU steps are a ~1.2 GB trace).
    if [ "$steps" -gt 2000 ] && [ "$model" != cnn ] && [ -z "${ALL_SIZES:-}" ]; then continue; fi
    for accum in 1 2; do
      every=$(( steps >= 100 ? steps / 10 : 2 ))
      trace=$TMP/t.strata
      t0=$(date +%s.%N)
      ran=$("$STRATA" record --quiet --level layer -o "$trace" -- $PY "$SCRIPT" --model "$model" --steps "$steps" \
              --eval-every "$every" --grad-accum "$accum" | tail -1)
      t1=$(date +%s.%N)
      "$STRATA" analyze "$trace" --analysis iterations --format json > "$TMP/sampled.json"
      t2=$(date +%s.%N)
      "$STRATA" analyze "$trace" --analysis iterations --param sample_ops=0 --format json > "$TMP/exact.json"
      $PY - "$TMP/sampled.json" "$TMP/exact.json" "$ran" "$model" "$steps" "$accum" "$t0" "$t1" "$t2" <<'PYEOF' || fail=1
import json, sys
sampled, exact = (json.load(open(p)) for p in sys.argv[1:3])
ran = json.loads(sys.argv[3])
model, steps, accum = sys.argv[4], int(sys.argv[5]), sys.argv[6]
t0, t1, t2 = (float(x) for x in sys.argv[7:10])
s = sampled["iterations_summary"]
found = s["rows"][0][s["columns"].index("iterations")] if len(s["rows"]) == 1 else -1
flagged = [r[0] for r in sampled["iterations"]["rows"] if "extra_" in (r[-1] or "")]
same = sampled["iterations"]["rows"] == exact["iterations"]["rows"]
ops = next((n.split(": ")[1].split(" layer ops")[0] for n in s["notes"] if " layer ops mined" in n), "?")
ok = found == steps and flagged == ran["eval_after"] and same
print(f"{model:22s} {steps:6d} {accum:>5s} {found:9d} {'ok' if flagged == ran['eval_after'] else 'WRONG':>6s} "
      f"{'same' if same else 'DIFF':>7s} {ops:>8s} {t1 - t0:9.1f} {t2 - t1:9.1f}{'' if ok else '  <- FAIL'}")
sys.exit(0 if ok else 1)
PYEOF
      rm -f "$trace"
    done
  done
done
echo "uptime: $(uptime)"
exit $fail
