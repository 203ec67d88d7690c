"""The memory figure draws the page's peaks, this build's and the bench's, in MB."""

from __future__ import annotations

from tests.figures.drawn import assert_series, drawn


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
