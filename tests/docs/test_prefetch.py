"""The build's second process computes the studies ahead of the pages that read them."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from mha_site import prefetch
from tests.docs.test_facts import PAGES, page_object


def test_what_the_child_computes_the_build_reads_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(prefetch.os, "sched_getaffinity", lambda pid: {0, 1})
    child = prefetch.start(["mha.pages.cost"], [])
    assert child is not None and child.wait(120) == 0
    timings = json.loads((tmp_path / "timings.json").read_text())
    assert "mha.pages.cost.sweep" in timings  # computed by the child, in the cache
    assert "mha_site.social._png" in timings  # and the page's card
    assert list(tmp_path.glob("*.pickle"))
    # the child marked this code as computed: the next build starts none ...
    assert prefetch.marker(["mha.pages.cost"]).exists()
    assert prefetch.start(["mha.pages.cost"], []) is None
    # ... unless the code changed, or cached results were deleted since
    monkeypatch.setattr(prefetch.cache, "code_hash", lambda: "edited")
    assert not prefetch.marker(["mha.pages.cost"]).exists()
    monkeypatch.undo()
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(prefetch.os, "sched_getaffinity", lambda pid: {0, 1})
    prefetch.forget()
    again = prefetch.start(["mha.pages.cost"], [])
    assert again is not None and again.wait(120) == 0


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
    assert prefetch.start(["mha.pages.cost"], []) is None
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
