"""What a build says while it computes: each study, about how long, and the time left.

``computing(name)`` wraps one computation of the content-hash cache
(``mha.support.cache``). A study that takes a second or more is announced with its
place, an estimate and, in a cold build, the time left in all; when done it says its
wall and CPU time. The estimate is this machine's last time (``timings.json`` in the
cache), or else the study's CPU time in the last sealed cold build
(``mha/data/bench/studies.json``, written by ``make bench``) scaled by how fast this
machine has run this build's studies so far (their wall time over their sealed CPU
time). So a fresh clone, which has no timings of its own, gets an estimate for every
study.

A build and its second process (``mha_site.prefetch``) share one count: ``begin``
creates a file both update under a lock, named by ``$MHA_PROGRESS``, which the
second process inherits. Without it (a test, a notebook), each process counts alone.
Each study's own time (without the studies it asks for, nor the time spent waiting
for another process's) is what the scaling and the time left add up, so nothing is
counted twice. The cache's timings are kept per study in ``timings.json`` (wall
seconds) and ``timings-cpu.json`` (CPU seconds, its own and in all), from which
``make bench`` derives the sealed table.

```python
import os, tempfile
from mha.support import progress

os.environ["MHA_CACHE_DIR"] = tempfile.mkdtemp()
with progress.computing("demo study"):
    pass
assert "demo study" in progress.timings()
del os.environ["MHA_CACHE_DIR"]
```
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from filelock import FileLock

from mha.support import cache

ENV = "MHA_PROGRESS"
SEALED = Path(__file__).resolve().parent.parent / "data" / "bench" / "studies.json"
SHOWN_FROM = 1.0  # seconds: a study expected to take less is not announced
PRIOR = 10.0  # seconds of sealed work the machine is assumed to run at the sealed pace
# this process's open studies: [wall and CPU at their start, then the wall and CPU of
# the studies they asked for, and the seconds waited for another process's]
_OPEN: list[list[float]] = []
_ALONE: dict = {}  # the count of a process without a shared file


@functools.cache
def sealed() -> dict[str, dict[str, float]]:
    """Each study's CPU seconds in the last sealed cold build: ``{"cpu": in all,
    "own": without the studies it asked for}``; empty when the file is missing or
    its checksum does not match (then no estimate is printed, nothing fails).

    ```python
    from mha.support.progress import sealed

    assert all(entry["own"] <= entry["cpu"] + 0.01 for entry in sealed().values())
    ```
    """
    try:
        data = json.loads(SEALED.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    from mha.support.measured import checksum

    if data.get("checksum") != checksum(data):
        return {}
    return data.get("studies", {})


def begin(processes: int = 1) -> Path:
    """Start counting a build's studies in a file shared with the processes it
    starts (``$MHA_PROGRESS``); a cold build (an empty cache) also gets the time left.

    ```python
    import os, tempfile
    from mha.support import progress

    os.environ["MHA_CACHE_DIR"] = tempfile.mkdtemp()
    path = progress.begin(processes=2)
    assert os.environ[progress.ENV] == str(path) and progress.state()["cold"]
    del os.environ[progress.ENV], os.environ["MHA_CACHE_DIR"]
    ```
    """
    folder = cache.cache_dir() / "progress"
    cold = not any(cache.cache_dir().glob("*.pickle"))
    path = folder / f"{os.getpid()}-{time.time_ns()}.json"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.json"):  # builds of another day
            if old.stat().st_mtime < time.time() - 24 * 3600:
                old.unlink(missing_ok=True)
                old.with_suffix(".lock").unlink(missing_ok=True)
        path.write_text(json.dumps(_fresh(cold, processes)))
    except OSError:  # a read-only cache: each process counts alone
        return path
    os.environ[ENV] = str(path)
    return path


def set_processes(processes: int) -> None:
    """How many processes compute this build's studies (the time left divides by it).

    ```python
    import os, tempfile
    from unittest import mock

    from mha.support import progress

    with mock.patch.dict(os.environ, MHA_CACHE_DIR=tempfile.mkdtemp()):
        progress.begin(processes=1)
        progress.set_processes(2)
        assert progress.state()["processes"] == 2
    ```
    """
    _update(lambda state: state.update(processes=processes))


def state() -> dict:
    """The shared count (or this process's own): ``cold``, ``processes``, ``count``
    (studies announced), ``seen`` (studies begun), ``wall`` and ``sealed`` (the own
    wall seconds of the studies done and their sealed own CPU seconds).

    ```python
    import os, tempfile
    from unittest import mock

    from mha.support import progress

    empty = tempfile.mkdtemp()  # an empty cache: a cold build
    with mock.patch.dict(os.environ, MHA_CACHE_DIR=empty):
        progress.begin(processes=3)
        s = progress.state()
        assert s["cold"] and s["processes"] == 3 and s["count"] == 0 and s["seen"] == []
    ```
    """
    return _update(lambda state: None)


def _fresh(cold: bool, processes: int) -> dict:
    return {
        "cold": cold,
        "processes": processes,
        "count": 0,
        "seen": [],
        "wall": 0.0,
        "sealed": 0.0,
    }


def _update(change: Callable[[dict], None]) -> dict:
    """Apply ``change`` to the shared count under its lock (or to this process's)."""
    path = os.environ.get(ENV)
    if path:
        with contextlib.suppress(OSError, ValueError), FileLock(f"{path}.lock"):
            shared = json.loads(Path(path).read_text())
            change(shared)
            Path(path).write_text(json.dumps(shared))
            return shared
    if not _ALONE:
        cold = not (cache.cache_dir() / "timings.json").exists()
        _ALONE.update(_fresh(cold, 1))
    change(_ALONE)
    return _ALONE


def factor(shared: dict) -> float:
    """How much longer than the sealed CPU time this machine takes, from the studies
    done so far (1 before any, moving from there as they add up).

    ```python
    from mha.support.progress import factor

    assert factor({"wall": 0.0, "sealed": 0.0}) == 1.0
    assert factor({"wall": 190.0, "sealed": 90.0}) == 2.0
    ```
    """
    return (shared["wall"] + PRIOR) / (shared["sealed"] + PRIOR)


def seconds(value: float) -> str:
    """``value`` seconds, rounded as an estimate reads.

    ```python
    from mha.support.progress import seconds

    assert seconds(4.2) == "4 s" and seconds(125) == "2 min 5 s"
    ```
    """
    whole = round(value)
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{whole} s"


def timings(cpu: bool = False) -> dict:
    """This cache's last timing of each study: wall seconds (``timings.json``), or
    with ``cpu`` its CPU seconds, ``{"cpu": in all, "own": ...}``.

    ```python
    import os, tempfile
    from unittest import mock

    from mha.support import progress

    with mock.patch.dict(os.environ, MHA_CACHE_DIR=tempfile.mkdtemp()):
        progress.begin()
        assert progress.timings() == {}  # a fresh cache has timed nothing
        with progress.computing("demo study"):
            pass
        assert progress.timings()["demo study"] >= 0
        assert {"cpu", "own", "wall"} <= progress.timings(cpu=True)["demo study"].keys()
    ```
    """
    path = cache.cache_dir() / ("timings-cpu.json" if cpu else "timings.json")
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def estimate(name: str) -> float | None:
    """About how many seconds ``name`` takes here: its last time in this cache, or
    its sealed CPU time scaled by this build's pace; None if never timed.

    ```python
    from mha.support.progress import estimate

    assert estimate("a study no build ever ran") is None
    ```
    """
    last = timings().get(name)
    if last is not None:
        return last
    entry = sealed().get(name)
    return None if entry is None else _expected(entry) * factor(state())


def left() -> float | None:
    """About how many seconds of this cold build's studies are left (on the
    processes computing them); None unless the build is cold and sealed times exist.

    ```python
    import os, pathlib, tempfile
    from unittest import mock

    from mha.support import progress

    empty = tempfile.mkdtemp()  # an empty cache: a cold build
    with mock.patch.dict(os.environ, MHA_CACHE_DIR=empty):
        progress.begin(processes=1)
        alone = progress.left()
        progress.set_processes(2)
        assert alone > 0 and abs(progress.left() - alone / 2) < 1e-9
        warm = pathlib.Path(os.environ["MHA_CACHE_DIR"]) / "0a1b.pickle"
        warm.write_bytes(b"")  # a cache that holds a study: not a cold build
        progress.begin()
        assert progress.left() is None
    ```
    """
    shared, table = state(), sealed()
    if not (shared["cold"] and table):
        return None
    seen = set(shared["seen"])
    own = sum(e["own"] for study, e in table.items() if study not in seen)
    return own * factor(shared) / shared["processes"]


def _expected(entry: dict[str, float]) -> float:
    """A study's sealed seconds: its CPU time (a notebook's kernel's included). Not
    its wall time, which a busy machine stretched when the bench ran."""
    return entry["cpu"]


@contextlib.contextmanager
def computing(name: str) -> Iterator[None]:
    """Announce ``name`` (if it takes a second or more), time it, keep its timing.

    ```python
    import os, tempfile
    from unittest import mock

    from mha.support import progress

    with mock.patch.dict(os.environ, MHA_CACHE_DIR=tempfile.mkdtemp()):
        progress.begin()
        with progress.computing("demo study"):
            pass
        assert progress.state()["seen"] == ["demo study"]
        assert "demo study" in progress.timings()
    ```
    """
    last, table = timings().get(name), sealed()
    entry = table.get(name)
    expected = last if last is not None else entry and _expected(entry)
    shown = expected is None or expected >= SHOWN_FROM

    def start(shared: dict) -> None:
        shared["seen"] = sorted({*shared["seen"], name})
        shared["count"] += shown

    shared = _update(start)
    if shown:
        _announce(name, last, entry, shared, table)
    _OPEN.append([time.perf_counter(), _cpu(), 0.0, 0.0, 0.0])
    try:
        yield
    finally:  # a study that raised is not timed
        began_wall, began_cpu, nested_wall, nested_cpu, waits = _OPEN.pop()
    wall = time.perf_counter() - began_wall
    cpu = _cpu() - began_cpu
    if _OPEN:  # the study that asked for this one does not count it as its own
        _OPEN[-1][2] += wall
        _OPEN[-1][3] += cpu
        _OPEN[-1][4] += waits
    own_wall, own_cpu = wall - nested_wall, cpu - nested_cpu
    if entry is not None:

        def done(shared: dict) -> None:
            shared["wall"] += own_wall
            shared["sealed"] += entry["own"]

        _update(done)
    if wall >= SHOWN_FROM:  # this process's CPU (its BLAS threads' too): not the
        # time spent waiting for a study that another process computes
        print(
            f"[mha]   {name}: {wall:.1f} s, {cpu:.1f} CPU-s",
            file=sys.stderr,
            flush=True,
        )
    spent = {
        "cpu": round(cpu, 2),
        "own": round(own_cpu, 2),
        "wall": round(wall - waits, 2),
    }
    _keep(name, wall, spent)


def _cpu() -> float:
    """This process's CPU seconds and those of the processes it waited for (a
    notebook's kernel)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def waited(seconds: float) -> None:
    """``seconds`` spent waiting for another process's study: not the open study's
    own time.

    ```python
    import os, tempfile
    from unittest import mock

    from mha.support import progress

    with mock.patch.dict(os.environ, MHA_CACHE_DIR=tempfile.mkdtemp()):
        progress.begin()
        with progress.computing("waiting study"):
            progress.waited(5.0)
        spent = progress.timings(cpu=True)["waiting study"]
        assert spent["wall"] <= progress.timings()["waiting study"] - 5.0 + 0.01
    ```
    """
    if _OPEN:
        _OPEN[-1][2] += seconds
        _OPEN[-1][4] += seconds


def _announce(name: str, last, entry, shared: dict, table: dict) -> None:
    n = shared["count"]
    slow = sum(_expected(e) >= SHOWN_FROM for e in table.values())
    cold = shared["cold"] and table
    place = f"{n} of about {slow}" if cold and slow >= n else str(n)
    if last is not None:
        estimate = f"about {seconds(last)} last time"
    elif entry is not None:
        estimate = f"about {seconds(_expected(entry) * factor(shared))}"
    else:
        estimate = "not timed before"
    if cold:
        seen = set(shared["seen"])
        left = sum(e["own"] for study, e in table.items() if study not in seen)
        left = (left + (entry["own"] if entry else 0)) * factor(shared)
        estimate += f"; about {seconds(left / shared['processes'])} left in all"
    print(f"[mha] computing ({place}) {name}: {estimate}", file=sys.stderr, flush=True)


def _keep(name: str, wall: float, cpu: dict[str, float]) -> None:
    """Add ``name``'s timings to the cache's files (read again under the lock: the
    build's other process may have timed a study meanwhile)."""
    folder = cache.cache_dir()
    try:
        with FileLock(folder / "timings.lock"):
            for file, value in (
                ("timings.json", round(wall, 2)),
                ("timings-cpu.json", cpu),
            ):
                kept = {**timings(file == "timings-cpu.json"), name: value}
                data = json.dumps(kept, sort_keys=True, indent=0).encode()
                cache._store(folder / file, data)
    except OSError as error:  # a read-only folder: the timing is not kept
        cache._cannot_store(folder, error)
