"""`strata record` on a shared machine and at a terminal (issue 13, items 1, 5 and 6):

- Ctrl-C (SIGINT to the foreground process group) reaches a recorded Python program, which raises
  KeyboardInterrupt; the recorder exits with the shell's convention (128 + signal) and the trace is
  finished and loads.
- Another user cannot plant a parts directory, symbolic links or a forged stream: the victim's
  private files stay untouched and the victim's trace holds only the victim's processes. Run as
  root (CI): two unprivileged uids via setpriv; skipped otherwise.
"""
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time

import pytest

from conftest import BUILD_DIR, STRATA, SYSTEM_PYTHON, reachable_by_others, run_strata

INTERRUPTIBLE = r'''
import time, strata
try:
    with strata.span("before_interrupt"):
        pass
    strata.flush()
    with strata.span("interrupted"):
        print("ready", flush=True)
        time.sleep(30)
    print("sleep was not interrupted", flush=True)
except KeyboardInterrupt:
    strata.flush()
    print("KeyboardInterrupt raised", flush=True)
    raise
'''


def _default_sigint():
    # The recorder hands its command the dispositions it started with: start it with the default
    # one, whatever this test runner inherited (a background CI job may ignore SIGINT; a runner
    # started under nohup ignores SIGHUP).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def test_ctrl_c_through_the_process_group_interrupts_python_and_the_trace_loads(tmp_path, strata_bin):
    script = tmp_path / "interruptible.py"
    script.write_text(INTERRUPTIBLE)
    out = str(tmp_path / "interrupted.strata")
    # Its own session and process group, as a terminal's foreground job: Ctrl-C is SIGINT to the group.
    proc = subprocess.Popen([STRATA, "record", "-o", out, "--", SYSTEM_PYTHON, str(script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_default_sigint)
    assert proc.stdout.readline().strip() == "ready"
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail("the recorded program ignored Ctrl-C (SIGINT inherited as ignored)")
    stdout, stderr = proc.stdout.read(), proc.stderr.read()
    assert "KeyboardInterrupt raised" in stdout, stdout + stderr
    # Python ends an uncaught KeyboardInterrupt by dying of SIGINT; the recorder reports 128 + 2.
    assert proc.returncode == 128 + signal.SIGINT, stderr
    assert "killed by signal 2" in stderr
    assert "trace written to" in stderr
    spans = json.loads(run_strata("export", out, "--format", "json").stdout)
    names = {s["name"] for s in spans}
    assert {"before_interrupt", "interrupted"} <= names, names
    info = run_strata("info", out).stdout
    assert "killed by signal 2" in info


def test_signals_the_recorder_was_started_ignoring_stay_ignored_for_the_command(tmp_path, strata_bin):
    """As under a shell: `nohup strata record ...` keeps SIGHUP ignored for the command, and a
    background job's ignored SIGINT stays ignored; the default dispositions stay default."""
    probe = ("import signal\n"
             "name = {signal.SIG_IGN: 'ignored', signal.SIG_DFL: 'default', signal.default_int_handler: 'python'}\n"
             "print(name[signal.getsignal(signal.SIGHUP)], name[signal.getsignal(signal.SIGINT)])\n")

    def ignore_hup_and_int():
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    for preexec, expected in ((ignore_hup_and_int, "ignored ignored"), (_default_sigint, "default python")):
        out = str(tmp_path / f"{preexec.__name__}.strata")
        proc = subprocess.run([STRATA, "record", "-q", "-o", out, "--", SYSTEM_PYTHON, "-c", probe],
                              capture_output=True, text=True, timeout=60, preexec_fn=preexec)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == expected, proc.stdout


# --- two users ----------------------------------------------------------------------------------

VICTIM_UID = 23456      # an unprivileged uid with no account: setpriv needs none
ATTACKER_UID = 65534    # nobody


def _as_user(uid, args, env=None, check=True, timeout=120):
    command = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", *args]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} as uid {uid} failed ({proc.returncode}): {proc.stderr}")
    return proc


@pytest.fixture
def shared_dir():
    if os.geteuid() != 0:
        pytest.skip("the cross-user test needs root to run two unprivileged users (setpriv)")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    if not reachable_by_others(STRATA):
        pytest.skip(f"{STRATA} is not reachable by other users (a directory above it is not o+x)")
    base = tempfile.mkdtemp(prefix="strata-xuser-", dir="/tmp")
    os.chmod(base, 0o755)
    shared = os.path.join(base, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)  # like /tmp: world-writable, sticky
    home = os.path.join(base, "victim_home")
    os.mkdir(home)
    secret = os.path.join(home, "secret.txt")
    with open(secret, "w") as f:
        f.write("victim's private notes\n")
    os.chmod(secret, 0o600)
    os.chown(secret, VICTIM_UID, VICTIM_UID)
    os.chmod(home, 0o700)
    os.chown(home, VICTIM_UID, VICTIM_UID)
    try:
        yield shared, home, secret
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _forged_trace(path):
    """A valid trace of a process the victim never ran (its command line says FORGED)."""
    run_strata("record", "-q", "-o", path, "--", "/bin/sh", "-c", "exit 0", "FORGED")


def _victim_env(home):
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8"}
    return env


def test_another_user_cannot_plant_links_or_streams_in_the_parts_directory(shared_dir, strata_bin):
    shared, home, secret = shared_dir
    out = os.path.join(shared, "run.strata")
    forged = os.path.join(os.path.dirname(shared), "forged.strata")  # readable by both users
    _forged_trace(forged)
    os.chmod(forged, 0o644)
    # The attacker prepares OUT.parts (the name the old recorder used): sticky, so the victim
    # cannot clean it; links named after the next pids point at the victim's private file; and a
    # forged stream waits to be merged.
    planted = out + ".parts"
    last_pid = int(open("/proc/sys/kernel/ns_last_pid").read())
    plant = (f"import os, shutil\n"
             f"os.mkdir({planted!r}); os.chmod({planted!r}, 0o1777)\n"
             f"shutil.copy({forged!r}, {planted!r} + '/forged.strata')\n"
             f"for pid in range({last_pid + 1}, {last_pid + 3000}):\n"
             f"    os.symlink({secret!r}, f'{planted}/{{pid}}.strata')\n")
    _as_user(ATTACKER_UID, [SYSTEM_PYTHON, "-c", plant])
    # And a link at a second output name.
    linked_out = os.path.join(shared, "linked.strata")
    _as_user(ATTACKER_UID, ["ln", "-s", secret, linked_out])

    program = os.path.join(BUILD_DIR, "bin", "strata_test_program")
    command = ["/bin/sh", "-c", f"{program} spans 20; {program} spans 30"]
    victim = _as_user(VICTIM_UID, [STRATA, "record", "--keep-parts", "-o", out, "--", *command],
                      env=_victim_env(home), check=False)
    refused = _as_user(VICTIM_UID, [STRATA, "record", "-o", linked_out, "--force", "--", "/bin/true"],
                       env=_victim_env(home), check=False)

    with open(secret, "rb") as f:
        assert f.read() == b"victim's private notes\n", "the victim's private file was overwritten"
    assert refused.returncode != 0 and "symbolic link" in refused.stderr, refused.stderr
    assert victim.returncode == 0, victim.stderr
    st = os.lstat(out)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == VICTIM_UID
    info = run_strata("info", out).stdout
    assert "FORGED" not in info, "a forged stream was merged into the victim's trace"
    spans = json.loads(run_strata("export", out, "--format", "json").stdout)
    assert len(spans) == 50
    # The attacker's directory is left alone (not deleted, not used); the victim's was private.
    assert os.path.isdir(planted) and os.path.lexists(os.path.join(planted, "forged.strata"))
    work = [os.path.join(shared, d) for d in os.listdir(shared) if d.startswith("run.strata.parts.")]
    assert len(work) == 1, os.listdir(shared)
    wst = os.lstat(work[0])
    assert stat.S_ISDIR(wst.st_mode) and wst.st_uid == VICTIM_UID and stat.S_IMODE(wst.st_mode) == 0o700


def test_a_work_directory_swapped_to_another_owner_stops_the_run(shared_dir, strata_bin):
    """The recorder re-checks its work directory before merging: opened to others, it stops with a
    clear line and merges nothing."""
    shared, home, secret = shared_dir
    out = os.path.join(shared, "swap.strata")
    # The command itself opens the directory up (a stand-in for anything that changed it).
    command = ["/bin/sh", "-c", 'chmod 0777 "$STRATA_OUTPUT_DIR"']
    victim = _as_user(VICTIM_UID, [STRATA, "record", "-o", out, "--", *command], env=_victim_env(home),
                      check=False)
    assert victim.returncode != 0
    assert "not a private directory" in victim.stderr, victim.stderr
    assert not os.path.exists(out)
