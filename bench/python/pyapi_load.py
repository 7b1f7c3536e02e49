"""Load time of strata.load for a large trace (docs/python-api.md quotes its output).

    STRATA_BUILD_DIR=$PWD/build /usr/bin/python3 bench/python/pyapi_load.py [--spans 1000000] [--keep DIR]

Records a trace of N spans with the span API (strata.start: a tree of `step` spans, each with three
`op<k>` children, every op with two attributes), then times, each in a fresh process (no cache):
strata.load + .spans, + .attributes, trace.analysis("op_stats"); and for comparison `strata analyze
--analysis op_stats --format csv` and `strata export --format csv` read back with pandas.read_csv
(the route without this API). Prints one line per measurement.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

BUILD = os.path.abspath(os.environ.get("STRATA_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build")))
PKG = os.path.join(BUILD, "lib", "python")
STRATA = os.path.join(BUILD, "bin", "strata")

MAKE = """
import strata, sys
n = int(sys.argv[2])
strata.start(sys.argv[1], "layer")
for i in range(n // 4):
    with strata.span("step", level="model"):
        for k in range(3):
            with strata.span(f"op{k + 3 * (i % 17)}", level="layer", index=i, kind="matmul"):
                pass
strata.stop()
"""

TIMED = """
import sys, time
t0 = time.perf_counter()
import strata
trace = strata.load(sys.argv[1])
spans = trace.spans
t1 = time.perf_counter()
attrs = trace.attributes
t2 = time.perf_counter()
table = trace.analysis("op_stats")
t3 = time.perf_counter()
print(f"strata.load + .spans: {t1 - t0:.2f} s ({len(spans)} rows, {spans.memory_usage(deep=False).sum() / 2**20:.0f} MiB)")
print(f".attributes: {t2 - t1:.2f} s ({len(attrs)} rows)")
print(f".analysis('op_stats'): {t3 - t2:.2f} s ({len(table)} rows)")
"""

CSV_ROUTE = """
import sys, time, io, subprocess
import pandas as pd
t0 = time.perf_counter()
out = subprocess.run([sys.argv[2], "export", sys.argv[1], "--format", "csv"], capture_output=True, check=True).stdout
df = pd.read_csv(io.BytesIO(out))
print(f"strata export --format csv + pandas.read_csv: {time.perf_counter() - t0:.2f} s ({len(df)} rows)")
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spans", type=int, default=1_000_000)
    ap.add_argument("--keep", help="write the trace here and keep it")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=PKG)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(args.keep or tmp, "big.strata")
        if not os.path.exists(path):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", MAKE, path, str(args.spans)], env=env, check=True)
            print(f"recorded {args.spans} spans in {time.perf_counter() - t0:.1f} s: {os.path.getsize(path) / 2**20:.0f} MiB")
        print(f"load average: {os.getloadavg()[0]:.1f}")
        subprocess.run([sys.executable, "-c", TIMED, path], env=env, check=True)
        t0 = time.perf_counter()
        subprocess.run([STRATA, "analyze", path, "--analysis", "op_stats", "--format", "csv"], check=True,
                       stdout=subprocess.DEVNULL)
        print(f"strata analyze --analysis op_stats: {time.perf_counter() - t0:.2f} s")
        subprocess.run([sys.executable, "-c", CSV_ROUTE, path, STRATA], env=env, check=True)


if __name__ == "__main__":
    main()
