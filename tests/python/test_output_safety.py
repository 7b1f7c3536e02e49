"""Every file a command writes is written as `record`, `import` and `export` write theirs (issue 13,
item 1): never through a symbolic link planted at the target, an existing file replaced only with
--force. Covers `analyze --output DIR` and `iterations --emit OUT` (lowerbound --dot/--svg: in
test_lowerbound_cli.py)."""
import os

from conftest import run_strata

HERE = os.path.dirname(os.path.abspath(__file__))
KINETO = os.path.join(HERE, "..", "data", "kineto", "a100_alexnet_train.json.gz")


def _victim(tmp_path):
    victim = tmp_path / "private.txt"
    victim.write_text("precious\n")
    return victim


def test_analyze_output_refuses_links_and_existing_files_without_force(tmp_path, strata_bin):
    out = tmp_path / "tables"
    args = ("analyze", KINETO, "--analysis", "kernels_by_name", "--format", "csv", "--output", str(out))
    run_strata(*args)
    table = out / "kernels_by_name.csv"
    first = table.read_text()
    assert first.count("\n") > 2
    again = run_strata(*args, check=False)
    assert again.returncode == 1 and "exists; pass --force" in again.stderr and str(table) in again.stderr
    assert table.read_text() == first
    run_strata(*args, "--force")
    assert table.read_text() == first
    # A link planted where the table goes: refused even with --force, its target untouched.
    victim = _victim(tmp_path)
    table.unlink()
    table.symlink_to(victim)
    planted = run_strata(*args, "--force", check=False)
    assert planted.returncode == 1 and "symbolic link" in planted.stderr
    assert victim.read_text() == "precious\n" and table.is_symlink()


def test_iterations_emit_refuses_links_and_existing_files_without_force(tmp_path, strata_bin):
    emitted = tmp_path / "with_iterations.strata"
    run_strata("iterations", KINETO, "--emit", str(emitted))
    size = emitted.stat().st_size
    assert size > 0
    again = run_strata("iterations", KINETO, "--emit", str(emitted), check=False)
    assert again.returncode == 1 and "exists; pass --force" in again.stderr
    assert emitted.stat().st_size == size
    run_strata("iterations", KINETO, "--emit", str(emitted), "--force")
    assert run_strata("info", str(emitted)).returncode == 0
    victim = _victim(tmp_path)
    link = tmp_path / "link.strata"
    link.symlink_to(victim)
    planted = run_strata("iterations", KINETO, "--emit", str(link), "--force", check=False)
    assert planted.returncode == 1 and "symbolic link" in planted.stderr
    assert victim.read_text() == "precious\n"


def test_analyze_output_directory_is_never_a_link(tmp_path, strata_bin):
    """The tables' directory follows the rules of outputs (issue 32): a link at --output is refused
    (the directory it points at gets nothing), with or without --force."""
    victim_dir = tmp_path / "private"
    victim_dir.mkdir()
    (victim_dir / "keep.txt").write_text("precious\n")
    link = tmp_path / "tables"
    link.symlink_to(victim_dir)
    for extra in ((), ("--force",)):
        planted = run_strata("analyze", KINETO, "--analysis", "kernels_by_name", "--format", "csv",
                             "--output", str(link), *extra, check=False)
        assert planted.returncode == 1 and "symbolic link" in planted.stderr, planted.stderr
    assert sorted(os.listdir(victim_dir)) == ["keep.txt"]
