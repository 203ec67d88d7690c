"""`make serve` shows a page whose study is still computing as waiting for it, then the
page itself; `make build` never publishes a page that waits.

A site of two pages (one that computes nothing, and this repository's cost page) is served with the project's glue from an empty cache, while the test
holds the cost page's study as the process computing it does (its entry's lock).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from filelock import FileLock
from mkdocs.exceptions import PluginError

from mha.pages import cost
from mha.support import cache
from tests.docs.glue import glue

ROOT = Path(__file__).resolve().parents[2]
GLUE = ROOT / "docs" / "_glue"


def _site(tmp_path: Path) -> Path:
    """A two-page site (about, cost) with the glue that computes and serves studies."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "about.md").write_text("# About\n\nNothing computed here.\n")
    (docs / "cost.md").write_text((ROOT / "docs" / "cost.md").read_text())
    config = {
        "site_name": "two pages",
        "docs_dir": str(docs),
        "site_dir": str(tmp_path / "site"),
        "nav": [{"About": "about.md"}, {"Cost": "cost.md"}],
        "hooks": [str(GLUE / f"{hook}.py") for hook in ("hooks", "serve", "waiting")],
        "plugins": [
            {
                "macros": {
                    "module_name": str(GLUE / "macros"),
                    "on_undefined": "strict",
                    "on_error_fail": True,
                }
            },
            "markdown-exec",
        ],
        "markdown_extensions": ["pymdownx.superfences", "attr_list", "admonition"],
    }
    path = tmp_path / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MHA_PROGRESS"}
    return {**env, "MHA_CACHE_DIR": str(tmp_path / "cache"), "NO_MKDOCS_2_WARNING": "1"}


def _held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FileLock:
    """The lock of the cost page's sweep, as the process computing it holds it."""
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path / "cache"))
    entry = cache.cache_dir() / f"{cache.cache_key(cost._sweep)}.lock"
    entry.parent.mkdir(parents=True)
    return FileLock(entry)


def _fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode()
    except OSError:
        return ""


def _until(found, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = found()
        if text:
            return text
        time.sleep(0.3)
    raise TimeoutError


def test_a_page_waits_for_its_study_while_served_then_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _site(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}/"
    lock = _held(tmp_path, monkeypatch)
    lock.acquire()
    serve = ["serve", "--dirty", "--no-strict", "-a", f"127.0.0.1:{port}"]
    server = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", *serve, "-f", str(config)],
        cwd=ROOT,
        env=_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # the server and the processes it starts, stopped together
    )
    try:
        first = _until(lambda: _fetch(base + "about/"), 180)
        assert "Nothing computed here" in first
        waiting = _fetch(base + "cost/")
        assert "mha-waiting" in waiting and "mha.pages.cost._sweep" in waiting
        assert "It reloads itself when the study is ready" in waiting
        lock.release()  # the study is computed: the page is built again, whole
        whole = _until(
            lambda: (t := _fetch(base + "cost/")) and "mha-waiting" not in t and t, 180
        )
        assert "Figure 1." in whole
    finally:
        if lock.is_locked:
            lock.release()
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(30)


def test_a_strict_build_waits_for_the_study_and_never_publishes_a_waiting_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _site(tmp_path)
    lock = _held(tmp_path, monkeypatch)
    with lock:
        build = subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "build", "-f", str(config)],
            cwd=ROOT,
            env=_env(tmp_path),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(3)
        assert build.poll() is None  # waiting for the study, not publishing without it
    _, stderr = build.communicate(timeout=300)
    assert build.returncode == 0, stderr[-2000:]
    page = (tmp_path / "site" / "cost" / "index.html").read_text()
    assert "mha-waiting" not in page and "Figure 1." in page


def test_a_build_refuses_a_page_that_waits() -> None:
    hook = glue("waiting")
    hook.on_startup(command="build", dirty=False)
    page = type("Page", (), {"file": type("File", (), {"src_uri": "cost.md"})})()
    with pytest.raises(PluginError, match=r"docs/cost.md: the page still waits"):
        hook.on_post_page('<div class="admonition info mha-waiting">', page, {})
    hook.on_startup(command="serve", dirty=True)
    assert hook.on_post_page('<div class="mha-waiting">', page, {}).startswith("<div")
