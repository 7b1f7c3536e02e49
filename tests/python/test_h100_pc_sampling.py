"""GPU PC sampling and CUDA graphs as Strata recorded them on a real H100 (tests/data/h100/README.md,
second session: PyTorch 2.11, CUDA 13, driver 580), checked against Nsight Compute's own PC sampling of
the same kernels and against torch.profiler's (Kineto's) trace of the same program.

- examples/cuda/stall_kernels.cu has one kernel per culprit (a pointer chase: memory dependency; a
  dependent FMA chain: execution dependency; warps waiting at a barrier: synchronization). Strata's
  stall shares per kernel must equal Nsight Compute's within 2 points, on the kernels' own source lines.
- examples/pytorch/gpu_features.py replays a CUDA graph: traced node by node (the default), every
  kernel Kineto shows is there, each linked to its cudaGraphLaunch by correlation id."""
import collections
import csv
import io
import json
import os
import re

from conftest import run_strata

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "h100")
SOURCE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "cuda", "stall_kernels.cu")
PCS_TRACE = os.path.join(DATA, "h100_stalls_pcs.strata")
NCU_RAW = os.path.join(DATA, "h100_stalls_ncu_raw.csv")
GRAPH_TRACE = os.path.join(DATA, "h100_graphs_node.strata")
GRAPH_KINETO = os.path.join(DATA, "h100_graphs_kineto.json.gz")

csv.field_size_limit(1 << 30)
STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"


def tables(path, analysis):
    """Every table of an analysis's CSV output, by name."""
    text = run_strata("analyze", path, "--analysis", analysis, "--format", "csv", "--param", "top=0").stdout
    out = {}
    for block in ("\n" + text).split("\n# ")[1:]:
        name, _, body = block.partition("\n")
        out[name.strip()] = list(csv.DictReader(io.StringIO(body)))
    return out


def ncu_shares():
    """Nsight Compute's PC sampling per kernel: reason -> percent of the kernel's samples. The CSV has
    the program's own output before the header, as `ncu --csv` writes it."""
    with open(NCU_RAW, newline="") as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    header, out = rows[0], {}
    for row in rows[2:]:  # rows[1] holds the units
        values = dict(zip(header, row))
        counts = {k[len(STALL_PREFIX):]: float(v.replace(",", "")) for k, v in values.items()
                  if k.startswith(STALL_PREFIX) and not k.endswith("_not_issued") and v}
        total = sum(counts.values())
        out[values["Kernel Name"].split("(")[0]] = {r: 100.0 * n / total for r, n in counts.items()}
    return out


def test_stall_shares_equal_nsight_computes_on_the_kernels_own_lines():
    ours = tables(PCS_TRACE, "gpu_stalls")
    shares = collections.defaultdict(dict)
    for r in ours["gpu_stalls_by_reason"]:
        shares[r["kernel"].split("(")[0]][r["reason"]] = float(r["share_pct"])
    theirs = ncu_shares()
    assert set(shares) == set(theirs) == {"pointer_chase", "fma_chain", "barrier_imbalance"}
    expected_top = {"pointer_chase": "long_scoreboard", "fma_chain": "wait", "barrier_imbalance": "barrier"}
    for kernel, reasons in theirs.items():
        assert max(reasons, key=reasons.get) == expected_top[kernel], (kernel, reasons)
        assert max(shares[kernel], key=shares[kernel].get) == expected_top[kernel], (kernel, shares[kernel])
        for reason, pct in reasons.items():
            if pct >= 1.0:  # every reason with at least 1% of the kernel's samples
                assert abs(shares[kernel].get(reason, 0.0) - pct) <= 2.0, (kernel, reason, shares[kernel], pct)
    # The hottest line of each kernel is its loop, read back from the source the cubin was built from.
    with open(SOURCE) as f:
        source = f.read().splitlines()
    loop = {"pointer_chase": "p = next[p]", "fma_chain": "a = fmaf(a, b, c)", "barrier_imbalance": "for (int r = 0"}
    for row in ours["gpu_stalls_by_kernel"]:
        kernel = row["kernel"].split("(")[0]
        m = re.search(r"stall_kernels\.cu:(\d+)$", row["hottest_line"])
        assert m, row
        assert loop[kernel] in source[int(m.group(1)) - 1], (kernel, source[int(m.group(1)) - 1])


def test_pc_sampling_accounts_for_every_sample():
    info = run_strata("info", PCS_TRACE).stdout
    line = re.search(r"^  pc_sampling: (.*)$", info, re.M).group(1)  # key=value; key=value ...
    props = dict(item.split("=", 1) for item in line.split("; "))
    assert props["mode"] == "continuous" and props["contexts"] == "1 enabled, 0 failed"
    assert props["period"].startswith("15 ")  # the continuous default: 2^15 cycles per sample
    by_kernel = tables(PCS_TRACE, "gpu_stalls")["gpu_stalls_by_kernel"]
    total = sum(int(r["samples"]) for r in by_kernel)
    assert total > 1_000_000
    assert int(props["total_samples"]) == total + int(props["non_user_samples"])
    assert "lost events: 0" in info  # the hardware buffer never filled at this period


def exported(path, tmp_path):
    out = tmp_path / (os.path.basename(path) + ".csv")
    run_strata("export", path, "--format", "csv", "-o", str(out))
    with open(out, newline="") as f:
        return list(csv.DictReader(f))


def test_cuda_graph_replays_show_every_node_kernel_linked_to_its_launch(tmp_path):
    ours, theirs = exported(GRAPH_TRACE, tmp_path), exported(GRAPH_KINETO, tmp_path)
    kernels = [r for r in ours if r["activity"] == "kernel"]
    mine = collections.Counter(r["name"] for r in kernels)
    kineto = collections.Counter(r["name"] for r in theirs if r["activity"] == "kernel")
    assert sum(mine.values()) == sum(kineto.values()) == 208
    # Names longer than the recorder's event limit are cut (counted as collector.string_truncated):
    # such a name must be the start of one of Kineto's.
    for name, n in (mine - kineto).items():
        assert any(k.startswith(name) and kineto[k] == n for k in kineto), name[:120]
    in_graph = [r for r in kernels if "graph_id" in json.loads(r["attributes"] or "{}")]
    assert len(in_graph) == 140  # 7 kernels x 20 replays
    by_id = {r["span_id"]: r for r in ours}
    assert all(r["parent_link"] == "correlation" and by_id[r["parent_id"]]["name"] == "cudaGraphLaunch"
               for r in in_graph)
    assert not [r for r in ours if r["activity"] == "graph"]  # node level: no graph-level records
