"""The build's second process computes the studies ahead of the pages that read them."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from filelock import FileLock
from mkdocs.config import load_config
from mkdocs.structure.files import get_files

from mha.support import cache, progress
from mha_site import prefetch
from tests.docs.glue import glue
from tests.docs.test_facts import PAGES, page_object

ROOT = Path(__file__).resolve().parents[2]


def test_what_the_child_computes_the_build_reads_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(prefetch.os, "sched_getaffinity", lambda pid: {0, 1})
    child = prefetch.start(["mha.pages.cost"])
    assert child is not None and child.wait(120) == 0
    timings = json.loads((tmp_path / "timings.json").read_text())
    assert "mha.pages.cost._sweep" in timings  # computed by the child, in the cache
    assert any(name.startswith("figure and card cost.") for name in timings)
    assert list(tmp_path.glob("*.pickle"))
    # the child marked this code as computed: the next build starts none ...
    assert prefetch.marker(["mha.pages.cost"]).exists()
    assert prefetch.start(["mha.pages.cost"]) is None
    # ... unless the code changed, or cached results were deleted since
    monkeypatch.setattr(prefetch.cache, "code_hash", lambda: "edited")
    assert not prefetch.marker(["mha.pages.cost"]).exists()
    monkeypatch.undo()
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(prefetch.os, "sched_getaffinity", lambda pid: {0, 1})
    prefetch.forget()
    again = prefetch.start(["mha.pages.cost"])
    assert again is not None and again.wait(120) == 0


@pytest.mark.parametrize("serving", [False, True], ids=["build", "serve"])
def test_the_child_computes_from_the_last_page_the_build_renders_back(
    serving: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build renders the pages that compute nothing first, then the others in the
    nav's order; the child is handed their work in exactly the reverse order. While
    serving, the build computes no study: one child works from the cheapest page,
    another from the costliest, and both say when each page is ready."""
    config = load_config(str(ROOT / "mkdocs.yml"))
    handed = []
    monkeypatch.setattr(
        prefetch, "start", lambda order, ready: handed.append((order, ready))
    )
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("MHA_PROGRESS", "")  # the build's count, in tmp_path
    hook = glue("hooks")
    monkeypatch.setitem(hook._BUILD, "builds", 1)
    monkeypatch.setitem(hook._BUILD, "serving", serving)
    files = hook.on_files(get_files(config), config)
    nav = hook._nav_files(config["nav"])
    rendered = [file.src_uri for file in files if file.src_uri in nav]
    free = [page for page in nav if prefetch.work(page) is None]
    working = [page for page in nav if prefetch.work(page) is not None]
    assert free == [page for page in nav if page.startswith("reference/")]
    assert rendered == [*free, *working]
    docs = config["docs_dir"]
    backwards = [prefetch.work(page, docs) for page in reversed(working)]
    if serving:  # from the cheapest page by the sealed timings, and the costliest
        costs = {a: prefetch.cost(a, progress.sealed()) for a in backwards}
        cheapest = sorted(backwards, key=costs.get)
        assert handed == [(cheapest, True), (cheapest[::-1], True)]
        assert costs[cheapest[0]] < costs[cheapest[-1]]
    else:
        assert handed == [(backwards, False)]


_PAGE = """
from types import SimpleNamespace
from mha.support.cache import cached

def study():
    return "{name}"

def page():
    cached(study)
    return SimpleNamespace(figures={{}})
"""


def test_the_child_turns_to_other_work_while_the_build_computes_a_study(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the build holds a study's entry (computing it), the child computes the
    next page's study instead of waiting; then it comes back for the first."""
    for name in ("held_page", "free_page"):
        (tmp_path / f"{name}.py").write_text(_PAGE.format(name=name))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path / "cache"))
    held, free = (importlib.import_module(n).study for n in ("held_page", "free_page"))
    entry = {f: tmp_path / "cache" / f"{cache.cache_key(f)}" for f in (held, free)}
    entry[held].parent.mkdir()
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    with FileLock(entry[held].with_suffix(".lock")):  # as the build computing it
        pages = ["held_page", "free_page"]
        command = [prefetch.sys.executable, "-m", "mha_site.prefetch", *pages]
        child = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": path})
        deadline = time.monotonic() + 60
        while not entry[free].with_suffix(".pickle").exists():
            assert time.monotonic() < deadline, "the child waited for the build"
            time.sleep(0.05)
        assert child.poll() is None  # still to come back for the held study
    assert child.wait(60) == 0
    assert cache.cached(held) == "held_page"
    assert entry[held].with_suffix(".pickle").exists()


def test_a_child_that_failed_leaves_no_marker(tmp_path: Path) -> None:
    done = tmp_path / "done"
    pages = ["mha.pages.notation", "mha.pages.no_such_page"]
    run = subprocess.run(
        [prefetch.sys.executable, "-m", "mha_site.prefetch", f"--done={done}", *pages],
        env={**prefetch.os.environ, "MHA_CACHE_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and not done.exists()


def test_a_failure_is_left_to_the_build(tmp_path: Path) -> None:
    run = subprocess.run(
        [prefetch.sys.executable, "-m", "mha_site.prefetch", "mha.pages.no_such_page"],
        env={**prefetch.os.environ, "MHA_CACHE_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0
    assert "computing ahead stopped at mha.pages.no_such_page" in run.stderr


def test_one_core_starts_no_second_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prefetch.os, "sched_getaffinity", lambda pid: {0})
    assert prefetch.start(["mha.pages.cost"]) is None
    prefetch.finish(None)  # nothing to wait for


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_child_draws_the_card_the_page_shows(page: Path, built_site: Path) -> None:
    """The child draws the card of the figure a page module declares first: the
    figure the page shows first. (After the build: its studies are in the cache.)"""
    shown = re.search(r"""figure\(\s*["']([^"']+)["']""", page.read_text("utf-8"))
    declared = list(page_object(page).figures)
    assert (shown and shown[1]) == (declared[0] if declared else None), (
        f"{page.name} shows {shown and shown[1]!r} first; its module declares "
        f"{declared[:1]} first: declare it first, so that the build's second "
        "process draws its card"
    )
