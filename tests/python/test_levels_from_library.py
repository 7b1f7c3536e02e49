"""strata.LEVELS comes from libstrata.so (strata_levels, issue 14.5), not from a table of its own.

The reference is src/core/level.h's kLevels, read here as text: the package, the library and the
core enum must name the same levels with the same numbers, in the same order. A library without
strata_levels leaves LEVELS empty and a level name raises one clear error; with no library at all
spans record nothing, so a level name is accepted as before (test_python_build_tree.py)."""
import json
import os
import re
import subprocess
import textwrap

from conftest import PYTHON_PKG, SYSTEM_PYTHON

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def core_levels():
    """[(name, value)] of kLevels in src/core/level.h, values from the Level enum."""
    with open(os.path.join(REPO, "src", "core", "level.h"), encoding="utf-8") as header:
        text = header.read()
    enum = dict(re.findall(r"^\s*(k\w+) = (\d+),", text.split("enum class Level")[1].split("};")[0], re.M))
    table = text.split("kLevels{{")[1].split("}};")[0]
    return [(name, int(enum[key])) for key, name in re.findall(r'\{Level::(k\w+), "(\w+)"\}', table)]


def run_python(code):
    env = dict(os.environ, PYTHONPATH=PYTHON_PKG)
    proc = subprocess.run([SYSTEM_PYTHON, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_levels_are_the_core_enum_in_order_plus_the_runtime_alias():
    expected = core_levels()
    assert len(expected) == 8 and expected[0] == ("application", 10)
    levels = json.loads(run_python("""
        import json, strata
        print(json.dumps(list(strata.LEVELS.items())))
    """))
    assert [tuple(item) for item in levels] == expected + [("runtime", 50)]


def test_level_names_still_resolve_for_spans():
    out = run_python("""
        import strata
        print(strata._level("layer"), strata._level("runtime"), strata._level(37))
        try:
            strata._level("bogus")
        except ValueError as error:
            print(error)
    """)
    lines = out.splitlines()
    assert lines[0] == "30 50 37"
    assert lines[1].startswith("unknown level 'bogus'; one of application, iteration, model")


def test_library_without_strata_levels_gives_one_clear_error():
    # libc has no strata_levels: what an older libstrata.so looks like to the package
    out = run_python("""
        import ctypes, strata
        levels, why = strata._read_levels(ctypes.CDLL("libc.so.6"))
        print(levels)
        print(why)
        levels, why = strata._read_levels(None)
        print(levels)
        print(why)
        # a library too old to list its levels: a level name is an error saying what to do
        strata.LEVELS, strata._LEVELS_MISSING = strata._read_levels(ctypes.CDLL("libc.so.6"))
        try:
            strata.span("step", level="model")
        except ValueError as error:
            print(error)
    """)
    lines = out.splitlines()
    assert lines[0] == "{}" and "has no strata_levels" in lines[1] and "STRATA_LIB" in lines[1]
    assert lines[2] == "{}" and "libstrata.so, which was not found" in lines[3]
    assert lines[4].startswith("level 'model': the libstrata.so loaded has no strata_levels")
