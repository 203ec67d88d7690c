"""Site-wide budgets, measured as a newcomer meets them: from a fresh clone.

Nothing is kept from an earlier build but the installed venv: the clone has no result
cache, no dequantised weights, no font cache. Measured, each with wall time and CPU
time (user + sys of the command and everything it ran):

- the cold build, quiet, and the same cold build while a second one (in another fresh
  clone) runs beside it: the ratio of the two wall times;
- the warm build (the same clone again);
- `make test`, the README's plain run;
- `make serve` on a fresh clone: the seconds from its start to the first page served
  (the home page; pages whose studies still compute say so and reload when ready),
  quiet and while a cold build runs beside it in another fresh clone;
- `make serve`: a prose edit, a page-code edit (a page module's caption) and a core
  edit (a docstring of the core, shown by the API reference), each from saving the
  file to the served page showing it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.cpu_time import become_subreaper, reap_orphans
from tests.serving import fetch, free_port, stop

ROOT = Path(__file__).resolve().parents[2]
BUDGETS = {
    "cold_build_s": 78,
    "cold_build_cpu_s": 135,
    "first_page_s": 30,
    "beside_ratio": 2.5,
    "warm_build_s": 15,
    "make_test_s": 180,
    "prose_edit_s": 2,
    "page_code_edit_s": 10,
}
# What `make build`, `make test` and `make serve` run, called directly: make itself
# would reinstall the shared venv from the clone's newer lock files.
BUILD = [sys.executable, "-m", "mkdocs", "build", "--strict", "-q"]
TEST = [sys.executable, "-m", "pytest", "-q"]
SERVE = [sys.executable, "-m", "mkdocs", "serve", "--dirty", "--no-strict"]
# (file, text replaced, page that shows it) for each edit under `make serve`
EDITS = {
    "prose_edit_s": ("docs/cricket.md", None, "cricket/"),
    "page_code_edit_s": (
        "src/mha/pages/cricket.py",
        "Look at the first group",
        "cricket/",
    ),
    "core_edit_s": (
        "src/mha/attention.py",
        "Numerically stable softmax along ``axis``",
        "reference/core/",
    ),
}


def _clone(folder: Path) -> Path:
    """A fresh clone of this repository's last commit."""
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(folder)], check=True)
    return folder


def _env(clone: Path) -> dict[str, str]:
    """The clone's own code and caches; the installed venv's packages. As the
    Makefile, with Python's bytecode written (PYTHONDONTWRITEBYTECODE unset)."""
    cache = clone / ".cache"
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {
        **environ,
        "PYTHONPATH": str(clone / "src"),
        "MHA_CACHE_DIR": str(cache / "results"),
        "MPLCONFIGDIR": str(cache / "matplotlib"),
        "IPYTHONDIR": str(cache / "ipython"),
        "JUPYTER_CONFIG_DIR": str(cache / "jupyter"),
        "JUPYTER_DATA_DIR": str(cache / "jupyter" / "data"),
        "SOURCE_DATE_EPOCH": "0",
        "NO_MKDOCS_2_WARNING": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


_STARTED: set[int] = set()  # the commands this process runs, never reaped as orphans
_ERRORS: dict[int, Path] = {}  # where each command started writes its errors


def _start(command: list[str], clone: Path) -> subprocess.Popen:
    """``command`` started in ``clone``; its errors written beside the clone, in the
    bench's temporary folder, so that a failure says why (``_finish``)."""
    errors = clone.parent / f"{clone.name}-{len(_ERRORS)}.stderr"
    with errors.open("w") as stderr:
        process = subprocess.Popen(
            command,
            cwd=clone,
            env=_env(clone),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    _STARTED.add(process.pid)
    _ERRORS[process.pid] = errors
    return process


def _finish(process: subprocess.Popen, started: float) -> tuple[float, float]:
    """Wall and CPU seconds (user + sys: the command, all it waited for and the
    orphans it left, see ``become_subreaper``); a command that failed raises with the
    last lines it wrote to its standard error."""
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    _STARTED.discard(process.pid)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        said = _ERRORS[process.pid].read_text(errors="replace").splitlines()[-20:]
        raise RuntimeError(
            f"{process.args} failed ({process.returncode}); its last lines:\n"
            + "\n".join(said)
        )
    return wall, usage.ru_utime + usage.ru_stime + reap_orphans(keep=_STARTED)


def _timed(command: list[str], clone: Path) -> tuple[float, float]:
    started = time.perf_counter()
    return _finish(_start(command, clone), started)


def _serving(clone: Path, port: int) -> subprocess.Popen:
    """`make serve` in ``clone`` on ``port``: mkdocs and the processes it starts in a
    group of their own, stopped together (``tests.serving.stop``)."""
    return subprocess.Popen(
        [*SERVE, "-a", f"127.0.0.1:{port}"],
        cwd=clone,
        env=_env(clone),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def first_page(clone: Path, timeout: float = 900.0) -> float:
    """Seconds from starting `make serve` in a fresh ``clone`` to its home page
    served whole (its studies may still compute: their pages say so)."""
    port = free_port()
    started = time.perf_counter()
    server = _serving(clone, port)
    try:
        while "</html>" not in fetch(f"http://127.0.0.1:{port}/"):
            if time.perf_counter() - started > timeout:
                raise TimeoutError("make serve served no page")
            time.sleep(0.1)
        return round(time.perf_counter() - started, 1)
    finally:
        stop(server)


def _serve_edits(clone: Path, timeout: float = 300.0) -> dict[str, float]:
    """Seconds from saving each edit to the page served by `make serve` showing it."""
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    server = _serving(clone, port)
    seconds = {}
    try:
        deadline = time.monotonic() + timeout
        while "</html>" not in fetch(base + "cricket/"):
            if time.monotonic() > deadline:
                raise TimeoutError("mkdocs serve did not come up")
            time.sleep(0.5)
        time.sleep(2.0)  # let the watcher settle after the first build
        for name, (path, old, page) in EDITS.items():
            file = clone / path
            marker = f"bench{time.time_ns()}"
            text = file.read_text()
            edited = text + f"\n<!-- {marker} -->\n" if old is None else None
            if old is not None:
                assert old in text, f"{path}: {old!r} not found; update the bench"
                edited = text.replace(old, f"{old} {marker}", 1)
            start = time.perf_counter()
            file.write_text(edited)
            while marker not in fetch(base + page):
                if time.perf_counter() - start > timeout:
                    raise TimeoutError(f"the {name} never reached {page}")
                time.sleep(0.05)
            seconds[name] = round(time.perf_counter() - start, 2)
            time.sleep(2.0)
    finally:
        stop(server)
    return seconds


# The quiet cold build's wall and CPU time and its studies' CPU times
# (tests/bench/studies.py seals them), once ``run`` has measured it in this process.
COLD: dict | None = None


def run() -> dict:
    global COLD
    become_subreaper()
    with tempfile.TemporaryDirectory() as tmp:
        first, second, third, fourth, fifth = (
            _clone(Path(tmp) / n) for n in ("a", "b", "c", "d", "e")
        )
        first_page_s = first_page(fourth)
        beside_build = _start(BUILD, fifth)  # the first page again, beside a cold build
        first_page_beside_s = first_page(_clone(Path(tmp) / "f"))
        _finish(beside_build, time.perf_counter())
        cold, cold_cpu = _timed(BUILD, first)
        cpu = json.loads(
            (first / ".cache" / "results" / "timings-cpu.json").read_text()
        )
        COLD = {"wall_s": round(cold, 1), "cpu_s": round(cold_cpu, 1), "studies": cpu}
        warm, _ = _timed(BUILD, first)
        started = time.perf_counter()  # two cold builds at once, in two fresh clones
        beside = [_start(BUILD, clone) for clone in (second, third)]
        beside_wall, beside_cpu = _finish(beside[0], started)
        _finish(beside[1], started)
        test, test_cpu = _timed(TEST, first)
        serve = _serve_edits(first)
    measured = {
        "cold_build_s": round(cold, 1),
        "cold_build_cpu_s": round(cold_cpu, 1),
        "beside_build_s": round(beside_wall, 1),
        "beside_build_cpu_s": round(beside_cpu, 1),
        "beside_ratio": round(beside_wall / cold, 2),
        "warm_build_s": round(warm, 1),
        "first_page_s": first_page_s,
        "first_page_beside_s": first_page_beside_s,
        "make_test_s": round(test, 1),
        "make_test_cpu_s": round(test_cpu, 1),
        **serve,
    }
    return {
        "measured": measured,
        "budgets": BUDGETS,
        "within_budget": {k: measured[k] <= v for k, v in BUDGETS.items()},
        "method": "fresh clones of the commit, the installed venv only; CPU = user + "
        "sys of the command, all it waited for and the orphans it left, adopted "
        "with PR_SET_CHILD_SUBREAPER (os.wait4)",
    }
