"""The circuits figures draw the page's K-composition grids under the heads they go
into, its patched induction scores, and its first-token shares."""

from __future__ import annotations

import re

import numpy as np

from tests.figures.drawn import assert_series, drawn


def _head(name: str) -> tuple[int, int]:
    layer, head = re.fullmatch(r"L(\d+)H(\d+)", name).groups()
    return int(layer), int(head)


def test_composition_shows_each_receiving_heads_grid_and_frames_the_sender():
    p, panels = drawn("circuits", "composition")
    c = p.s.weights.composition[1]
    assert [panel.title for panel in panels] == [f"into {n}" for n in p.top[:2]]
    rows = max(_head(n)[0] for n in p.top[:2])
    assert panels[0].yticks == [str(i) for i in range(rows)]
    sender = _head(p.previous)
    for panel in panels:
        layer, head = _head(panel.title.removeprefix("into "))
        (image,) = panel.images
        np.testing.assert_array_equal(image, c[layer, head, :layer])
        assert panel.xticks == [str(h) for h in range(c.shape[1])]
        framed = [
            tuple(round(x) for x in outline[:4].mean(axis=0)[::-1])  # (layer, head)
            for outline in panel.patches.values()
        ]
        assert framed == ([sender] if sender[0] < layer else [])


def test_patching_draws_each_heads_scores_and_the_controls_range():
    p, (panel,) = drawn("circuits", "patching")
    q = p.s.sequences
    second = q.patching.single[1].mean(-1)
    assert_series(
        panel.bars,
        {
            "unpatched": q.clean,
            f"{p.previous} patched": q.patched,
            f"{p.second} patched": np.nan_to_num(second, nan=0.0),
            "a control head patched": np.nanmean(q.controls, axis=1),
        },
    )
    assert_series(
        panel.errors,
        {
            "a control head patched": np.stack(
                [np.nanmin(q.controls, axis=1), np.nanmax(q.controls, axis=1)], axis=1
            )
        },
    )
    assert panel.xticks == p.top


def test_sinks_draws_the_first_tokens_weight_and_share_of_what_moves():
    p, (panel,) = drawn("circuits", "sinks")
    q, even = p.s.sequences, p.s.scan.uniform_first_token
    layers = np.arange(len(q.first_token))
    assert_series(
        panel.lines,
        {
            "attention weight": [layers, q.first_token],
            "share of what moves": [layers, q.first_token_moved],
            "an even spread": [[0, 1], [even, even]],  # across the axes
        },
    )
