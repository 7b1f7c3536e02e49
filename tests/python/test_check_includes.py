"""scripts/check_includes.py: the module map of docs/architecture.md is enforced on src/'s includes.

Fake trees in a temporary folder (a table and a few sources) show each failure it must report and a
clean tree it must pass; the last case runs it on this repository, which must obey its own map."""
import os
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECKER = os.path.join(REPO, "scripts", "check_includes.py")

TABLE = """# Architecture

## Module map

| folder | what it holds | may include |
|---|---|---|
| `include/strata/` | public API | — |
| `src/core/` | vocabulary | — |
| `src/model/` | trace | core (a note, ignored) |
| `src/collect/` | recorder | core, include/strata |
| `src/analysis/` | analyses | model |
| `src/analysis/deep/` | a sub-module | analysis |
| `src/cli/` | the tool | everything above |
"""

CLEAN_SOURCES = {
    "include/strata/strata.h": "",
    "src/core/span.h": "#pragma once\n",
    "src/model/trace.h": '#include "core/span.h"\n',
    "src/collect/runtime.cc": '#include "strata/strata.h"\n#include "core/span.h"\n',
    # transitive: analysis may include model, and model may include core
    "src/analysis/stats.cc": '#include "core/span.h"\n#include "model/trace.h"\n#include "stats.h"\n'
                             '#include <vector>\n#include "generated/not_in_repo.h"\n',
    "src/analysis/stats.h": "",
    "src/analysis/deep/miner.cc": '#include "analysis/stats.h"\n#include "miner.h"\n',
    "src/analysis/deep/miner.h": "",
    "src/cli/main.cc": '#include "analysis/deep/miner.h"\n#include "collect/runtime.cc"\n'
                       '#include "strata/strata.h"\n',
}


def make_tree(root, table=TABLE, sources=CLEAN_SOURCES, extra=None):
    files = dict(sources)
    files.update(extra or {})
    os.makedirs(os.path.join(root, "docs"))
    with open(os.path.join(root, "docs", "architecture.md"), "w") as doc:
        doc.write(table)
    for path, text in files.items():
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as source:
            source.write(text)
    return str(root)


def run_checker(root):
    return subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True, timeout=60)


def test_clean_tree_passes(tmp_path):
    result = run_checker(make_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("check_includes: 8 files obey the module map")
    assert result.stdout.count("\n") == 1


def test_upward_include_is_reported_with_file_line_and_allowed_list(tmp_path):
    # model sits below analysis: including an analysis header from model runs the arrow backwards
    root = make_tree(tmp_path, extra={"src/model/loader.cc": '// loader\n#include "analysis/stats.h"\n'})
    result = run_checker(root)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        'src/model/loader.cc:2: includes "analysis/stats.h" (analysis), not allowed for model '
        "(allowed: core)"]
    assert "1 problem(s)" in result.stderr


def test_sub_folder_row_wins_over_its_parent(tmp_path):
    # analysis may not include its sub-module analysis/deep (deep depends on analysis, not back)
    root = make_tree(tmp_path, extra={"src/analysis/uses_deep.cc": '#include "analysis/deep/miner.h"\n'})
    result = run_checker(root)
    assert result.returncode == 1
    assert 'src/analysis/uses_deep.cc:1: includes "analysis/deep/miner.h" (analysis/deep), not ' \
           "allowed for analysis (allowed: core, model)" in result.stdout


def test_collector_cannot_reach_analysis_even_transitively(tmp_path):
    root = make_tree(tmp_path, extra={"src/collect/bad.h": '#include "model/trace.h"\n'})
    result = run_checker(root)
    assert result.returncode == 1
    assert '(model), not allowed for collect (allowed: core, include/strata)' in result.stdout


def test_angle_bracket_include_of_a_project_header_is_checked_too(tmp_path):
    root = make_tree(tmp_path, extra={"src/model/sneaky.cc": '#include <string>\n#include <analysis/stats.h>\n'})
    result = run_checker(root)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        'src/model/sneaky.cc:2: includes "analysis/stats.h" (analysis), not allowed for model '
        "(allowed: core)"]


def test_folder_without_row_is_an_error(tmp_path):
    root = make_tree(tmp_path, extra={"src/sample/sampler.cc": '#include "core/span.h"\n'})
    result = run_checker(root)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "src/sample/: no row in docs/architecture.md's module map; add "
        "| `src/sample/` | what it holds | may include |"]


def test_row_without_folder_and_unknown_module_name_are_errors(tmp_path):
    table = TABLE + "| `src/gone/` | removed long ago | core |\n" + \
        "| `src/export/` | exports | model, tables |\n"
    root = make_tree(tmp_path, table=table, extra={"src/export/csv.cc": ""})
    result = run_checker(root)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert any("row `src/gone/` names no folder" in line for line in lines)
    assert any(line.startswith("docs/architecture.md:15: row `export` may include 'tables', "
                               "which is not a folder of the table") for line in lines)
    assert "2 problem(s)" in result.stderr


def test_only_the_module_map_section_is_read_and_a_folder_has_one_row(tmp_path):
    table = TABLE + "| `src/model/` | again | core, analysis |\n" + \
        "\n## Exceptions\n\n| `src/cli/` | a row of another table | — |\n" + \
        "| `src/cli/main.cc` | a file, not a folder | — |\n"
    result = run_checker(make_tree(tmp_path, table=table))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "docs/architecture.md:14: row `src/model/` is already at line 9; keep one row per folder"]


def test_climbing_out_with_dot_dot_is_an_error(tmp_path):
    root = make_tree(tmp_path, extra={"src/analysis/climb.cc": '#include "../core/span.h"\n'})
    result = run_checker(root)
    assert result.returncode == 1
    assert result.stdout.startswith('src/analysis/climb.cc:1: includes "../core/span.h": climbs out')


def test_cycle_in_the_table_is_an_error(tmp_path):
    table = TABLE.replace("| `src/core/` | vocabulary | — |", "| `src/core/` | vocabulary | model |")
    result = run_checker(make_tree(tmp_path, table=table))
    assert result.returncode == 1
    assert "the table has a cycle through `core`" in result.stdout


def test_missing_map_is_an_error(tmp_path):
    result = run_checker(str(tmp_path))
    assert result.returncode == 1
    assert "architecture.md: not found" in result.stderr


def test_this_repository_obeys_its_module_map():
    result = run_checker(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "obey the module map" in result.stdout


AREAS = """
## Test, benchmark and fuzz areas

| folder | what it tests | may include |
|---|---|---|
| `tests/` | shared helpers | — |
| `tests/model/` | the trace | model |
| `tests/collect/` | the recorder | collect, model (reads back what it wrote) |
| `bench/analysis/` | analyses | analysis |
"""

AREA_SOURCES = {
    "tests/test_util.h": "",
    "tests/model/trace_test.cc": '#include "../test_util.h"\n#include "model/trace.h"\n#include "core/span.h"\n',
    "tests/collect/runtime_test.cc": '#include "collect/runtime.cc"\n#include "model/trace.h"\n',
    "bench/analysis/stats_bench.cc": '#include "analysis/stats.h"\n',
}


def test_areas_may_include_their_row_and_the_shared_helpers(tmp_path):
    result = run_checker(make_tree(tmp_path, table=TABLE + AREAS, extra=AREA_SOURCES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("check_includes: 12 files obey the module map")


def test_a_test_including_beyond_its_row_is_reported(tmp_path):
    extra = dict(AREA_SOURCES)
    extra["tests/model/reaches_up.cc"] = '#include "analysis/stats.h"\n'
    result = run_checker(make_tree(tmp_path, table=TABLE + AREAS, extra=extra))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        'tests/model/reaches_up.cc:1: includes "analysis/stats.h" (analysis), not allowed for '
        "tests/model (allowed: core, model)"]


def test_an_area_with_sources_and_no_row_is_an_error(tmp_path):
    extra = dict(AREA_SOURCES)
    extra["fuzz/format/fuzz_reader.cc"] = '#include "model/trace.h"\n'
    extra["tests/data/trace.json"] = "{}"  # data folders need no row
    result = run_checker(make_tree(tmp_path, table=TABLE + AREAS, extra=extra))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "fuzz/format/: holds sources but has no row in docs/architecture.md's 'Test, benchmark and "
        "fuzz areas' table; add | `fuzz/format/` | what it tests | may include |"]
