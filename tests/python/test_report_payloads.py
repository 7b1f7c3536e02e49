"""strata report with hostile names: script from a trace never runs, and the page makes no request
(issue 32 item 1; docs/security.md, "HTML report").

A generated Kineto trace carries markup payloads in its op, kernel, annotation, category, thread and
process names, in arg keys and values, and in its file name; a run recorded here with CPU samples
carries them in a layer span's name, a Python function's name and its file's name (the flame graph).
Each payload is an inline handler (and a script element, a navigation to 127.0.0.1:9, an image from
there) that would push its tag onto window.strataPwned and set document.title if it ran.
tests/report/payload_check.js loads each report in headless Chromium (Debian's, driven by
playwright-core), hovers every data point of every chart with the mouse and opens every <details>:
no payload runs, no dialog, no navigation, no request, no element a report never draws; and the
payloads are in the tooltips and tables as text (so the test reached them).

The policy is tested on its own: a copy of a report with an inline handler, an unhashed inline
script, an image, a frame, a stylesheet, a base URL and a form pointing at 127.0.0.1:9 injected into
its markup draws as before and runs and loads none of them; the same copy without the policy runs
them (the check can see a payload that runs).
"""
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import SYSTEM_PYTHON, run_strata

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NODE_MODULES = os.path.join(ROOT, "report", "node_modules")
PAYLOAD_CHECK = os.path.join(ROOT, "tests", "report", "payload_check.js")
NODE = shutil.which("node")
CHROMIUM = "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else shutil.which("chromium")

needs_browser = pytest.mark.skipif(
    NODE is None or CHROMIUM is None,
    reason="needs node and chromium (scripts/setup.sh installs both: apt-get install nodejs npm chromium)")


def payload(tag):
    """Markup that, run, pushes `tag` onto window.strataPwned, sets the title, and tries to leave."""
    # No ';' in it: the collapsed stacks behind the flame graph write a frame's ';' as ':'.
    flag = f"(window.strataPwned=window.strataPwned||[]).push('{tag}'),document.title='pwned'"
    return (f"<img src=x onerror=\"{flag}\"><svg onload=\"{flag}\"></svg>"
            f"<script>{flag}</script><img src=\"http://127.0.0.1:9/{tag}.png\">"
            f"<img src=y onerror=\"location='http://127.0.0.1:9/{tag}'\">&amp;'\"")


def marker(tag):
    """The payload's first element (its handler holds the tag): found as text in a tooltip or a
    table, the payload got there."""
    return payload(tag).split("<svg")[0]


def kineto_payload_trace(path):
    """Three steps of three ops, each op launching one kernel with flops and bytes (rooflines), names
    and args carrying the payloads."""
    pid, tid, stream = 4242, 4242, 7
    events = [
        {"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": payload("process")}},
        {"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": {"name": payload("thread")}},
        {"name": "thread_name", "ph": "M", "ts": 0, "pid": 0, "tid": stream,
         "args": {"name": payload("device_thread")}},
    ]
    t, corr = 1000.0, 1
    for step in range(3):
        step_start = t
        for k in range(3):
            op = f"{payload('op')}aten::linear_{k}"
            kernel = f"{payload('kernel')}sm90_gemm_{k}"
            events.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": pid, "tid": tid, "ts": t, "dur": 40.0,
                           "args": {"External id": corr, "Input Dims": payload("arg_value"),
                                    "Input type": payload("arg_value"),
                                    payload("arg_key"): payload("arg_value")}})
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
                           "ts": t + 2, "dur": 5.0, "args": {"cbid": 211, "correlation": corr}})
            events.append({"ph": "s", "id": corr, "pid": pid, "tid": tid, "ts": t + 2, "cat": "ac2g", "name": "ac2g"})
            events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": stream, "ts": t + 10,
                           "dur": 10.0 + 5 * k, "args": {"device": 0, "stream": stream, "correlation": corr,
                                                         "flops": 1e9 * (k + 1), "bytes": 1e7 * (3 - k),
                                                         "grid": [1, 1, 1], "block": [128, 1, 1],
                                                         payload("arg_key"): payload("arg_value")}})
            events.append({"ph": "f", "id": corr, "pid": 0, "tid": stream, "ts": t + 10, "cat": "ac2g",
                           "name": "ac2g", "bp": "e"})
            corr += 1
            t += 50.0
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": pid,
                       "tid": tid, "ts": step_start - 1, "dur": t - step_start + 1})
        events.append({"ph": "X", "cat": "user_annotation", "name": payload("annotation"), "pid": pid,
                       "tid": tid, "ts": step_start - 0.5, "dur": t - step_start})
        t += 20.0
    # An event of an unknown category (counted as unmapped; its category is in no table).
    events.append({"ph": "X", "cat": payload("category"), "name": "x", "pid": pid, "tid": tid, "ts": t, "dur": 1.0})
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3",
                                                     "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
           "traceEvents": events}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)


# Its samples are few (100 Hz, 0.3 s of hashing) and their stacks alike, so that the flame graph has
# few frames (each is hovered); the payloads are the function's code name and the layer span's name.
SAMPLED_SCRIPT = """
import hashlib, sys, strata
def work(buffer):
    for _ in range(8):
        hashlib.sha256(buffer).digest()
work.__code__ = work.__code__.replace(co_name=sys.argv[1], co_qualname=sys.argv[1])
with strata.span(sys.argv[2], level="layer"):
    work(bytes(50_000_000))
"""

SAMPLED_TAGS = ["python_function", "python_file", "span"]


@pytest.fixture(scope="module")
def reports(tmp_path_factory, strata_bin):
    """The payload reports: (Kineto report, sampled run's report)."""
    work = tmp_path_factory.mktemp("payloads")
    kineto = str(work / (marker("file") + ".json"))  # a file name holds no '/' and 255 bytes at most
    kineto_payload_trace(kineto)
    kineto_html = str(work / "kineto.html")
    run_strata("report", kineto, "-o", kineto_html)
    script = work / (marker("python_file") + ".py")
    script.write_text(SAMPLED_SCRIPT)
    sampled = str(work / "sampled.strata")
    proc = subprocess.run([strata_bin, "record", "--quiet", "--sample=100", "--level", "layer", "-o", sampled, "--",
                           SYSTEM_PYTHON, str(script), payload("python_function"), payload("span")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    sampled_html = str(work / "sampled.html")
    run_strata("report", sampled, "-o", sampled_html)
    return kineto_html, sampled_html


@pytest.fixture(scope="module")
def pages(reports, tmp_path_factory):
    """What payload_check.js saw in each page, from one browser: the two reports, and the copy of the
    Kineto report with markup injected, with its policy ("probe") and without it ("control")."""
    if not os.path.isdir(os.path.join(NODE_MODULES, "playwright-core")):
        pytest.fail(f"{NODE_MODULES}/playwright-core missing: run scripts/setup.sh (npm ci in report/)")
    work = tmp_path_factory.mktemp("probe")
    probe = probe_copy(reports[0], str(work / "probe.html"))
    control = probe_copy(reports[0], str(work / "control.html"), keep_policy=False)
    env = dict(os.environ, NODE_PATH=NODE_MODULES)
    proc = subprocess.run([NODE, PAYLOAD_CHECK, CHROMIUM, *reports, "--probe", probe, "--probe", control],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    return {"kineto": seen[reports[0]], "sampled": seen[reports[1]], "probe": seen[probe], "control": seen[control]}


def assert_nothing_ran(page):
    assert "interrupted" not in page, f"the page went away: {page['interrupted']}; requests: {page['requests']}"
    assert page["pwned"] is None, f"payloads ran: {page['pwned']}"
    assert page["title"] != "pwned"
    assert page["dialogs"] == [], page["dialogs"]
    assert page["requests"] == [], f"the page made requests: {page['requests']}"
    assert page["location"].startswith("file://"), page["location"]
    assert page["navigations"] == [] and page["popups"] == [], (page["navigations"], page["popups"])


def assert_safe_page(page, expected_charts):
    assert page["ready"] and page["report_errors"] == [], page.get("report_errors")
    assert_nothing_ran(page)
    assert page["page_errors"] == [], page["page_errors"]
    assert not [c for c in page["console"] if c.startswith("error")], page["console"]
    # Nothing tried to load or run: the page's own scripts ran by their hashes, and no payload was
    # even markup for the policy to refuse.
    assert page["csp_violations"] == [] and page["refused_by_policy"] == [], page["csp_violations"]
    # No markup from the data: no element with a handler, no image, frame, form or link, after any
    # hover or at the end.
    assert page["bad_elements"] == [], page["bad_elements"]
    charts = {c["id"]: c for c in page["charts"]}
    assert set(expected_charts) <= set(charts), f"charts drawn: {sorted(charts)}"
    for chart in page["charts"]:
        assert chart["points"] > 0 and chart["hovered"] == chart["points"], chart
        assert chart["tooltips"], f"{chart['id']}: hovering showed no tooltip"
    assert page["details"]["count"] > 0 and page["details"]["open"] == page["details"]["count"], page["details"]
    return charts


def tooltip_text(chart):
    return "\n".join(chart["tooltips"])


@needs_browser
def test_kineto_payloads_are_text_in_every_chart_and_table(pages):
    page = pages["kineto"]
    charts = assert_safe_page(page, ["step-breakdown", "step-timeline", "layer-sequence", "layer-types",
                                     "device-split", "kernels", "kernel_roofline", "layer_roofline",
                                     "iteration-timeline", "iteration-metrics"])
    # The payloads got to the charts whose tooltips name the trace's layers and kernels: as text (the
    # summary's timeline names the representative step's ops, kernels and annotations).
    for chart_id, tag in [("layer-sequence", "op"), ("layer-types", "op"), ("device-split", "op"),
                          ("kernels", "kernel"), ("kernel_roofline", "kernel"), ("layer_roofline", "op"),
                          ("step-timeline", "op"), ("step-timeline", "kernel"), ("step-timeline", "annotation")]:
        assert marker(tag) in tooltip_text(charts[chart_id]), f"{chart_id}: the {tag} payload is not in its tooltips"
    text = page["page_text"]
    # Thread names, categories and most args are in no table of the report (only the layers' shapes:
    # Kineto's "Input Dims"), but the trace has them all.
    for tag in ["op", "kernel", "annotation", "process", "file", "arg_value"]:
        assert marker(tag) in text, f"the {tag} payload is not in the page's text"


@needs_browser
def test_sampled_payloads_are_text_in_the_flame_graph(pages):
    page = pages["sampled"]
    charts = assert_safe_page(page, ["flame", "layer-sequence"])
    flame = tooltip_text(charts["flame"])
    for tag in SAMPLED_TAGS:
        assert marker(tag) in flame, f"flame graph: the {tag} payload is not in its tooltips"
    assert marker("span") in tooltip_text(charts["layer-sequence"])


PROBE = ("<img src=x onerror=\"window.strataPwned=['handler']\">"
         "<script>window.strataPwned=['inline script']</script>"
         "<img src=\"http://127.0.0.1:9/image.png\">"
         "<iframe src=\"http://127.0.0.1:9/frame\"></iframe>"
         "<link rel=\"stylesheet\" href=\"http://127.0.0.1:9/style.css\">"
         "<base href=\"http://127.0.0.1:9/\">"
         "<form action=\"http://127.0.0.1:9/form\"><button id=\"strata-csp-probe-submit\">go</button></form>")


def probe_copy(html, path, keep_policy=True):
    with open(html, encoding="utf-8") as f:
        page = f.read()
    if not keep_policy:
        page, n = re.subn(r'<meta http-equiv="Content-Security-Policy"[^>]*>\n', "", page, count=1)
        assert n == 1
    page = page.replace("<body>\n", "<body>\n" + PROBE + "\n", 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path


def policy_of(html):
    with open(html, encoding="utf-8") as f:
        m = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', f.read())
    assert m, "no Content-Security-Policy in the page"
    return {d.split()[0]: d.split()[1:] for d in m.group(1).split("; ")}


def test_the_policy_allows_only_the_pages_own_scripts_and_nothing_out(reports):
    policy = policy_of(reports[0])
    for directive in ["default-src", "connect-src", "form-action", "base-uri"]:
        assert policy.get(directive) == ["'none'"], (directive, policy)
    scripts = policy["script-src"]
    assert len(scripts) == 2 and all(s.startswith("'sha256-") for s in scripts), scripts
    assert not any("unsafe" in s for s in scripts)


@needs_browser
def test_the_policy_is_enforced_in_the_browser(pages):
    page = pages["probe"]
    assert page["ready"] and page["report_errors"] == [], page.get("report_errors")  # its own scripts ran
    assert_nothing_ran(page)
    refused = {v.split()[0] for v in page["csp_violations"]}
    assert {"script-src-attr", "script-src-elem", "img-src", "frame-src", "style-src-elem", "base-uri",
            "form-action"} <= refused, page["csp_violations"]
    # Control: the same copy without the policy runs the injected handler and script, and its loads
    # are requests (refused by the check's router); so the check sees a payload that runs.
    control = pages["control"]
    assert control["pwned"], control
    assert any("127.0.0.1:9" in r for r in control["requests"]), control["requests"]
