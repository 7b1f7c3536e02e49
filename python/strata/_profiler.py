"""strata.profile / strata.schedule: torch.profiler's control flow over Strata's start/stop/level.

    with strata.profile(schedule=strata.schedule(wait=1, warmup=1, active=2, repeat=2),
                        on_trace_ready=lambda path: print(path)) as prof:
        for step in range(10):
            train_step()
            prof.step()

Steps are counted from 0 at `with`; prof.step() ends one and begins the next. The schedule gives
each step an action, exactly as torch.profiler.schedule does (skip_first, then cycles of `wait`
steps doing nothing, `warmup` steps, `active` steps; `repeat` cycles, 0 = until the end).

How windows map to files: every window (its warmup steps and active steps) is recorded by a Strata
session of its own, `strata.start(path)` at the window's first step and `strata.stop()` after its
last active step, into ``<dir>/<prefix>-<pid>-w<N>.strata`` (N counts saved windows from 0). During warmup
the session runs with its level gate closed (nothing is written); the active steps record down to
`level`, each inside a span ``ProfilerStep#<step>`` at level "iteration" (as torch.profiler's
record_function). After the stop the file is complete and on_trace_ready(path) is called; the paths
are also listed in prof.traces. A window cut short by the end of the `with` block is saved the same
way; a window that never reached an active step is discarded.

In a plain process, each window records what `strata.start` records there: PyTorch ops from layer level
on; deeper levels that need `strata record` are said in one line on stderr and listed in
`profile.not_recorded` (strata/_inprocess.py).

Inside `strata record` (the process is already recording): the profile stops that recording when
its first window begins (the record's trace keeps what came before, as usual) and the windows go
to their own files as above; `dir` defaults to a ``strata-profile-<pid>`` folder in the current
directory in every case.
"""

from __future__ import annotations

import enum
import os
import sys
from typing import Any, Callable, Dict, List, Optional

import strata


class ProfilerAction(enum.Enum):
    """What a step does (the names and meaning of torch.profiler.ProfilerAction)."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0,
             skip_first: int = 0) -> Callable[[int], ProfilerAction]:
    """The action of each step, as torch.profiler.schedule: after `skip_first` steps, cycles of
    `wait` idle steps, `warmup` steps and `active` recorded steps (the last one saves), `repeat`
    times (0: as long as the steps go on)."""
    for name, value in (("wait", wait), ("warmup", warmup), ("repeat", repeat), ("skip_first", skip_first)):
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"strata.schedule: {name} must be an integer >= 0, not {value!r}")
    if not isinstance(active, int) or active < 1:
        raise ValueError(f"strata.schedule: active must be an integer >= 1, not {active!r}")

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    action.__doc__ = f"strata.schedule(wait={wait}, warmup={warmup}, active={active}, repeat={repeat}, " \
                     f"skip_first={skip_first})"
    return action


def _as_action(value: Any) -> ProfilerAction:
    # torch.profiler.schedule's actions work too: same names.
    if isinstance(value, ProfilerAction):
        return value
    try:
        return ProfilerAction[getattr(value, "name", str(value))]
    except KeyError:
        raise ValueError(f"strata.profile: the schedule returned {value!r}, not a ProfilerAction") from None


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


class profile:  # noqa: N801 - named as torch.profiler.profile
    """Records windows of steps chosen by a schedule, one trace file per window (module docstring).

    schedule: a function step -> ProfilerAction (strata.schedule(...) or torch.profiler.schedule(...));
        None records every step in one window, saved when the block ends.
    on_trace_ready: called with the path of each window's trace once it is complete.
    dir: where the files go (created if missing; default ./strata-profile-<pid>).
    level: the deepest level recorded in active steps (default: the level the process is recorded
        at, else "layer").
    prefix: the files' name prefix (default "window").
    """

    def __init__(self, *, schedule: Optional[Callable[[int], Any]] = None,
                 on_trace_ready: Optional[Callable[[str], Any]] = None, dir: Optional[str] = None,
                 level: Any = None, prefix: str = "window") -> None:
        self.schedule = schedule if schedule is not None else _always_record
        self.on_trace_ready = on_trace_ready
        self.dir = os.path.abspath(dir if dir is not None else f"strata-profile-{os.getpid()}")
        self.level = level
        self.prefix = prefix
        self.traces: List[str] = []
        self.step_num = 0
        self._action = ProfilerAction.NONE
        self._window = 0
        self._path: Optional[str] = None  # the open window's file
        self._step_span = 0
        self._level_value = 0
        # What the windows' level asks for but this process cannot record: level name -> why (said
        # on stderr by strata.start; module docstring of strata/_inprocess.py).
        self.not_recorded: Dict[str, str] = {}
        self._running = False  # between start() and stop()
        self._traces_at_start = 0

    # -- torch.profiler's surface ---------------------------------------------------------------
    def __enter__(self) -> "profile":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> None:
        if strata._lib is None:
            raise RuntimeError("strata.profile: libstrata.so not found: install Strata (or set STRATA_LIB)")
        if self.level is not None:
            self._level_value = strata._level(self.level)
        else:
            self._level_value = strata.get_level() or strata.LEVELS["layer"]
        self.step_num = 0
        self._action = ProfilerAction.NONE
        self._running = True
        self._traces_at_start = len(self.traces)
        self._enter(_as_action(self.schedule(0)))

    def step(self) -> None:
        """Ends the current step and begins the next (call it once per iteration)."""
        self._end_step_span()
        previous = self._action
        self.step_num += 1
        current = _as_action(self.schedule(self.step_num))
        if previous in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE) and (
                previous == ProfilerAction.RECORD_AND_SAVE or current in (ProfilerAction.NONE, ProfilerAction.WARMUP)):
            self._save()
        elif previous == ProfilerAction.WARMUP and current == ProfilerAction.NONE:
            self._discard()
        self._enter(current)

    def stop(self) -> None:
        """Ends the profile: a window with active steps is saved, one still warming up discarded."""
        self._end_step_span()
        if self._path is not None:
            if self._action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
                self._save()
            else:
                self._discard()
        if self._running and len(self.traces) == self._traces_at_start:
            sys.stderr.write(f"strata.profile: no trace written: the schedule made none of the {self.step_num + 1} "
                             "steps active\n")
        self._running = False
        self._action = ProfilerAction.NONE

    # -- windows --------------------------------------------------------------------------------
    def _enter(self, action: ProfilerAction) -> None:
        if action != ProfilerAction.NONE and self._path is None:
            self._open_window()
        self._action = action
        if action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            strata.set_level(self._level_value)
            self._step_span = strata.begin(f"ProfilerStep#{self.step_num}", "iteration",
                                           step=self.step_num, window=self._window)
        elif action == ProfilerAction.WARMUP:
            strata.set_level(0)  # the session runs (its start-up cost paid) but writes nothing

    def _open_window(self) -> None:
        if strata.is_recording():
            sys.stderr.write("strata.profile: stopping the recording already running in this process; "
                             f"the profile's windows go to {self.dir}\n")
            strata.stop()
        os.makedirs(self.dir, exist_ok=True)
        path = os.path.join(self.dir, f"{self.prefix}-{os.getpid()}-w{self._window}.strata")
        if os.path.lexists(path):
            raise FileExistsError(f"strata.profile: {path} exists: pass another dir= or prefix=")
        # Started at the window's level (the file's level_gate says what was traced); a warmup step
        # closes the gate right after (_enter).
        if not strata.start(path, self._level_value):
            raise RuntimeError(f"strata.profile: cannot record into {path} (strata said why above)")
        self._path = path
        self.not_recorded.update(strata.not_recorded())

    def _end_step_span(self) -> None:
        if self._step_span:
            strata.end(self._step_span)
            self._step_span = 0

    def _save(self) -> None:
        path = self._path
        self.not_recorded.update(strata.not_recorded())  # e.g. torch imported during the window, tracer failed
        strata.stop()
        self._path = None
        self._window += 1
        self.traces.append(path)
        if self.on_trace_ready is not None:
            self.on_trace_ready(path)

    def _discard(self) -> None:
        path = self._path
        strata.stop()
        self._path = None  # the window's number is used again by the next window
        try:
            os.unlink(path)
        except OSError:
            pass
