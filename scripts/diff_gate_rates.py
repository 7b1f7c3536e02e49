#!/usr/bin/env python3
"""The false-alarm and detection rates of `strata diff --fail-on-regression` (docs/diff.md, "The gate's
rates"), on real recordings of examples/pytorch/diff_demo.py:

- false alarms: PAIRS pairs of recordings of the same configuration, each pair recorded one after the
  other (as a CI job records BASE, then NEW); each pair diffed once (A against B) at the default
  threshold and at each of --thresholds; the largest item excess and the step excess of each pair say
  how close to the threshold the noise came;
- detection: PAIRS pairs of a base recording and one with a planted regression: an existing item made
  slower by 10% of the step (`slow_head`: busy work in the classifier_head scope, sized from the base
  recordings' median step), an added 128 x 128 matmul (`added_op`), the extra matmul's shapes changed
  from 32 to 128 (`shape`), the DataLoader's work doubled (`loader_x2`), and a kernel of 30% of the device time slowed
  by 35% in generated Kineto GPU pairs (`kineto_kernel`, scripts/gen_kineto_steps.py); detected when the gate
  fails (exit 1) with the planted item ranked first.

The machine's load (os.getloadavg, nproc) is printed at the start and the end. A run of the full size
(--pairs 20) takes about 9 minutes on the shared 2-core machine at load 6; tests/python/test_diff.py runs a
trimmed version. --recordings K records K recordings a side (pooled by --base/--new); --default-malloc
records without fixing glibc's malloc thresholds; --reuse diffs the recordings of an earlier run with --out
again. Usage:
    /usr/bin/python3 scripts/diff_gate_rates.py --strata build/bin/strata [--pairs 20] [--out DIR]
        [--recordings K] [--default-malloc] [--skip-detection] [--plants slow_head,added_op,...] [--reuse]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DEMO = os.path.join(REPO, "examples", "pytorch", "diff_demo.py")
sys.path.insert(0, os.path.join(REPO, "scripts"))
import gen_kineto_steps  # noqa: E402

PLANTS = {
    # name: (environment of BASE, of NEW, what ranks first: (name, change))
    "slow_head": ({}, {"STRATA_DEMO_SLOW_HEAD_MS": None}, ("classifier_head", "time")),
    "added_op": ({}, {"STRATA_DEMO_EXTRA_MM": "128"}, ("aten::mm", "added")),
    "shape": ({"STRATA_DEMO_EXTRA_MM": "32"}, {"STRATA_DEMO_EXTRA_MM": "128"}, ("aten::mm", "shapes changed")),
    "loader_x2": ({}, {"STRATA_DEMO_LOADER_MS": "2"}, ("enumerate(DataLoader)#", "time")),
}


# glibc's dynamic mmap and trim thresholds put each process of the demo, for its whole life, in one of two
# regimes: 1 MB tensors reused from the heap, or page-faulted afresh on every step (the first convolution
# 0.3 or 0.9 ms, its ReLU 0.03 or 0.4 ms; docs/diff.md, "Limits"). `strata record` fixes them by default
# (--malloc pinned, src/cli/malloc_settings.h); --default-malloc records with `--malloc default` instead.
FIXED_MALLOC = True
REUSE = False  # --reuse: a recording already in --out is diffed again, not recorded again


def record(strata, path, env_extra, iterations, batch):
    if REUSE and os.path.exists(path):
        return path
    env = dict(os.environ, **env_extra)
    malloc = "pinned" if FIXED_MALLOC else "default"
    r = subprocess.run([strata, "record", "--quiet", "--force", "--level", "layer", "--malloc", malloc, "-o", path,
                        "--", sys.executable, DEMO,
                        "--iterations", str(iterations), "--batch", str(batch)], env=env, capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"recording {path} failed: {r.stderr[-2000:]}")
    return path


def side(strata, tmp, name, env_extra, args):
    """The recordings of one side: --recordings of them, one after the other."""
    return [record(strata, os.path.join(tmp, f"{name}{k}.strata"), env_extra, args.iterations, args.batch)
            for k in range(args.recordings)]


def diff(strata, base, new, *extra):
    files = ([base, new] if isinstance(base, str) else ["--base", *base, "--new", *new])
    r = subprocess.run([strata, "diff", *files, "--format", "json", "--top", "1000000", "--fail-on-regression",
                        *extra], capture_output=True, text=True, timeout=600)
    if r.returncode not in (0, 1):
        raise SystemExit(f"diff {base} {new} exited {r.returncode}: {r.stderr}")
    tables = json.loads(r.stdout)
    rows = {}
    for name in ("totals", "changes", "device_changes"):
        if name in tables:
            cols = tables[name]["columns"]
            rows[name] = [dict(zip(cols, row)) for row in tables[name]["rows"]]
    return r.returncode, rows


def top_item(rows, device=False):
    items = rows.get("device_changes" if device else "changes", [])
    return items[0] if items else None


def median_step_ms(strata, path):
    _, rows = diff(strata, path, path)
    return rows["totals"][0]["base_ms"]


def false_alarms(args, tmp, thresholds):
    alarms = {t: 0 for t in thresholds}
    reverse = 0
    closest = []
    for p in range(args.pairs):
        a = side(args.strata, tmp, f"same{p}a", {}, args)
        b = side(args.strata, tmp, f"same{p}b", {}, args)
        for t in thresholds:
            code, rows = diff(args.strata, a, b, "--threshold", str(t))
            alarms[t] += code == 1
            if t == args.threshold:
                item = top_item(rows)
                gate = max((r["gate_pct"] for r in rows.get("changes", [])), default=0.0)
                closest.append((rows["totals"][0]["excess_pct"], item["excess_pct"] if item else 0.0,
                                item["name"] if item else "", code, gate))
        reverse += diff(args.strata, b, a)[0] == 1
        print(f"  same-configuration pair {p + 1}: step excess {closest[-1][0]:+.2f}%, largest item "
              f"{closest[-1][2]} {closest[-1][1]:+.2f}% of the step, largest gate_pct {closest[-1][4]:+.2f}%, "
              f"exit {closest[-1][3]}", flush=True)
    return alarms, reverse, closest


def detections(args, tmp, slow_ms):
    out = {}
    for plant, (base_env, new_env, (first, change)) in PLANTS.items():
        if args.plants and plant not in args.plants.split(","):
            continue
        new_env = {k: (v if v is not None else f"{slow_ms:.3f}") for k, v in new_env.items()}
        detected = ranked = 0
        for p in range(args.pairs):
            a = side(args.strata, tmp, f"{plant}{p}a", base_env, args)
            b = side(args.strata, tmp, f"{plant}{p}b", new_env, args)
            code, rows = diff(args.strata, a, b)
            item = top_item(rows)
            is_first = bool(item) and item["name"].startswith(first) and item["change"] == change
            detected += code == 1 and is_first
            ranked += is_first
            if code != 1 or not is_first:
                print(f"  {plant} pair {p + 1}: exit {code}, first {item and item['name']} {item and item['change']} "
                      f"{item and item['excess_pct']}", flush=True)
        out[plant] = (detected, ranked)
        print(f"  {plant}: detected {detected}/{args.pairs}, ranked first {ranked}/{args.pairs}", flush=True)
    if args.plants and "kineto_kernel" not in args.plants.split(","):
        return out
    detected = ranked = 0
    for p in range(args.pairs):
        a, b = os.path.join(tmp, f"kineto{p}a.json"), os.path.join(tmp, f"kineto{p}b.json")
        gen_kineto_steps.write_pair(a, b, seed=1000 + p, slow_kernel=gen_kineto_steps.PLANTED_KERNEL, slow=1.35)
        code, rows = diff(args.strata, a, b)
        item = top_item(rows, device=True)
        is_first = bool(item) and item["name"] == gen_kineto_steps.PLANTED_KERNEL
        detected += code == 1 and is_first
        ranked += is_first
    out["kineto_kernel"] = (detected, ranked)
    print(f"  kineto_kernel: detected {detected}/{args.pairs}, ranked first {ranked}/{args.pairs}", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--strata", default=os.path.join(REPO, "build", "bin", "strata"))
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threshold", type=float, default=5.0, help="the default threshold of strata diff")
    ap.add_argument("--thresholds", default="2,3,5,10")
    ap.add_argument("--default-malloc", action="store_true",
                    help="record with glibc's dynamic malloc thresholds (strata record --malloc default)")
    ap.add_argument("--skip-detection", action="store_true", help="measure the false alarms only")
    ap.add_argument("--plants", help="comma-separated plants to measure (default: all)")
    ap.add_argument("--recordings", type=int, default=1, help="recordings a side, pooled (default 1)")
    ap.add_argument("--out", help="keep the recordings here (default: a temporary folder, removed)")
    ap.add_argument("--reuse", action="store_true",
                    help="diff the recordings an earlier run left in --out instead of recording them again "
                         "(a changed gate measured on the same recordings)")
    args = ap.parse_args()
    thresholds = sorted({float(t) for t in args.thresholds.split(",")} | {args.threshold})
    global FIXED_MALLOC, REUSE
    FIXED_MALLOC = not args.default_malloc
    REUSE = args.reuse
    if REUSE and not args.out:
        ap.error("--reuse needs --out")
    print(f"malloc thresholds: {'strata record --malloc pinned (its default)' if FIXED_MALLOC else 'glibc defaults (dynamic)'}")
    print(f"load at start: {os.getloadavg()} on {os.cpu_count()} CPUs; {args.recordings} recording(s) a side",
          flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.out or scratch
        os.makedirs(tmp, exist_ok=True)
        step_ms = median_step_ms(args.strata, record(args.strata, os.path.join(tmp, "sizing.strata"), {},
                                                     args.iterations, args.batch))
        slow_ms = 0.10 * step_ms
        print(f"median step {step_ms:.3f} ms: slow_head plants {slow_ms:.3f} ms (10% of the step)", flush=True)
        alarms, reverse, closest = false_alarms(args, tmp, thresholds)
        found = {} if args.skip_detection else detections(args, tmp, slow_ms)
    print(f"load at end: {os.getloadavg()} on {os.cpu_count()} CPUs")
    print(f"\nfalse alarms over {args.pairs} same-configuration pairs (A against B):")
    for t in thresholds:
        print(f"  --threshold {t:g}: {alarms[t]}/{args.pairs}")
    print(f"  reverse direction (B against A) at {args.threshold:g}: {reverse}/{args.pairs}")
    items = sorted(c[1] for c in closest)
    steps = sorted(c[0] for c in closest)
    gates = sorted(c[4] for c in closest)
    print(f"  largest item excess per pair: median {items[len(items) // 2]:+.2f}%, max {items[-1]:+.2f}% of the step")
    print(f"  largest gate_pct per pair (what the gate reads): median {gates[len(gates) // 2]:+.2f}%, "
          f"max {gates[-1]:+.2f}% of the step")
    print(f"  step excess per pair: min {steps[0]:+.2f}%, median {steps[len(steps) // 2]:+.2f}%, max {steps[-1]:+.2f}%")
    print(f"detection over {args.pairs} pairs each (gate fails, planted item ranked first):")
    for plant, (detected, ranked) in found.items():
        print(f"  {plant}: {detected}/{args.pairs} (ranked first {ranked}/{args.pairs})")
    ok = alarms[args.threshold] <= max(1, args.pairs // 20) and all(d >= 0.95 * args.pairs for d, _ in found.values())
    print(f"goals (false alarms <= {max(1, args.pairs // 20)}, detection >= 95%): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
