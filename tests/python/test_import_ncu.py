"""`strata import` of Nsight Compute CSV and `strata import --metrics NCU.csv --into TRACE` through the
CLI: a Kineto trace and an ncu raw page of the same kernels (made here), joined, then the kernel
roofline read back; the real B200 details page; bad input as one line."""
import csv
import io
import json
import os
import re

from conftest import run_strata

REAL = os.path.join(os.path.dirname(__file__), "..", "import", "data", "b200_cublaslt_fp8_gemm_details.csv.log")


def write_pair(tmp_path, launches, profiled):
    events = [{"ph": "X", "cat": "kernel", "name": f"void {name}<float>(float*, int)", "pid": 0, "tid": 7,
               "ts": 100 + 10 * i, "dur": 4, "args": {"device": 0, "stream": 7, "correlation": i + 1}}
              for i, name in enumerate(launches)]
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    rows = ["==PROF== Connected to process 1 (/usr/bin/python3)", "step 0 loss 0.5",
            '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
            '"Grid Size","Device","CC","dram__bytes_read.sum","dram__bytes_write.sum",'
            '"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"',
            '"","","","","","","","","","","","Mbyte","byte","inst"']
    for i, name in enumerate(profiled):
        rows.append(f'"{i}","1","python3","h","{name}","1","7","(128, 1, 1)","(4, 1, 1)","0","9.0",'
                    f'"{i + 1}","{(i + 1) * 1000:,}","{(i + 1) * 500000}",')
    rows.append("==PROF== Disconnected from process 1")
    ncu = tmp_path / "m.csv"
    ncu.write_text("\n".join(rows) + "\n")
    return trace, ncu


def test_join_gives_measured_roofline(strata_bin, tmp_path):
    launches = ["gemm", "relu", "gemm", "relu", "gemm"]
    trace, ncu = write_pair(tmp_path, launches, launches + ["gemm", "other"])
    out = tmp_path / "j.strata"
    r = run_strata("import", "--metrics", str(ncu), "--into", str(trace), "-o", str(out))
    assert "5 of 7 ncu kernels matched a trace kernel (2 unmatched), 0 trace kernels without metrics" in r.stdout
    info = run_strata("info", str(out)).stdout
    assert re.search(r"import\.ncu_join\.ncu_unmatched\s+2", info)
    table = run_strata("analyze", str(out), "--analysis", "kernel_roofline", "--param", "peak_gflops=1000",
                       "--param", "peak_gbps=100", "--format", "csv").stdout
    rows = {r["kernel"]: r for r in csv.DictReader(io.StringIO(table))}
    # ID i: flops 2 * (i+1) * 500000, bytes (i+1) * 1e6 + (i+1) * 1000.
    for name, ids in (("gemm", [0, 2, 4]), ("relu", [1, 3])):
        flops = sum(2 * (i + 1) * 500000 for i in ids)
        nbytes = sum((i + 1) * 1e6 + (i + 1) * 1000 for i in ids)
        row = rows[f"void {name}<float>(float*, int)"]
        assert abs(float(row["flop_per_byte"]) - flops / nbytes) < 1e-3


def test_real_details_page_and_bad_input(strata_bin, tmp_path):
    r = run_strata("import", REAL, "-o", str(tmp_path / "k.strata"))
    assert "ncu: 1 kernels, 50 metric values, 8 rule rows, 3 other lines skipped" in r.stdout
    bad = tmp_path / "bad.csv"
    bad.write_text('"ID","Process ID","Kernel Name","Metric Name","Metric Value"\n"x","1","k","Duration","5"\n')
    r = run_strata("import", str(bad), "-o", str(tmp_path / "b.strata"), check=False)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "bad.csv: line 2, field ID" in lines[0]
    assert not (tmp_path / "b.strata").exists()
