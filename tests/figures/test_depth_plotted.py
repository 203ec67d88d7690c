"""The depth figures draw the page's norms, the built circuit's weights, the trained
models' accuracies and SmolLM2's head scores and sinks under their own names."""

from __future__ import annotations

import numpy as np

from mha.pages.depth import _EXAMPLE
from mha.pages.depth.repeated_tokens import N_ABLATED
from tests.figures.drawn import assert_series, drawn


def test_residual_norms_draws_the_stream_and_each_sublayers_write():
    p, (panel,) = drawn("depth", "residual_norms")
    s = p.scan
    layers = np.arange(len(s.attention_norm))
    assert_series(
        panel.lines,
        {
            "residual stream x entering the layer": [
                np.arange(len(s.stream_norm)),
                s.stream_norm,
            ],
            "attention's write": [layers, s.attention_norm],
            "feed-forward's write": [layers, s.mlp_norm],
        },
    )
    assert panel.xlabel.endswith(f"after layer {len(s.stream_norm) - 2})")


def test_circuit_attention_shows_each_head_doing_what_its_title_names():
    p, panels = drawn("depth", "circuit_attention")
    weights, tokens = p.figures["circuit_attention"].data
    assert [panel.title for panel in panels] == [
        "L0H0: previous token",
        "L1H0: induction",
    ]
    for panel, w in zip(panels, weights, strict=True):
        assert len(panel.images) == 1 and np.array_equal(panel.images[0], w)
        assert panel.xticks == panel.yticks == [str(t) for t in _EXAMPLE]
    assert np.array_equal(tokens, _EXAMPLE)
    previous, induction = (panel.images[0] for panel in panels)
    rows = np.arange(1, len(_EXAMPLE))
    assert (previous[rows].argmax(axis=1) == rows - 1).all()
    for t, token in enumerate(_EXAMPLE):  # a repeat: after its first occurrence
        first = np.flatnonzero(_EXAMPLE[:t] == token)
        if first.size:
            assert induction[t].argmax() == first[0] + 1, t


def test_training_draws_every_seeds_accuracy_and_the_baselines():
    p, (panel,) = drawn("depth", "training")
    t = p.task
    bars = np.concatenate(list(panel.bars.values()))
    assert np.array_equal(bars, np.concatenate([t.one.accuracy, t.two.accuracy]))
    assert panel.xticks == [t.one.shape.name, t.two.shape.name]
    levels = {
        "chance": t.chance,
        "exclusion baseline": t.exclusion,
        "twice chance": 2 * t.chance,
    }
    assert_series(
        {k: v[1] for k, v in panel.lines.items()},
        {k: [level, level] for k, level in levels.items()},
    )


def test_head_scores_shows_both_grids_and_frames_the_strongest_induction_heads():
    p, panels = drawn("depth", "head_scores")
    s = p.scan
    assert [panel.title for panel in panels] == [
        "induction score",
        "previous-token score",
    ]
    assert np.array_equal(panels[0].images[0], s.induction)
    assert np.array_equal(panels[1].images[0], s.previous)
    n_layers, n_heads = s.induction.shape
    assert panels[0].yticks == [str(i) for i in range(n_layers)]
    assert panels[0].xticks == [str(h) for h in range(n_heads)]
    framed = {
        tuple(round(c) for c in outline[:4].mean(axis=0)[::-1])  # (layer, head)
        for outline in panels[0].patches.values()
    }
    brightest = np.sort(s.induction, axis=None)[-N_ABLATED:]
    assert len(framed) == N_ABLATED
    assert sorted(s.induction[layer, head] for layer, head in framed) == list(brightest)


def test_sinks_and_norms_draws_the_first_tokens_share_and_norm_ratio():
    p, (top, bottom) = drawn("depth", "sinks_and_norms")
    share, ratio, even, outsized = p.figures["sinks_and_norms"].data
    s = p.scan
    assert np.array_equal(share, s.first_token) and even == s.uniform_first_token
    assert outsized == p.outsized
    layers = np.arange(len(s.first_token))
    for panel, (name, series), (level, value) in (
        (top, ("first token's share", s.first_token), ("an even spread", even)),
        (bottom, ("first / others", ratio), (f"{p.outsized:.0f} times", outsized)),
    ):
        assert panel.lines.keys() == {name, level}
        assert np.array_equal(panel.lines[name], [layers, series])
        assert panel.lines[level][1].tolist() == [value, value]  # a level line
