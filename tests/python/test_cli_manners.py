"""The CLI's manners (issue 19 item 4): one usage style for every command (CLI11), --help of each,
a bad option or value as one line and exit code 2, --quiet/--verbose, overwrite protection of every
output, .gz outputs read back, man pages and bash completion."""
import gzip
import os
import shutil
import subprocess

import pytest

from conftest import BUILD_DIR, STRATA, run_strata

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
KINETO = os.path.join(HERE, "..", "data", "kineto", "a100_alexnet_train.json.gz")
COMPLETION = os.path.join(SRC, "scripts", "strata_completion.bash")


def commands():
    """The commands `strata --help` lists (a build without a module lists fewer)."""
    out = run_strata("--help").stdout.splitlines()
    start = out.index("commands:") + 1
    names = []
    for line in out[start:]:
        if not line.startswith("  "):
            break
        names.append(line.split()[0])
    return names


def invocations():
    """Every command line that has its own --help: bench has two modes."""
    result = []
    for c in commands():
        result += [["bench", "generate"], ["bench", "run"]] if c == "bench" else [[c]]
    return result


def test_version(strata_bin):
    p = run_strata("--version")
    assert p.stdout.startswith("strata ") and p.stdout.count("\n") == 1


def test_every_command_has_help_with_the_common_flags(strata_bin):
    names = commands()
    for expected in ("record", "info", "export", "analyze", "merge", "sql", "diff"):
        assert expected in names
    for argv in invocations():
        p = run_strata(*argv, "--help", check=False)
        assert p.returncode == 0, (argv, p.stderr)
        assert p.stdout.startswith(" ".join(["strata", *argv])) or "Usage: strata " + " ".join(argv) in p.stdout, p.stdout
        assert "-q,--quiet" in p.stdout and "-v,--verbose" in p.stdout, (argv, p.stdout)
        assert p.stderr == ""


def test_a_bad_option_is_one_line_and_exit_code_2(strata_bin):
    for argv in invocations():
        p = run_strata(*argv, "--no-such-option", KINETO, check=False)
        assert p.returncode == 2, (argv, p.stderr)
        assert p.stdout == ""
        lines = p.stderr.splitlines()
        assert len(lines) == 1, (argv, p.stderr)
        assert lines[0].startswith(f"strata {argv[0]}: unknown option --no-such-option"), lines[0]
        assert f"strata {argv[0]} --help" in lines[0]


@pytest.mark.parametrize("argv, names", [
    (["analyze", "--format", "xml", KINETO], "--format"),
    (["export", "-f", "pdf", KINETO], "--format"),
    (["record", "--runs", "0", "--", "true"], "--runs"),
    (["record", "--level", "everything", "--", "true"], "--level"),
    (["record", "--sample=0", "--", "true"], "--sample"),
    (["merge", "--reference-rank", "-3", KINETO, "-o", "x.strata"], "--reference-rank"),
    (["diff", "--alpha", "2", KINETO, KINETO], "--alpha"),
    (["profile", "--top", "many", KINETO], "--top"),
    (["attach", "--hz", "0", "1", "-o", "d"], "--hz"),
    (["import", "--zstd", "99", KINETO], "--zstd"),
    (["export", KINETO, "--quiet", "--verbose"], "--quiet"),
])
def test_a_bad_value_is_one_line_naming_the_option(strata_bin, argv, names, tmp_path):
    p = run_strata(*argv, check=False, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.splitlines()) == 1 and names in p.stderr, p.stderr
    assert not (tmp_path / "x.strata").exists()


def test_quiet_prints_only_errors_and_verbose_says_what_was_read(strata_bin, tmp_path):
    quiet = run_strata("import", KINETO, "-o", str(tmp_path / "q.strata"), "--quiet")
    assert quiet.stdout == "" and quiet.stderr == ""
    normal = run_strata("import", KINETO, "-o", str(tmp_path / "n.strata"))
    assert "imported" in normal.stdout
    verbose = run_strata("export", str(tmp_path / "n.strata"), "--format", "csv", "--verbose")
    assert "with the native reader" in verbose.stderr and "span(s)" in verbose.stderr, verbose.stderr
    verbose = run_strata("analyze", KINETO, "-a", "kernels_by_name", "-v")
    assert "reader" in verbose.stderr and "ran 1 analyses" in verbose.stderr, verbose.stderr
    # Not a terminal: no progress line (no carriage return, no erase sequence).
    assert "\r" not in verbose.stderr and "\x1b[K" not in verbose.stderr


def _outputs(tmp_path):
    """Each output-writing command: (argv writing `target`, target)."""
    native = str(tmp_path / "in.strata")
    run_strata("import", KINETO, "-o", native, "-q")
    t = lambda name: str(tmp_path / name)  # noqa: E731
    sampled = t("sampled.strata")
    run_strata("record", "-q", "--sample", "-o", sampled, "--", "/usr/bin/python3", "-c", "sum(range(10**7))")
    return [
        (["profile", sampled, "--format", "collapsed", "-o", t("p.txt")], t("p.txt")),
        (["export", native, "--format", "csv", "-o", t("e.csv")], t("e.csv")),
        (["export", native, "--format", "sqlite", "-o", t("e.sqlite")], t("e.sqlite")),
        (["import", KINETO, "-o", t("i.strata"), "-q"], t("i.strata")),
        (["merge", native, "-o", t("m.strata"), "-q"], t("m.strata")),
        (["iterations", native, "--emit", t("it.strata"), "-q"], t("it.strata")),
        (["sql", native, "SELECT count(*) FROM spans", "-o", t("s.txt")], t("s.txt")),
        (["analyze", native, "-a", "kernels_by_name", "-f", "csv", "-o", t("tables")],
         t("tables/kernels_by_name.csv")),
        (["record", "-q", "-o", t("r.strata"), "--", "true"], t("r.strata")),
    ]


def test_every_output_is_replaced_only_with_force(strata_bin, tmp_path):
    for argv, target in _outputs(tmp_path):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as f:
            f.write("precious\n")
        refused = run_strata(*argv, check=False)
        assert refused.returncode != 0, argv
        assert "exists; pass --force" in refused.stderr and target in refused.stderr, (argv, refused.stderr)
        assert open(target).read() == "precious\n", argv
        replaced = run_strata(argv[0], "--force", *argv[1:], check=False)  # before record's CMD
        assert replaced.returncode == 0, (argv, replaced.stderr)
        assert open(target, "rb").read() != b"precious\n", argv


@pytest.mark.parametrize("argv", [
    ["export", KINETO, "--format", "chrome"],
    ["export", KINETO, "--format", "csv"],
    ["export", KINETO, "--format", "json"],
    ["sql", KINETO, "SELECT name, count(*) FROM spans GROUP BY name ORDER BY name", "--format", "csv"],
])
def test_a_gz_output_is_the_plain_output_gzipped(strata_bin, tmp_path, argv):
    plain, packed = tmp_path / "out.txt", tmp_path / "out.txt.gz"
    run_strata(*argv, "-o", str(plain))
    run_strata(*argv, "-o", str(packed))
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes() and plain.stat().st_size > 0
    if shutil.which("gzip"):
        assert subprocess.run(["gzip", "-dc", str(packed)], capture_output=True, check=True).stdout == \
            plain.read_bytes()
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")], "temporary files left behind"


def test_analyze_gzip_tables_and_sqlite_gz(strata_bin, tmp_path):
    run_strata("analyze", KINETO, "-a", "kernels_by_name", "-f", "csv", "-o", str(tmp_path / "plain"))
    run_strata("analyze", KINETO, "-a", "kernels_by_name", "-f", "csv", "-o", str(tmp_path / "gz"), "--gzip")
    plain = (tmp_path / "plain" / "kernels_by_name.csv").read_bytes()
    assert gzip.decompress((tmp_path / "gz" / "kernels_by_name.csv.gz").read_bytes()) == plain
    run_strata("export", KINETO, "--format", "sqlite", "-o", str(tmp_path / "t.sqlite.gz"))
    (tmp_path / "t.sqlite").write_bytes(gzip.decompress((tmp_path / "t.sqlite.gz").read_bytes()))
    counted = run_strata("sql", str(tmp_path / "t.sqlite"), "SELECT count(*) AS n FROM spans", "-f", "csv")
    assert int(counted.stdout.splitlines()[1]) > 100


def test_a_native_trace_is_never_gzipped(strata_bin, tmp_path):
    for argv in (["import", KINETO, "-o", str(tmp_path / "t.strata.gz")],
                 ["merge", KINETO, "-o", str(tmp_path / "t.strata.gz")],
                 ["record", "-o", str(tmp_path / "t.strata.gz"), "--", "true"]):
        p = run_strata(*argv, check=False)
        assert p.returncode == 2 and "not gzip-compressed" in p.stderr, (argv, p.stderr)
        assert len(p.stderr.splitlines()) == 1
        assert not (tmp_path / "t.strata.gz").exists()


def test_man_pages_are_built_for_every_command(strata_bin):
    man_dir = os.path.join(BUILD_DIR, "share", "man", "man1")
    if not shutil.which("help2man"):
        pytest.skip("help2man not installed (scripts/setup.sh installs it)")
    pages = set(os.listdir(man_dir))
    assert "strata.1.gz" in pages
    for c in commands():
        assert f"strata-{c}.1.gz" in pages, c
    text = gzip.open(os.path.join(man_dir, "strata-analyze.1.gz"), "rt").read()
    assert ".TH STRATA-ANALYZE" in text and "\\-\\-quiet" in text
    if shutil.which("man"):
        shown = subprocess.run(["man", "-l", os.path.join(man_dir, "strata-export.1.gz")], capture_output=True,
                               text=True, env={**os.environ, "MANPAGER": "cat", "PAGER": "cat"})
        assert shown.returncode == 0 and "--format" in shown.stdout


def _complete(words):
    script = (f"source '{COMPLETION}'; complete -p strata >/dev/null || exit 3; "
              f"COMP_WORDS=({' '.join(words)}); COMP_CWORD={len(words) - 1}; _strata; "
              'printf "%s\\n" "${COMPREPLY[@]}"')
    env = {**os.environ, "PATH": os.path.dirname(STRATA) + os.pathsep + os.environ["PATH"]}
    p = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    return [w for w in p.stdout.splitlines() if w]


def test_bash_completion(strata_bin):
    assert _complete(["strata", "ana"]) == ["analyze"]
    assert set(_complete(["strata", "an"])) == {"analyze", "annotate"}
    assert set(_complete(["strata", "i"])) >= {"info", "iterations"}
    assert _complete(["strata", "analyze", "--outp"]) == ["--output"]
    assert "--force" in _complete(["strata", "export", "--f"])
    assert _complete(["strata", "bench", "g"]) == ["generate"]


BRANCH_NET = os.path.join(HERE, "..", "lowerbound", "data", "branch_net.onnx")


def test_bench_generate_writes_into_a_non_empty_directory_only_with_force(strata_bin, tmp_path):
    if "bench" not in commands():
        pytest.skip("built without the lowerbound module")
    out = tmp_path / "benchmarks"
    out.mkdir()
    (out / "notes.txt").write_text("precious\n")
    refused = run_strata("bench", "generate", BRANCH_NET, "-o", str(out), check=False)
    assert refused.returncode == 1 and "pass --force" in refused.stderr, refused.stderr
    assert sorted(os.listdir(out)) == ["notes.txt"]
    run_strata("bench", "generate", BRANCH_NET, "-o", str(out), "--force")
    assert "CMakeLists.txt" in os.listdir(out) and (out / "notes.txt").read_text() == "precious\n"


def test_lowerbound_dot_gz_is_the_plain_dot_gzipped(strata_bin, tmp_path):
    if "lowerbound" not in commands():
        pytest.skip("built without the lowerbound module")
    db = ["--db", str(tmp_path / "perf.sqlite")]
    # Every layer measured (noise allowed: the bound's value does not matter here, only its files).
    run_strata("bench", "run", BRANCH_NET, *db, "--repetitions", "3", "--min-time-ms", "1", "--max-spread", "10")
    plain = run_strata("lowerbound", BRANCH_NET, *db, "--dot", str(tmp_path / "cp.dot"), check=False)
    packed = run_strata("lowerbound", BRANCH_NET, *db, "--dot", str(tmp_path / "cp.dot.gz"), check=False)
    assert plain.returncode == packed.returncode, (plain.stderr, packed.stderr)
    assert plain.returncode == 0, plain.stderr
    assert gzip.decompress((tmp_path / "cp.dot.gz").read_bytes()) == (tmp_path / "cp.dot").read_bytes()


def test_short_options_take_their_value_after_an_equals_sign_as_before(strata_bin, tmp_path):
    run_strata("export", KINETO, "-f=csv", f"-o={tmp_path / 'a.csv'}")
    run_strata("export", KINETO, "--format=csv", f"--output={tmp_path / 'b.csv'}")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert not (tmp_path / "=").exists() and (tmp_path / "a.csv").stat().st_size > 0
