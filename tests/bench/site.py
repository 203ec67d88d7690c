"""Site-wide budgets: cold and warm build, `make test`, a prose edit under `make serve`.

The project's budgets: cold build <= 90 s, warm build <= 15 s, `make test` <= 300 s,
a prose edit shown by `make serve` (`mkdocs serve --dirty`) <= 3 s.
"""

from __future__ import annotations

import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from mha.support.cache import cache_dir

ROOT = Path(__file__).resolve().parents[2]
BUDGETS_S = {"cold_build": 90, "warm_build": 15, "make_test": 300, "dirty_edit": 3}
EDITED_PAGE = ROOT / "docs" / "cricket.md"
EDITED_URL = "cricket/"


def _env() -> dict[str, str]:
    return {**os.environ, "SOURCE_DATE_EPOCH": "0", "NO_MKDOCS_2_WARNING": "1"}


def _timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=_env(), check=True, capture_output=True)
    return time.perf_counter() - start


def _build(site: Path) -> float:
    return _timed(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)]
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.read().decode()
    except OSError:
        return ""


def _dirty_edit_seconds(timeout: float = 120.0) -> float:
    """Seconds from saving a prose edit to the page served by `make serve` showing it."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/{EDITED_URL}"
    server = subprocess.Popen(
        ["make", "serve", f"ADDR=127.0.0.1:{port}"],  # the README's command, as is
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # make and mkdocs in one group, stopped together
    )
    original = EDITED_PAGE.read_text()
    try:
        deadline = time.monotonic() + timeout
        while "</html>" not in _fetch(url):
            if time.monotonic() > deadline:
                raise TimeoutError("mkdocs serve did not come up")
            time.sleep(0.2)
        time.sleep(1.0)  # let the watcher settle after the first build
        marker = f"bench-edit-{time.time_ns()}"
        start = time.perf_counter()
        EDITED_PAGE.write_text(original + f"\n<!-- {marker} -->\n")
        while marker not in _fetch(url):
            if time.perf_counter() - start > timeout:
                raise TimeoutError("the edit never reached the served page")
            time.sleep(0.05)
        return time.perf_counter() - start
    finally:
        EDITED_PAGE.write_text(original)
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def run() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        shutil.rmtree(
            cache_dir(), ignore_errors=True
        )  # cold: every experiment recomputed
        cold = _build(Path(tmp) / "cold")
        warm = _build(Path(tmp) / "warm")
    dirty = _dirty_edit_seconds()
    make_test = _timed(["make", "test"])
    seconds = {
        "cold_build": round(cold, 1),
        "warm_build": round(warm, 1),
        "dirty_edit": round(dirty, 2),
        "make_test": round(make_test, 1),
    }
    return {
        "machine": {
            "cpus": os.cpu_count(),
            "processor": platform.machine(),
            "python": platform.python_version(),
        },
        "seconds": seconds,
        "budget_seconds": BUDGETS_S,
        "within_budget": {k: seconds[k] <= BUDGETS_S[k] for k in BUDGETS_S},
    }
