"""scripts/include_roots.py: docs/architecture.md's module map as include folders, so the compiler
refuses what scripts/check_includes.py reports (issue 14.5).

Each case preprocesses a one-line file with the include folder of one row (c++ -E, no build
needed) and expects the header found or "No such file or directory": a forbidden include must fail
to compile and an allowed one must not. The last case checks that the build gives every compiled
file the folder of its row and no other way into src/ or include/ (compile_commands.json)."""
import json
import os
import shlex
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(REPO, "scripts", "include_roots.py")
BUILD_DIR = os.path.abspath(os.environ.get("STRATA_BUILD_DIR", os.path.join(REPO, "build")))


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    where = str(tmp_path_factory.mktemp("roots") / "include_roots")
    result = subprocess.run([sys.executable, SCRIPT, REPO, where], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return where


def preprocess(root, header, tmp_path):
    source = tmp_path / "probe.cc"
    source.write_text(f'#include "{header}"\n')
    # Never "-o /dev/null": a compiler that fails unlinks its output file, and as root that removed
    # the machine's /dev/null (every later spawn with stdio on /dev/null failed with ENOENT).
    return subprocess.run(["c++", "-std=c++20", "-E", "-o", str(tmp_path / "probe.i"), "-I", root, str(source)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("row, header, found", [
    ("src.analysis", "analysis/analysis.h", True),  # its own module
    ("src.analysis", "trace/trace.h", True),  # allowed
    ("src.analysis", "core/level.h", True),  # allowed transitively (through model)
    ("src.analysis", "lowerbound/bounds/bounds.h", False),  # a module above analysis
    ("src.analysis", "collect/session.h", False),  # a collector
    ("src.analysis", "analysis/iterations/pattern_miner.h", False),  # its sub-module (depends on it)
    ("src.analysis.iterations", "analysis/iterations/pattern_miner.h", True),
    ("src.analysis.iterations", "analysis/analysis.h", True),
    ("src.collect", "strata/strata.h", True),
    ("src.collect", "trace/trace.h", False),  # collectors never see the in-memory trace
    ("src.cudalibs", "cudalibs/library_span.h", True),
    ("src.cudalibs", "gpu/span_sink.h", False),  # a sibling collector
    ("src.lowerbound.ir", "lowerbound/ir/layer_ir.h", True),
    ("src.lowerbound.ir", "lowerbound/perfdb/perf_db.h", False),  # a sibling room not in its row
    ("tests.collect", "trace/trace.h", True),  # its area row adds model
    ("tests.collect", "analysis/analysis.h", False),
])
def test_a_row_sees_what_it_may_include_and_nothing_else(roots, tmp_path, row, header, found):
    assert os.path.isfile(os.path.join(REPO, "src", header)) or header.startswith("strata/")
    result = preprocess(os.path.join(roots, row), header, tmp_path)
    if found:
        assert result.returncode == 0, result.stderr
    else:
        assert result.returncode != 0
        assert f"{header}: No such file or directory" in result.stderr


def listing(folder):
    entries = []
    for path, folders, files in os.walk(folder):
        for name in sorted(folders + files):
            full = os.path.join(path, name)
            entries.append((os.path.relpath(full, folder), os.readlink(full) if os.path.islink(full) else ""))
    return sorted(entries)


def test_running_again_gives_the_same_tree(roots, tmp_path):
    again = str(tmp_path / "include_roots")
    subprocess.run([sys.executable, SCRIPT, REPO, again], check=True, timeout=60)
    subprocess.run([sys.executable, SCRIPT, REPO, again], check=True, timeout=60)
    assert listing(again) == listing(roots)


def test_a_broken_table_stops_with_the_checkers_message(tmp_path):
    os.makedirs(tmp_path / "docs")
    (tmp_path / "docs" / "architecture.md").write_text(
        "## Module map\n\n| folder | what | may include |\n|---|---|---|\n| `src/core/` | x | nothing_here |\n")
    result = subprocess.run([sys.executable, SCRIPT, str(tmp_path), str(tmp_path / "roots")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "row `core` may include 'nothing_here', which is not a folder of the table" in result.stderr


def test_the_build_compiles_each_file_with_its_rows_folder_only():
    commands = os.path.join(BUILD_DIR, "compile_commands.json")
    if not os.path.isfile(commands):
        pytest.skip(f"{commands}: no configured build (set STRATA_BUILD_DIR)")
    with open(commands, encoding="utf-8") as listing_file:
        entries = json.load(listing_file)
    assert len(entries) > 100
    roots_dir = os.path.join(BUILD_DIR, "include_roots") + os.sep
    forbidden = {os.path.join(REPO, "src"), os.path.join(REPO, "include")}
    with open(os.path.join(BUILD_DIR, "include_roots", "rows.cmake"), encoding="utf-8") as rows_file:
        rows = rows_file.read().split('set(STRATA_INCLUDE_ROW_FOLDERS "')[1].split('"')[0].split(";")
    checked = 0
    for entry in entries:
        if not entry["file"].startswith(REPO + os.sep) or entry["file"].startswith(BUILD_DIR + os.sep):
            continue  # generated sources
        words = shlex.split(entry["command"])
        dirs = [w[2:] for w in words if w.startswith("-I")] + \
               [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-I", "-isystem")]
        dirs = [os.path.normpath(d) for d in dirs]
        ours = [d for d in dirs if d.startswith(roots_dir)]
        assert len(ours) == 1, (entry["file"], dirs)
        assert not forbidden & set(dirs), (entry["file"], dirs)
        relative = os.path.relpath(entry["file"], REPO)
        if relative.startswith("src/"):  # a module's file: the folder of its own (deepest) row
            own = next(f for f in rows if relative.startswith(f + "/"))
            assert os.path.basename(ours[0]) == own.replace("/", "."), (relative, ours[0])
            checked += 1
    assert checked > 100  # files of src/ (tests compiling another area's helper use their own row)
