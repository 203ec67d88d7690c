"""What a build prints while it computes: estimates from the sealed timings, one count
across the build's processes, each study's own time."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from mha.support import cache, progress
from mha.support.measured import checksum

TABLE = {
    "first": {"cpu": 10.0, "own": 10.0, "wall": 99.0},  # the bench's machine was busy
    "second": {"cpu": 20.0, "own": 20.0, "wall": 20.0},
    "small": {"cpu": 0.1, "own": 0.1, "wall": 0.1},
}


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A fresh clone's cache (empty) and sealed timings ``TABLE``."""
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(progress.ENV, "")  # begin() sets it; undone after the test
    monkeypatch.setattr(progress, "_ALONE", {})
    sealed = tmp_path / "studies.json"
    body = {"studies": TABLE}
    sealed.write_text(json.dumps({**body, "checksum": checksum(body)}))
    monkeypatch.setattr(progress, "SEALED", sealed)
    progress.sealed.cache_clear()
    yield tmp_path
    progress.sealed.cache_clear()


def _announced(err: str) -> list[str]:
    return [line for line in err.splitlines() if "computing (" in line]


def test_a_fresh_clone_gets_an_estimate_for_every_study_and_the_time_left(
    fresh, capsys
):
    progress.begin(processes=1)
    with progress.computing("first"):
        pass
    (line,) = _announced(capsys.readouterr().err)
    # sealed 10 CPU-s (its 99 s of wall time were a busy machine's); 10 + 20 + 0.1
    # left, at the sealed pace before any is done
    assert (
        line
        == "[mha] computing (1 of about 2) first: about 10 s; about 30 s left in all"
    )


def test_the_estimates_scale_with_the_pace_of_this_machine(fresh, capsys):
    progress.begin(processes=2)
    with progress.computing("first"):
        pass
    # "first" took 70 s here against 10 sealed: with the prior of 10 s at the sealed
    # pace, (70 + 10) / (10 + 10) = 4 times the sealed times
    progress._update(lambda state: state.update(wall=70.0))
    assert progress.factor(progress.state()) == pytest.approx(4.0, rel=0.01)
    with progress.computing("second"):
        pass
    line = _announced(capsys.readouterr().err)[1]
    assert line == (
        "[mha] computing (2 of about 2) second: about 1 min 20 s; "
        "about 40 s left in all"  # 20 s sealed x 4, on two processes
    )


def test_a_small_study_is_not_announced(fresh, capsys):
    progress.begin()
    with progress.computing("small"):
        pass
    assert not _announced(capsys.readouterr().err)
    assert "small" in progress.timings()


def test_the_build_and_its_second_process_share_one_count(fresh, capsys):
    """Before, each process counted from 1: "(45 of about 47)" then "(18 of about 47)"."""
    progress.begin(processes=2)
    with progress.computing("first"):
        pass
    code = (
        "from mha.support import progress\n"
        "with progress.computing('second'):\n    pass\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", code], env=os.environ, capture_output=True, text=True
    )
    # the child reads the real sealed file; the count is the shared one
    (line,) = _announced(child.stderr)
    assert line.startswith("[mha] computing (2")
    assert progress.state()["count"] == 2


def test_a_study_asked_for_by_another_is_not_its_own_time(fresh, monkeypatch):
    # this thread's CPU clock: the process's own also counts the children it reaps,
    # and a test run reaps its site build whenever it ends (13 s inside the sleep)
    monkeypatch.setattr(progress, "_cpu", time.thread_time)
    progress.begin()
    with progress.computing("outer"):
        with progress.computing("inner"):
            time.sleep(0.3)
        progress.waited(0.5)  # as if waiting for another process's study
    spent = progress.timings(cpu=True)
    assert spent["outer"]["own"] < 0.1 and spent["inner"]["own"] < 0.1
    assert progress.timings()["outer"] >= 0.3
    assert spent["outer"]["wall"] < 0.45  # the wait is not the study's


def test_a_study_that_raises_is_not_timed(fresh):
    with pytest.raises(ZeroDivisionError), progress.computing("broken"):
        raise ZeroDivisionError
    assert "broken" not in progress.timings()


def test_an_edited_sealed_table_gives_no_estimate(fresh):
    data = json.loads(progress.SEALED.read_text())
    data["studies"]["first"]["cpu"] = 1.0
    progress.SEALED.write_text(json.dumps(data))
    progress.sealed.cache_clear()
    assert progress.sealed() == {}


def test_the_shipped_table_names_the_studies_of_a_cold_build():
    """The sealed table (make bench) holds the slow studies by the names a build
    computes them under."""
    progress.sealed.cache_clear()
    table = progress.sealed()
    assert table, "src/mha/data/bench/studies.json is missing or does not match"
    assert "mha.experiments.repeated_tokens._scan" in table
    assert all(
        re.match(r"^[\w.]+|^(figure|card|notebook|code block) ", n) for n in table
    )


def test_only_cheap_studies_are_computed_when_asked_so(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    with cache.only_cheap(lambda name: False), pytest.raises(cache.Missing) as missing:
        cache.cached(abs, -9)
    assert missing.value.name == "builtins.abs(-9)"
    assert cache.cached(abs, -9) == 9
