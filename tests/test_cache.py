"""The content-hash cache: one computation per key, even when asked for at once."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from mha.support import cache


def test_callers_asking_at_once_compute_once(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    calls: list[int] = []
    results: list[int] = []

    def slow_square(x: int) -> int:
        calls.append(x)
        time.sleep(0.3)  # long enough for the other callers to ask meanwhile
        return x * x

    threads = [
        threading.Thread(target=lambda: results.append(cache.cached(slow_square, 7)))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [49, 49, 49]
    assert calls == [7]


def test_other_arguments_are_another_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    calls: list[int] = []

    def square(x: int) -> int:
        calls.append(x)
        return x * x

    assert [cache.cached(square, 2), cache.cached(square, 3)] == [4, 9]
    assert cache.cached(square, 2) == 4
    assert calls == [2, 3]


def test_a_view_and_a_copy_of_the_same_numbers_share_a_key():
    """A result just computed may hold strided views; read back, it holds copies."""
    view = np.arange(12.0).reshape(3, 4)[:, ::2]
    assert not view.flags.c_contiguous
    assert cache.cache_key(max, {"w": view}) == cache.cache_key(max, {"w": view.copy()})
    assert cache.cache_key(max, view) != cache.cache_key(max, view[:, :1])


def test_arguments_that_share_objects_and_their_copies_share_a_key():
    """A result just computed shares objects (a key string, a row) that the same
    result read from the cache holds apart: both are one computation. (Before, the
    fast-attention memory figure got one key per process and was drawn twice.)"""
    row = [1.5, "tiled"]
    shared, apart = [row, row], [[1.5, "tiled"], [1.5, "tiled"]]
    assert cache.cache_key(len, shared) == cache.cache_key(len, apart)
    cyclic: list = [1]
    cyclic.append(cyclic)
    assert cache.cache_key(len, cyclic) == cache.cache_key(len, cyclic)


def test_docstrings_and_comments_are_not_part_of_the_key(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        '"""Doc."""\n\n\ndef f(x):\n    """Doc."""\n    return x + 1  # one\n'
    )
    before = cache._tree_digest(path)
    path.write_text('"""Other."""\n\n\ndef f(x):\n    """Other."""\n    return x + 1\n')
    cache._tree_digest.cache_clear()
    assert cache._tree_digest(path) == before
    path.write_text('"""Other."""\n\n\ndef f(x):\n    return x + 2\n')
    cache._tree_digest.cache_clear()
    assert cache._tree_digest(path) != before


def test_a_key_depends_on_the_modules_its_function_imports_only(monkeypatch):
    from mha.figures import render
    from mha.pages import cost

    modules = cache.dependencies(cost.__name__)
    assert {"mha.pages.cost", "mha.accounting", "mha.support.measured"} <= set(modules)
    assert "mha.pages.ffn" not in modules and "mha.pretrained.smollm2" not in modules
    keys = cache.cache_key(render, "a"), cache.cache_key(render, cost._sweep)
    digest = cache._module_digest

    def edited(module: str) -> str:  # as if mha.pages.cost's code had changed
        return "edited" if module == "mha.pages.cost" else digest(module)

    monkeypatch.setattr(cache, "_module_digest", edited)
    # the function passed as an argument (a figure to draw, say) brings its module in
    assert cache.cache_key(render, "a") == keys[0]
    assert cache.cache_key(render, cost._sweep) != keys[1]


def test_imports_made_only_for_type_checking_are_not_dependencies():
    source = (
        "from typing import TYPE_CHECKING\n"
        "import mha.attention\n"
        "if TYPE_CHECKING:\n"
        "    from mha.pages.cricket import Cricket\n"
        "else:\n"
        "    import mha.heads\n"
        "if typing.TYPE_CHECKING:\n"
        "    import mha.layer\n"
    )
    found = cache._imports("m", ast.parse(source))
    assert sorted(found) == ["mha.attention", "mha.heads"]


def test_a_read_only_cache_serves_its_hits_and_says_so_once(
    tmp_path, monkeypatch, capsys
):
    """A warm cache on a read-only disk: marking an entry as read fails (EROFS); the
    hit is served anyway and the message names the cache and MHA_CACHE_DIR, once."""
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    assert cache.cached(abs, -5) == 5
    monkeypatch.setattr(cache, "_WARNED", set())

    def read_only(self, *args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(Path, "touch", read_only)
    assert cache.cached(abs, -5) == 5 and cache.cached(abs, -5) == 5
    err = capsys.readouterr().err
    assert err.count("read-only") == 1 and "MHA_CACHE_DIR" in err


def _counting_alone(monkeypatch, sealed=None):
    """This process counts its studies alone, from 0, with ``sealed`` timings."""
    from mha.support import progress

    monkeypatch.delenv(progress.ENV, raising=False)
    monkeypatch.setattr(progress, "_ALONE", {})
    monkeypatch.setattr(progress, "sealed", lambda: sealed or {})


def test_a_cold_computation_shows_its_progress(tmp_path, monkeypatch, capsys):
    """A miss says what it computes and, the next time, how long it took before."""
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    _counting_alone(monkeypatch)
    cache.cached(abs, -7)
    assert "computing (1) builtins.abs(-7): not timed before" in capsys.readouterr().err
    timings = json.loads((tmp_path / "timings.json").read_text())
    assert set(timings) == {"builtins.abs(-7)"}


def test_each_figure_card_and_code_block_is_named_in_the_progress(
    tmp_path, monkeypatch, capsys
):
    """The helpers that compute many things (``cached_as``) name each of them in the
    progress lines and in timings.json, not themselves."""
    from mha.figures import render
    from mha.support.page import Figure
    from mha.worked.cricket import TOKENS, solve
    from mha_site.block_cache import kept
    from mha_site.social import figure_and_card

    def run(code, returncode=None, session=None, id=None, **extra):
        return "1\n"

    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    _counting_alone(monkeypatch)
    data = solve(), TOKENS, "his"
    render("cricket.three_distributions", "three bar groups", *data)
    figure_and_card(Figure("cricket.three_distributions", data, "bars", "Look."))
    kept(run)("\nx = 1\nprint(x)")
    shown = cache.described(data)  # the arguments that say which figure it is
    assert shown.endswith(", 'his')")
    named = [
        f"figure cricket.three_distributions{shown}",
        f"figure and card cricket.three_distributions{shown}",
        "code block: x = 1 … print(x)",
    ]
    assert set(json.loads((tmp_path / "timings.json").read_text())) == set(named)
    printed = capsys.readouterr().err
    for place, name in enumerate(named, start=1):
        assert f"computing ({place}) {name}: not timed before" in printed


def test_a_study_that_waits_says_its_wall_time_and_its_cpu_time(
    tmp_path, monkeypatch, capsys
):
    """Time spent waiting (here asleep; in a build, on a study the other process
    computes) is wall time, not CPU time: the line says both."""
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    _counting_alone(monkeypatch)
    with cache._progress("asleep"):
        time.sleep(1.05)
    (done,) = [line for line in capsys.readouterr().err.splitlines() if "CPU-s" in line]
    wall, cpu = re.fullmatch(
        r"\[mha\]   asleep: ([\d.]+) s, ([\d.]+) CPU-s", done
    ).groups()
    assert float(wall) >= 1.0 and float(cpu) < 0.5


def test_two_studies_timed_at_once_keep_both_timings(tmp_path, monkeypatch):
    """The build's two processes time their studies in one timings.json: a study that
    ends while another is running keeps its timing when the other ends."""
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    _counting_alone(monkeypatch)
    with cache._progress("first"), cache._progress("second"):
        pass  # "second" (as the other process's) ends while "first" runs
    timings = json.loads((tmp_path / "timings.json").read_text())
    assert set(timings) == {"first", "second"}


def _failing(errno: int, message: str):
    def fail(*args, **kwargs):
        raise OSError(errno, message)

    return fail


def test_a_full_disk_computes_stores_nothing_and_says_what_to_do_once(
    tmp_path, monkeypatch, capsys
):
    """The disk fills while an entry is written: no part of it stays, the result is
    returned, and the message names the cache, MHA_CACHE_DIR and a fix, once."""
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_WARNED", set())
    monkeypatch.setattr(cache.os, "replace", _failing(28, "No space left on device"))
    assert cache.cached(abs, -6) == 6 and cache.cached(abs, -7) == 7
    err = capsys.readouterr().err
    assert err.count("No space left on device") == 1
    assert str(tmp_path) in err and "MHA_CACHE_DIR" in err and "free space" in err
    assert not [p for p in tmp_path.iterdir() if p.suffix != ".lock"]  # no half entry


def test_a_read_only_folder_computes_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path / "results"))
    monkeypatch.setattr(cache, "_WARNED", set())
    monkeypatch.setattr(Path, "mkdir", _failing(30, "Read-only file system"))
    assert cache.cached(abs, -8) == 8
    err = capsys.readouterr().err
    assert "Read-only file system" in err and "MHA_CACHE_DIR" in err


def test_a_study_killed_midway_leaves_the_cache_consistent(tmp_path):
    """A build killed while it computes (SIGKILL: no cleanup runs) leaves no entry and
    no held lock: the next build computes the result and stores it."""
    code = (
        "import time\n"
        "from mha.support import cache\n"
        "def slow(x):\n"
        "    print('started', flush=True)\n"
        "    time.sleep(60)\n"
        "cache.cached(slow, 1)\n"
    )
    env = {**os.environ, "MHA_CACHE_DIR": str(tmp_path)}
    study = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True
    )
    assert study.stdout.readline() == "started\n"  # inside the study, lock held
    study.kill()
    study.wait()
    assert not list(tmp_path.glob("*.pickle"))
    assert cache.cached(abs, -9) == 9  # other entries: fine
    os.environ["MHA_CACHE_DIR"] = str(tmp_path)
    try:  # the same key as the killed study: its lock is free again
        assert cache.cached(_double, 1) == 2
    finally:
        del os.environ["MHA_CACHE_DIR"]


def _double(x: int) -> int:
    return 2 * x


def test_two_builds_in_one_clone_compute_once_and_agree(tmp_path, monkeypatch):
    """Another process (a second build in the clone) asks for a result this one is
    computing: it waits, then reads the stored result."""
    log = tmp_path / "calls"
    code = (
        "from mha.support import cache\n"
        "from tests.test_cache import _logged_square\n"
        f"print(cache.cached(_logged_square, 12, {str(log)!r}))\n"
    )
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path / "results"))
    other = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
    )
    while not log.exists():  # the other build is inside the study, holding its lock
        time.sleep(0.05)
    assert cache.cached(_logged_square, 12, str(log)) == 144
    assert other.communicate()[0] == "144\n"
    assert log.read_text() == "computed\n"  # once
    assert len(list((tmp_path / "results").glob("*.pickle"))) == 1


def _logged_square(x: int, log: str) -> int:
    with open(log, "a") as file:
        file.write("computed\n")
    time.sleep(0.5)  # long enough for the other build to ask meanwhile
    return x * x


def test_arrays_on_a_full_disk_are_returned_and_leave_no_part(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_WARNED", set())
    monkeypatch.setattr(np, "save", _failing(28, "No space left on device"))
    arrays, meta = cache.cached_arrays("demo", "v1", lambda: ({"w": np.ones(2)}, {}))
    assert arrays["w"].tolist() == [1.0, 1.0] and meta == {}
    assert not list((tmp_path / "demo").iterdir())


def _logged_arrays(log: str):
    with open(log, "a") as file:
        file.write("dequantised\n")
    time.sleep(0.5)  # long enough for the other process to ask meanwhile
    return {"w": np.arange(3.0)}, {"note": "weights"}


def test_two_processes_dequantise_a_model_once(tmp_path, monkeypatch):
    """A model's arrays (SmolLM2's dequantised weights, seconds of work) asked for by
    the build and its second process at once are computed by one of them."""
    log = tmp_path / "calls"
    code = (
        "from mha.support import cache\n"
        "from tests.test_cache import _logged_arrays\n"
        f"arrays, meta = cache.cached_arrays('model', 'k1', lambda: _logged_arrays({str(log)!r}))\n"
        "print(arrays['w'].tolist(), meta)\n"
    )
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path / "results"))
    other = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
    )
    while not log.exists():  # the other process is dequantising
        time.sleep(0.05)
    arrays, meta = cache.cached_arrays("model", "k1", lambda: _logged_arrays(str(log)))
    assert arrays["w"].tolist() == [0.0, 1.0, 2.0] and meta == {"note": "weights"}
    assert other.communicate()[0] == "[0.0, 1.0, 2.0] {'note': 'weights'}\n"
    assert log.read_text() == "dequantised\n"  # once
