"""`make serve` shows a page whose study is still computing as waiting for it, then the
page itself; `make build` never publishes a page that waits.

A site of two pages (one that computes nothing, and this repository's cost page) is served with the project's glue from an empty cache, while the test
holds the cost page's study as the process computing it does (its entry's lock).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from filelock import FileLock
from mkdocs.exceptions import PluginError

from mha.pages import cost
from mha.support import cache
from mha_site import prefetch, waiting
from tests.docs.glue import glue
from tests.serving import fetch, free_port, stop

ROOT = Path(__file__).resolve().parents[2]


def _site(tmp_path: Path, root: Path = ROOT) -> Path:
    """A two-page site (about, cost) with the glue that computes and serves studies:
    ``root``'s, and its code, watched."""
    glue = root / "docs" / "_glue"
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "about.md").write_text("# About\n\nNothing computed here.\n")
    (docs / "cost.md").write_text((ROOT / "docs" / "cost.md").read_text())
    config = {
        "site_name": "two pages",
        "docs_dir": str(docs),
        "site_dir": str(tmp_path / "site"),
        "nav": [{"About": "about.md"}, {"Cost": "cost.md"}],
        "hooks": [
            str(glue / f"{hook}.py") for hook in ("errors", "hooks", "serve", "waiting")
        ],
        "watch": [str(root / "src")],
        "plugins": [
            {
                "macros": {
                    "module_name": str(glue / "macros"),
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


def _until(found, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = found()
        if text:
            return text
        time.sleep(0.3)
    raise TimeoutError


def _serve(config: Path, tmp_path: Path) -> tuple[subprocess.Popen, str]:
    """`make serve`'s `mkdocs serve` of ``config``, and its address."""
    port = free_port()
    serve = ["serve", "--dirty", "--no-strict", "-a", f"127.0.0.1:{port}"]
    server = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", *serve, "-f", str(config)],
        cwd=config.parent,
        env=_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "serve.log").open("w"),
        start_new_session=True,  # the server and the processes it starts, stopped together
    )
    return server, f"http://127.0.0.1:{port}/"


def _whole(url: str) -> str:
    """The page at ``url`` once it no longer waits (within three minutes)."""
    return _until(lambda: (t := fetch(url)) and "mha-waiting" not in t and t, 180)


def test_a_page_waits_for_its_study_while_served_then_shows_and_an_edit_of_it_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Served from a copy of the code: the cost page waits for its study, then shows.
    Its module edited to ask for a study never timed, that raises: the study is
    computed for the edited code (the page waited for ever when only the first build
    started the processes computing studies), and its error is shown in the page; the
    edit undone, the page is whole again."""
    tree = tmp_path / "tree"
    for part in ("src/mha", "src/mha_site", "docs/_glue"):
        shutil.copytree(ROOT / part, tree / part)  # compiled files too: still valid
    config = _site(tree, root=tree)
    module = tree / "src" / "mha" / "pages" / "cost.py"
    text = module.read_text()
    assert text.count("cached(_sweep)") == 1
    planted = text.replace("cached(_sweep)", "cached(_planted)") + (
        '\n\ndef _planted():\n    raise ValueError("planted in the study")\n'
    )
    lock = _held(tmp_path, monkeypatch)
    lock.acquire()
    server, base = _serve(config, tmp_path)
    try:
        first = _until(lambda: fetch(base + "about/"), 180)
        assert "Nothing computed here" in first
        waiting = fetch(base + "cost/")
        assert "mha-waiting" in waiting and "mha.pages.cost._sweep" in waiting
        assert "It reloads itself when the study is ready" in waiting
        lock.release()  # the study is computed: the page is built again, whole
        assert "Figure 1." in _whole(base + "cost/")

        module.write_text(planted)
        shown = _until(
            lambda: (t := fetch(base + "cost/")) and "planted in the study" in t and t,
            120,
        )
        assert "mha-build-error" in shown and "src/mha/pages/cost.py:" in shown
        module.write_text(text)
        whole = _until(
            lambda: (t := fetch(base + "cost/")) and "planted" not in t and t, 120
        )
        assert "Figure 1." in whole and "mha-build-error" not in whole
    finally:
        if lock.is_locked:
            lock.release()
        stop(server)


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


def test_a_page_module_that_raises_does_not_wait_and_stops_no_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asking whether its page waits raised out of the server's build (a traceback
    in place of the site); its rendering shows the error in the page."""

    def raising(argument: str) -> None:
        raise ValueError("planted in the page module")

    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(prefetch, "compute", raising)
    assert waiting.missing("mha.pages.cost") is None
