#!/usr/bin/env python3
"""Full-size run of the Nsight Compute import, the --metrics join and the nsys-stats-like summaries:
a Kineto trace with N kernel launches (plus their runtime calls and some copies) and an ncu raw page
of the same N kernels, generated here; times `strata import` of each, the join, and the four
summaries on the joined trace, and checks the join matched every kernel.
Usage: scripts/ncu_scale.py [N=200000] [BUILD_DIR=build]"""
import json
import os
import subprocess
import sys
import tempfile
import time

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
strata = os.path.join(sys.argv[2] if len(sys.argv) > 2 else "build", "bin", "strata")
names = ["gemm_kernel", "relu_kernel", "softmax_kernel", "layer_norm_kernel", "elementwise_kernel"]
tmp = tempfile.mkdtemp()
trace, ncu = os.path.join(tmp, "t.json"), os.path.join(tmp, "m.csv")
with open(trace, "w") as f:
    f.write('{"schemaVersion": 1, "traceEvents": [\n')
    for i in range(n):
        name = names[(i * 7 + i // 5) % 5]
        f.write(json.dumps({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                            "ts": 10 * i, "dur": 3, "args": {"correlation": i + 1}}) + ",\n")
        f.write(json.dumps({"ph": "X", "cat": "kernel", "name": f"void {name}<float>(float*, int)", "pid": 0,
                            "tid": 7, "ts": 10 * i + 4, "dur": 5, "args": {"device": 0, "stream": 7,
                                                                          "correlation": i + 1}}) + ",\n")
    f.write(json.dumps({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,
                        "tid": 7, "ts": 10 * n, "dur": 50, "args": {"bytes": 4096}}) + "\n]}\n")
with open(ncu, "w") as f:
    f.write("==PROF== Connected to process 1 (/usr/bin/python3)\n")
    f.write('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum",'
            '"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum","sm__warps_active.avg.pct_of_peak_sustained_active"\n')
    f.write('"","","","","","","","","","","","Kbyte","byte","usecond","inst","%"\n')
    for i in range(n):
        name = names[(i * 7 + i // 5) % 5]
        f.write(f'"{i}","1","python3","h","{name}","1","7","(256, 1, 1)","(80, 1, 1)","0","9.0","{i % 977}.5",'
                f'"{(i % 10007) * 1000:,}","{1 + i % 300}.25","{i * 1000}","{i % 100}"\n')


def timed(*args, ok_missing=False):
    t = time.perf_counter()
    r = subprocess.run([strata, *args], capture_output=True, text=True)
    if r.returncode != 0 and not (ok_missing and "no named ranges" in r.stderr):
        sys.exit(f"strata {' '.join(args)} failed: {r.stderr}")
    return time.perf_counter() - t, r.stdout


mb = os.path.getsize(ncu) / 1e6
dt, _ = timed("import", ncu, "-o", os.path.join(tmp, "m.strata"))
print(f"ncu CSV import: {n} kernels, {mb:.1f} MB in {dt:.2f} s ({mb / dt:.1f} MB/s, {n / dt:.0f} kernels/s)")
dt, _ = timed("import", trace, "-o", os.path.join(tmp, "t.strata"))
print(f"Kineto import of the trace: {os.path.getsize(trace) / 1e6:.1f} MB in {dt:.2f} s")
dt, out = timed("import", "--metrics", ncu, "--into", os.path.join(tmp, "t.strata"), "-o", os.path.join(tmp, "j.strata"))
print(f"join: {dt:.2f} s: {out.strip()}")
if f"{n} of {n} ncu kernels matched" not in out:
    sys.exit("join did not match every kernel")
for a in ("gpu_kernel_summary", "cuda_api_summary", "memcpy_summary", "range_summary", "kernel_roofline"):
    extra = ["--param", "peak_gflops=60000", "--param", "peak_gbps=3000"] if a == "kernel_roofline" else []
    dt, _ = timed("analyze", os.path.join(tmp, "j.strata"), "--analysis", a, "--format", "csv", *extra,
                   ok_missing=a == "range_summary")
    print(f"analyze {a}: {dt:.2f} s")
