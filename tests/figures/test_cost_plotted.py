"""The cost figures draw the page's timings, score ranks and layer shares under the
names of what they measure."""

from __future__ import annotations

import numpy as np

from tests.figures.drawn import assert_series, drawn


def test_head_timings_draws_each_parts_median_and_quartile_band():
    p, (panel,) = drawn("cost", "head_timings")
    rows = p.timings.rows
    heads = [r.n_heads for r in rows]
    parts = {
        "whole layer": "layer",
        "attention core (scores, softmax, weighted sum)": "attention",
    }
    assert_series(
        panel.lines,
        {
            label: [heads, [getattr(r, f"{part}_ms") for r in rows]]
            for label, part in parts.items()
        },
    )
    assert len(panel.bands) == len(parts)
    for band, part in zip(panel.bands.values(), parts.values(), strict=True):
        quartiles = {
            (r.n_heads, getattr(r, f"{part}_{q}_ms"))
            for r in rows
            for q in ("q1", "q3")
        }
        assert {tuple(point) for point in band} == quartiles
    assert panel.xticks == [str(h) for h in heads]
    assert f"d_model = {p.timings.d_model}" in panel.xlabel


def test_score_ranks_draws_every_heads_rank_and_the_bound():
    p, (panel,) = drawn("cost", "score_ranks")
    d_k = [r.d_k for r in p.ranks]
    assert_series(
        panel.lines,
        {
            "min(n, d_k)": [d_k, [r.bound for r in p.ranks]],
            "rank of each head's score matrix": [
                [r.d_k for r in p.ranks for _ in r.ranks],
                np.concatenate([r.ranks for r in p.ranks]),
            ],
        },
    )
    assert panel.xticks == [str(d) for d in d_k]
    assert f"n = {p.ranks[0].n} tokens" in panel.xlabel


def test_layer_split_draws_each_models_shares_and_prints_them():
    p, (panel,) = drawn("cost", "layer_split")
    shares = np.array([r.share for r in p.layers])
    assert_series(
        panel.bars,
        {
            "projections (4·n·d² for MHA)": 1 - shares,
            "scores and weighted sum (2·n²·d)": shares,
        },
    )
    assert panel.yticks == [f"{r.name}, n = {r.context:,}" for r in p.layers]
    printed = [
        text
        for share in shares  # each part's share, where the part has room for it
        for text, room in (
            (f"{1 - share:.0%}", share < 0.85),
            (f"{share:.0%}", share > 0.15),
        )
        if room
    ]
    assert panel.texts == printed
