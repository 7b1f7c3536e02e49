"""Span names that are not well-formed UTF-8 (issue 12.13), given to strata_span_begin_n by a
recorded program, never reach an export as such: Chrome JSON, flat JSON and CSV all pass a strict
UTF-8 decode, and well-formed names (multi-byte included) come out unchanged."""
import csv
import io
import json
import subprocess

from conftest import STRATA, SYSTEM_PYTHON, run_strata

PROGRAM = r'''
import strata
names = [b"bad\xc0\x80", b"\xed\xa0\x80surrogate", b"big\xf4\x90\x80\x80", b"cut\xe2\x82",
         "ok \u20ac \U0001F600 \u00e9".encode()]
for n in names:
    span = strata._lib.strata_span_begin_n(n, len(n), strata.LEVELS["model"])
    strata._lib.strata_span_end(span)
'''


def test_ill_formed_names_are_replaced_in_every_export(tmp_path):
    script = tmp_path / "names.py"
    script.write_text(PROGRAM)
    out = str(tmp_path / "names.strata")
    proc = subprocess.run([STRATA, "record", "--quiet", "--level", "model", "-o", out, "--", SYSTEM_PYTHON,
                           str(script)], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    outputs = {}
    for fmt in ("chrome", "json", "csv"):
        path = str(tmp_path / f"names.{fmt}")
        run_strata("export", out, "--format", fmt, "-o", path)
        with open(path, "rb") as f:
            outputs[fmt] = f.read().decode("utf-8")  # strict: raises on any ill-formed byte
    chrome = json.loads(outputs["chrome"])
    names = {e["name"] for e in chrome["traceEvents"] if e.get("ph") == "X"}
    assert names == {"bad\ufffd\ufffd", "\ufffd\ufffd\ufffdsurrogate", "big\ufffd\ufffd\ufffd\ufffd",
                     "cut\ufffd\ufffd", "ok \u20ac \U0001F600 \u00e9"}, names
    assert {s["name"] for s in json.loads(outputs["json"])} == names
    rows = list(csv.DictReader(io.StringIO(outputs["csv"])))
    assert {r["name"] for r in rows} == names
