#!/usr/bin/env python3
"""Writes HTA's own figures for a directory of rank traces, for tests/python/test_hta_parity.py.

HTA (Holistic Trace Analysis, github.com/facebookresearch/HolisticTraceAnalysis) is not packaged for
Debian and PyPI is not reachable from the project's machines, so HTA is not a test dependency: its
results on the shared traces are kept as CSV (tests/data/hta/) and this script regenerates them from a
checkout of HTA (needs python3-pandas, python3-plotly, python3-networkx, python3-pydot).

usage: /usr/bin/python3 scripts/hta_reference.py HTA_SOURCE_DIR TRACE_DIR OUT_DIR
"""
import logging
import os
import sys
import warnings


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    hta_src, trace_dir, out_dir = argv[1:]
    if not os.path.isdir(os.path.join(hta_src, "hta")):
        print(f"hta_reference: {hta_src} has no hta/ package: give the root of an HTA checkout", file=sys.stderr)
        return 1
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    sys.path.insert(0, hta_src)
    from hta.trace_analysis import TraceAnalysis  # noqa: E402 (from the checkout given)

    analysis = TraceAnalysis(trace_dir=trace_dir)
    ranks = sorted(analysis.t.traces.keys())
    os.makedirs(out_dir, exist_ok=True)
    analysis.get_temporal_breakdown(visualize=False).to_csv(
        os.path.join(out_dir, "temporal_breakdown.csv"), index=False)
    idle = analysis.get_idle_time_breakdown(ranks=ranks, visualize=False, show_idle_interval_stats=False)
    (idle[0] if isinstance(idle, tuple) else idle).to_csv(os.path.join(out_dir, "idle_time.csv"), index=False)
    analysis.get_comm_comp_overlap(visualize=False).to_csv(os.path.join(out_dir, "comm_comp_overlap.csv"),
                                                           index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
