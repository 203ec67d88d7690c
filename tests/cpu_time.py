"""CPU time of a command and of everything it started: `make test` prints it beside
its wall time, and `make bench` measures each command with it.

A process's CPU time for its children (``getrusage``) counts the processes it waited
for. A process left running is re-parented, and its time is lost: Chromium's
renderers outlive the browsers the browser tests close. A subreaper (Linux
``PR_SET_CHILD_SUBREAPER``) adopts such orphans; ``reap_orphans`` waits for them, so
that they are counted too.

The hooks below make pytest's controller (the process that starts the xdist
workers) such a subreaper and print, at the end of the run, the wall time and the CPU
time (user + sys) of pytest, its workers and every process they started.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys
import time
from collections.abc import Collection
from pathlib import Path

import pytest


def become_subreaper() -> bool:
    """Adopt this process's orphaned descendants; False where the system cannot
    (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:  # 36: PR_SET_CHILD_SUBREAPER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
    return True


def reap_orphans(grace: float = 10.0, keep: Collection[int] = ()) -> float:
    """CPU seconds (user + sys) of the adopted orphans that exit within ``grace``
    seconds, each reaped; the children in ``keep`` (commands the caller waits for
    itself) are left alone."""
    cpu, deadline = 0.0, time.monotonic() + grace
    while True:
        try:
            found = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return cpu  # no children at all
        if found is not None and found.si_pid not in keep:
            cpu += sum(os.wait4(found.si_pid, 0)[2][:2])  # ru_utime + ru_stime
            continue
        if time.monotonic() > deadline or not _orphans_left(keep):
            return cpu
        time.sleep(0.1)


def _orphans_left(keep: Collection[int]) -> bool:
    """Whether a child of this process not in ``keep`` is still alive."""
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    return bool({int(p) for p in children.read_text().split()} - set(keep))


def spent() -> float:
    """CPU seconds (user + sys) of this process and of the children it waited for."""
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


_RUN: dict[str, float | bool] = {}


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller, or a run without workers
        _RUN.update(started=time.perf_counter(), adopting=become_subreaper())


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or not _RUN:
        return
    if _RUN["adopting"]:
        reap_orphans(grace=2.0)  # counted by spent() once reaped
    wall = time.perf_counter() - _RUN["started"]
    counted = (
        "" if _RUN["adopting"] else "; processes left running are not counted here"
    )
    terminalreporter.write_line(
        f"wall {wall:.1f} s, CPU {spent():.1f} s (user + sys of pytest, its workers and "
        f"every process they started{counted})"
    )
