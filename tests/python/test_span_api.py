"""The Python span API end to end: context manager, decorator, attributes, gating, threads, child
processes joining the trace, and a process that never imported strata's native part."""
import os
import sys
import textwrap

from conftest import SYSTEM_PYTHON, PYTHON_PKG


def write_script(tmp_path, body):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def by_name(spans):
    out = {}
    for s in spans:
        out.setdefault(s["name"], []).append(s)
    return out


def test_context_manager_decorator_and_attributes(tmp_path, recorder):
    script = write_script(tmp_path, """
        import threading, strata

        @strata.span("decorated", level="layer", kind="fn")
        def work():
            return sum(range(1000))

        with strata.span("predict", level="model", batch=8, lr=0.5, arch="resnet50") as s:
            work()
            s.metric("flops", 1.5e9)
        t = threading.Thread(target=work)
        t.start(); t.join()
        with strata.span("too_deep", level="library"):
            pass
    """)
    spans, _ = recorder([SYSTEM_PYTHON, script], level="layer")
    names = by_name(spans)
    predict = names["predict"][0]
    assert predict["attributes"] == {"batch": 8, "lr": 0.5, "arch": "resnet50", "metric.flops": 1.5e9}
    assert predict["level"] == "model"
    decorated = names["decorated"]
    assert len(decorated) == 2
    inside = [d for d in decorated if d["parent_id"] == predict["span_id"]]
    assert len(inside) == 1, "the decorated call inside predict is its child"
    assert inside[0]["start_ns"] >= predict["start_ns"] and inside[0]["end_ns"] <= predict["end_ns"]
    other = [d for d in decorated if d is not inside[0]][0]
    assert other["tid"] != predict["tid"], "the thread's span is on its own thread"
    assert "too_deep" not in names, "library level is deeper than the recorded layer level"


def test_child_process_joins_trace_under_current_span(tmp_path, recorder):
    script = write_script(tmp_path, """
        import subprocess, sys, strata
        if len(sys.argv) > 1:
            with strata.span("child_step", level="model"):
                pass
        else:
            with strata.span("parent_step", level="model"):
                subprocess.run([sys.executable, __file__, "child"], env=strata.inject_context(), check=True)
    """)
    spans, _ = recorder([SYSTEM_PYTHON, script])
    names = by_name(spans)
    parent, child = names["parent_step"][0], names["child_step"][0]
    assert child["trace_id"] == parent["trace_id"]
    assert child["pid"] != parent["pid"]
    assert child["parent_id"] == parent["span_id"]


def test_api_is_a_no_op_when_not_recording(tmp_path):
    import subprocess
    script = write_script(tmp_path, """
        import strata
        assert not strata.is_recording()
        with strata.span("x", level="model", a=1) as s:
            s.set("b", 2)
        assert strata.begin("y") == 0
        assert strata.current_traceparent() is None
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=PYTHON_PKG)
    env.pop("STRATA_OUTPUT_DIR", None)
    out = subprocess.run([SYSTEM_PYTHON, script], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
    assert out.stderr == ""  # instrumentation left in an unrecorded program prints nothing (by design)


def test_explicit_start_without_record(tmp_path):
    import json
    import subprocess
    from conftest import STRATA
    trace = tmp_path / "explicit.strata"
    script = write_script(tmp_path, f"""
        import strata
        assert strata.start({str(trace)!r}, level="model")
        for i in range(3):
            with strata.span("step", level="model", i=i):
                pass
        strata.stop()
    """)
    env = dict(os.environ, PYTHONPATH=PYTHON_PKG)
    out = subprocess.run([SYSTEM_PYTHON, script], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    spans = json.loads(subprocess.run([STRATA, "export", str(trace), "--format", "json"], capture_output=True,
                                      text=True, check=True).stdout)
    assert [s["attributes"]["i"] for s in spans] == [0, 1, 2]


def test_unknown_level_is_a_clear_error(tmp_path):
    import subprocess
    script = write_script(tmp_path, """
        import strata
        try:
            strata.span("x", level="kernelz")
        except ValueError as e:
            print(e)
    """)
    env = dict(os.environ, PYTHONPATH=PYTHON_PKG)
    out = subprocess.run([SYSTEM_PYTHON, script], env=env, capture_output=True, text=True)
    assert "unknown level 'kernelz'" in out.stdout
