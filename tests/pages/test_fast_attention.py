"""The fast-attention page: the worked online softmax, the memory, the counts, and
each fact fed values that make it false."""

from __future__ import annotations

import dataclasses
import math
import threading

import numpy as np
import pytest

from mha.attention import softmax
from mha.pages.fast_attention import (
    BLOCK,
    SCORES,
    VALUES,
    _facts,
    _memory,
    _multiply_adds,
    _online_steps,
    _peak_bytes,
    page,
)
from tests.conftest import ROOT
from tests.docs.rendering import render
from tests.pages.drawn import assert_series, drawn
from tests.pages.sealed import PLANTS, assert_printed, plant


def test_every_fact_holds_and_the_example_agrees_with_the_softmax():
    p = page()
    assert all(f.holds for f in p.facts.values()), {
        k: f.values for k, f in p.facts.items() if not f.holds
    }
    assert p.steps[-1].so_far == pytest.approx(softmax(SCORES) @ VALUES, abs=1e-12)
    assert [s.keys for s in p.steps] == [(0, 1), (2, 3), (4, 5)]


@pytest.mark.parametrize("block", [1, 2, 4, 5, 6])
def test_the_online_steps_end_at_the_softmax_for_any_block(block):
    rng = np.random.default_rng(block)
    scores, values = rng.normal(size=11) * 5, rng.normal(size=11)
    steps = _online_steps(scores, values, block)
    assert len(steps) == math.ceil(11 / block)
    assert steps[-1].so_far == pytest.approx(softmax(scores) @ values, abs=1e-12)
    assert steps[-1].m == scores.max() and steps[0].rescale == 0.0


def test_each_running_state_is_the_softmax_of_the_keys_seen_so_far():
    for step in _online_steps(SCORES, VALUES, BLOCK):
        seen = slice(0, step.keys[-1] + 1)
        assert step.s == pytest.approx(np.exp(SCORES[seen] - step.m).sum())
        assert step.so_far == pytest.approx(softmax(SCORES[seen]) @ VALUES[seen])


def test_the_multiply_adds_match_their_closed_forms():
    n, d, b = 1024, 64, 128
    full, causal = _multiply_adds(n, d, b, False), _multiply_adds(n, d, b, True)
    assert full["naive"] == full["tiled"] == causal["naive"] == n * n * 2 * d
    t = n // b  # query blocks; query block i visits i + 1 key blocks
    assert causal["tiled"] == b * b * 2 * d * t * (t + 1) // 2
    assert full["rescale"] == n * (d + 1) * t
    ragged = _multiply_adds(300, 16, 64, True)  # the last block of 44 sees all 300 keys
    assert ragged["tiled"] == 64 * 32 * (64 + 128 + 192 + 256) + 44 * 300 * 32


def test_the_memory_grows_as_n_squared_and_as_n():
    small, double = _memory((256, 512))
    for row in (small, double):
        assert row["dense"] <= row["naive"] < 1.2 * row["dense"]
    assert 3.5 < double["naive"] / small["naive"] < 4.5
    assert double["tiled"] <= 2 * small["tiled"]


def test_a_peak_does_not_count_what_a_first_call_keeps():
    """A first call that fills a cache (as a lazy import does) peaks no higher than
    the next: two builds measure the same bytes whatever ran before them."""
    kept: list[np.ndarray] = []

    def fills_a_cache_once() -> None:
        if not kept:
            kept.append(np.ones(10_000))
        np.ones(100)

    assert _peak_bytes(fills_a_cache_once) == _peak_bytes(fills_a_cache_once) < 8_000


def test_the_peaks_do_not_count_what_another_thread_allocates():
    """tracemalloc counts the whole process: a build's progress lines, printed by
    another thread while the study ran, added to its peaks, and two builds, or a
    build and a test, printed different bytes."""
    alone = _memory((256,))
    stop = threading.Event()

    def allocates() -> None:  # holds up to 100 kB of strings at a time
        held: list[str] = []
        while not stop.is_set():
            held = [*held[-99:], "x" * 1000 + str(len(held))]

    busy = threading.Thread(target=allocates)
    busy.start()
    try:
        beside = _memory((256,))
    finally:
        stop.set()
        busy.join()
    assert beside == alone


def test_the_bench_agrees_with_the_build_where_both_measured():
    p = page()
    by_n = {row["n"]: row for row in p.bench["rows"]}
    for row in p.memory:
        assert by_n[row["n"]]["naive"] == pytest.approx(row["naive"], rel=0.05)
    assert max(by_n) >= 8192


def test_facts_turn_false():
    p = page()
    args = (p.steps, p.direct, p.memory, p.bench["rows"], p.counts)

    def broken(i, value):
        changed = list(args)
        changed[i] = value
        return _facts(*changed)

    flat = [dataclasses.replace(s, rescale=1.0) for s in p.steps]
    assert not broken(0, flat)["max_moves"].holds
    assert not broken(1, p.direct + 1e-9)["same_output"].holds
    heavy = [dict(r, naive=2 * r["dense"]) for r in p.memory]
    assert not broken(2, heavy)["dense_floor"].holds
    level = [dict(r, naive=r["tiled"]) for r in p.memory]
    assert not broken(2, level)["quadratic"].holds
    steep = [dict(r, tiled=r["n"] ** 2) for r in p.memory]
    assert not broken(2, steep)["linear"].holds
    assert not broken(2, [dict(r, tiled=r["naive"]) for r in p.memory])["eighth"].holds
    bad_bench = [dict(r, naive=3 * r["dense"]) for r in p.bench["rows"]]
    assert not broken(3, bad_bench)["dense_floor"].holds
    counts = dict(p.counts, full=dict(p.counts["full"], tiled=1))
    assert not broken(4, counts)["same_products"].holds
    counts = dict(p.counts, full=dict(p.counts["full"], rescale=10**12))
    assert not broken(4, counts)["rescale_small"].holds


# --- its figures --------------------------------------------------------------
# The memory figure draws the page's peaks, this build's and the bench's, in MB.


def test_memory_draws_each_paths_peaks_from_the_build_and_the_bench():
    p, (panel,) = drawn("fast_attention", "memory")

    def series(rows, key):
        return [[r["n"] for r in rows], [r[f"{key}_mb"] for r in rows]]

    assert_series(
        panel.lines,
        {
            "attend (make bench)": series(p.bench_rows, "naive"),
            "attend (this build)": series(p.memory, "naive"),
            "tiled_attention (make bench)": series(p.bench_rows, "tiled"),
            "tiled_attention (this build)": series(p.memory, "tiled"),
            "three n×n float64 arrays": series(p.bench_rows, "dense"),
        },
    )
    assert panel.xticks == [f"{r['n']:,}" for r in p.bench_rows]


def test_the_tiling_figure_counts_what_the_causal_loop_computes():
    from mha.pages.fast_attention import _visited

    p = page()
    visited = p.counts["visited"]
    assert visited.shape == (16, 16) and np.array_equal(visited, np.tril(visited))
    assert (p.counts["tiles"], p.counts["skipped"]) == (136, 120)
    assert _visited(300, 128, causal=False).all()  # no mask: every tile
    assert _visited(300, 128, causal=True).sum() == 6  # 3 query blocks: 1 + 2 + 3
    assert p.facts["tiles_count"].holds


def test_the_tiles_fact_turns_false_on_a_wrong_picture():
    p = page()
    full = dict(p.counts, visited=np.ones_like(p.counts["visited"]))  # none skipped
    found = _facts(p.steps, p.direct, p.memory, p.bench["rows"], full)
    assert not found["tiles_count"].holds


@pytest.mark.parametrize("sealed_at, uncommitted", PLANTS)
def test_the_bench_table_says_when_at_which_commit_and_load_it_was_sealed(
    tmp_path, monkeypatch, sealed_at, uncommitted
):
    commit = "fa57a77e" + "1" * 32
    sealed = plant(
        "fast_attention", tmp_path, monkeypatch, sealed_at, uncommitted, commit, 4.4
    )
    p = page.__wrapped__()  # the page of the planted record
    assert p.seal == sealed and sealed.commit == commit and sealed.load == 4.4
    assert_printed(render(ROOT / "docs" / "fast-attention.md", p), sealed)
