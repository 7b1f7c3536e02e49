"""`strata attach -o DIR` on a shared machine (issue 32, item 3): the output directory follows the rules
of output files. Another user's directory (or a link planted at DIR) is refused; a DIR renamed and
replaced by a link while the attach runs is never written through (the directory is used through
the descriptor opened at start); files another user put in a sticky DIR are neither continued
(numbered after), nor removed by --max-disk, nor read by `strata profile DIR` / `strata info DIR`
(skipped, named and counted). Root attaches (perf_event on its own target) and an unprivileged uid
plays the other user, via setpriv; skipped with the reason when not root."""
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import STRATA, SYSTEM_PYTHON, reachable_by_others, run_strata

ATTACKER_UID = 65534  # nobody

BUSY = "import time\nt = time.time()\nwhile time.time() - t < {seconds}:\n    pass\n"


def _as_attacker(args, check=True):
    command = ["setpriv", f"--reuid={ATTACKER_UID}", f"--regid={ATTACKER_UID}", "--clear-groups", "--", *args]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} as uid {ATTACKER_UID} failed ({proc.returncode}): {proc.stderr}")
    return proc


@pytest.fixture
def base():
    if os.geteuid() != 0:
        pytest.skip("the cross-user attach tests need root (perf_event on the target, setpriv to a second uid)")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    if not reachable_by_others(STRATA):
        pytest.skip(f"{STRATA} is not reachable by other users (a directory above it is not o+x)")
    path = tempfile.mkdtemp(prefix="strata-attach-xuser-", dir="/tmp")
    os.chmod(path, 0o755)
    # Root's own directory, closed to others, with a file in it: what a link would lead to.
    private = os.path.join(path, "root_only")
    os.mkdir(private, 0o700)
    with open(os.path.join(private, "keep.txt"), "w") as f:
        f.write("root's file\n")
    try:
        yield path, private
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _busy_target(seconds):
    return subprocess.Popen([SYSTEM_PYTHON, "-c", BUSY.format(seconds=seconds)])


def _attach(pid, out, *extra, **kwargs):
    return subprocess.Popen([STRATA, "attach", str(pid), "--hz", "199", *extra, "-o", out],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def _listing(directory):
    return sorted(os.listdir(directory))


def test_attach_refuses_a_directory_another_user_owns_or_a_link(base, strata_bin):
    path, private = base
    shared = os.path.join(path, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)  # like /tmp
    planted = os.path.join(shared, "planted")
    _as_attacker(["mkdir", "-m", "0777", planted])
    linked = os.path.join(shared, "linked")
    _as_attacker(["ln", "-s", private, linked])
    target = _busy_target(3)
    try:
        for out, reason in ((planted, "belongs to another user"), (linked, "symbolic link")):
            proc = _attach(target.pid, out, "--epoch", "0.2", "--duration", "0.5")
            _, stderr = proc.communicate(timeout=60)
            assert proc.returncode == 1 and reason in stderr, (out, proc.returncode, stderr)
            assert stderr.count("\n") == 1, stderr
    finally:
        target.kill()
        target.wait()
    assert _listing(planted) == [], "root wrote epochs into a directory another user owns"
    assert _listing(private) == ["keep.txt"], "root wrote through a link planted at -o"


def test_a_directory_swapped_for_a_link_mid_run_is_never_written_through(base, strata_bin):
    path, private = base
    # The other user's directory holds root's output directory: they can rename it away and put a
    # link to root's private directory in its place while the attach runs.
    theirs = os.path.join(path, "theirs")
    os.mkdir(theirs, 0o755)
    os.chown(theirs, ATTACKER_UID, ATTACKER_UID)
    out = os.path.join(theirs, "epochs")
    target = _busy_target(8)
    try:
        proc = _attach(target.pid, out, "--epoch", "0.3", "--duration", "3", "--max-disk", "0.001")
        deadline = time.time() + 30
        while time.time() < deadline and not any(n.endswith(".strata") for n in
                                                 (os.listdir(out) if os.path.isdir(out) else [])):
            time.sleep(0.05)
        assert os.path.isdir(out), proc.stderr.read() if proc.poll() is not None else "no directory"
        _as_attacker(["mv", out, out + ".moved"])
        _as_attacker(["ln", "-s", private, out])
        _, stderr = proc.communicate(timeout=60)
    finally:
        target.kill()
        target.wait()
    assert proc.returncode == 0, stderr
    assert _listing(private) == ["keep.txt"], "epochs were written (or removed) through the link"
    with open(os.path.join(private, "keep.txt")) as f:
        assert f.read() == "root's file\n"
    # The epochs went on into the directory opened at start, wherever its name is now.
    moved = [n for n in _listing(out + ".moved") if n.endswith(".strata")]
    assert moved, _listing(out + ".moved")


def _forged_trace(path):
    """A valid trace the attacker made (its command line says FORGED)."""
    run_strata("record", "-q", "-o", path, "--", "/bin/sh", "-c", "exit 0", "FORGED")


def test_another_users_epoch_files_are_not_continued_removed_or_read(base, strata_bin):
    path, private = base
    out = os.path.join(path, "epochs")
    os.mkdir(out)
    os.chmod(out, 0o1777)  # root's, sticky: others may add files, never rename or remove root's
    forged = os.path.join(path, "forged.strata")
    _forged_trace(forged)
    os.chmod(forged, 0o644)
    secret = os.path.join(private, "keep.txt")
    target = _busy_target(6)
    try:
        name = lambda n: os.path.join(out, f"{target.pid}-epoch-{n:06d}.strata")
        _as_attacker(["cp", forged, name(50)])
        _as_attacker(["ln", "-s", secret, name(49)])
        forged_bytes = open(forged, "rb").read()
        proc = _attach(target.pid, out, "--epoch", "0.3", "--duration", "2", "--max-disk", "0.001")
        _, stderr = proc.communicate(timeout=60)
    finally:
        target.kill()
        target.wait()
    assert proc.returncode == 0, stderr
    # The other user's entries are left as they were.
    assert open(name(50), "rb").read() == forged_bytes, "the planted epoch file was removed or changed"
    assert os.stat(name(50)).st_uid == ATTACKER_UID
    assert os.path.islink(name(49)) and open(secret).read() == "root's file\n"
    assert "2 entries" in stderr and "left alone" in stderr, stderr
    # Root's epochs: numbered from 0 (not after the planted 50), the budget removed only its own.
    own = [n for n in _listing(out) if os.lstat(os.path.join(out, n)).st_uid == 0]
    assert own and all(n.startswith(f"{target.pid}-epoch-0000") for n in own), _listing(out)
    assert len(own) == 1, own  # --max-disk 0.001: only the newest of its own stays
    assert "removed by the disk budget" in stderr and " 0 removed" not in stderr, stderr
    # Reading the directory: root's files only; the others are named and counted.
    info = run_strata("info", out)
    assert "FORGED" not in info.stdout, "another user's file was read as part of root's trace"
    assert "not by this user; not read" in info.stdout + info.stderr, info.stdout + info.stderr
    profile = run_strata("profile", out, "--format", "json", check=False)
    assert profile.returncode == 0, profile.stderr
    assert "not by this user; not read" in profile.stderr and "a symbolic link, not read" in profile.stderr, \
        profile.stderr
