"""The cricket figures draw the page's weights, dot products, queries and keys under
the names of their heads and tokens."""

from __future__ import annotations

import numpy as np

from mha.worked.cricket import EXTENDED_TOKENS, Q_HIS, QUERY, K
from tests.figures.drawn import assert_series, drawn


def _along(x: np.ndarray, q: np.ndarray) -> bool:
    return bool(np.isclose(x[0] * q[1] - x[1] * q[0], 0))


def _runs(example):
    return (example.full, example.head_a, example.head_b)


def test_three_distributions_shows_each_heads_weights_under_its_name():
    p, (panel,) = drawn("cricket", "three_distributions")
    runs = _runs(p.example)
    assert_series(panel.bars, {r.name: r.weights for r in runs})
    assert panel.texts == [f"{w:.3f}" for r in runs for w in r.weights]
    assert panel.xticks == [f'"{t}"' for t in p.tokens]
    assert panel.ylabel == f'weight from "{QUERY}"'


def test_extended_shows_each_querys_weights_in_its_own_panel():
    p, panels = drawn("cricket", "extended")
    assert len(panels) == len(p.extended)
    for panel, (query, example) in zip(panels, p.extended.items(), strict=True):
        assert panel.ylabel == f'weight from "{query}"'
        assert_series(panel.bars, {r.name: r.weights for r in _runs(example)})
    assert panels[-1].xticks == [f'"{t}"' for t in EXTENDED_TOKENS]


def test_head_vectors_draws_each_heads_query_and_keys_in_its_own_columns():
    p, panels = drawn("cricket", "head_vectors")
    heads = (p.example.head_a, p.example.head_b)
    assert len(panels) == len(heads)
    for panel, run in zip(panels, heads, strict=True):
        q, k = Q_HIS[list(run.dims)], K[:, list(run.dims)]
        assert panel.title == run.name
        assert (panel.xlabel, panel.ylabel) == tuple(f"column {d}" for d in run.dims)
        legend = {
            f'"{t}": q·k = {run.dots[j]:g}, weight {run.weights[j]:.3f}'
            for j, t in enumerate(p.tokens)
        }
        assert legend <= panel.lines.keys()
        keys = sorted(key.tolist() for key in k if key.any())
        tails, tips = zip(*(a.tolist() for a in panel.patches.values()), strict=True)
        assert set(map(tuple, tails)) == {(0, 0)}
        assert sorted(tips) == sorted([q.tolist(), *keys])  # q's arrow, the keys'
        query_line, *rest = [v for n, v in panel.lines.items() if n.startswith("_")]
        assert query_line[:, 0].tolist() == [0, 0] and _along(query_line[:, 1], q)
        drops = [v for v in rest if v.shape[1] == 2]  # from a key to q's line
        assert sorted(v[:, 0].tolist() for v in drops) == keys
        for tip, foot in (v.T for v in drops):  # the foot: on q's line, square to it
            assert _along(foot, q) and np.isclose((tip - foot) @ q, 0)
        assert f"q({QUERY})" in panel.texts
        zero = [t for t, key in zip(p.tokens, k, strict=True) if not key.any()]
        assert [v.tolist() for v in rest if v.shape[1] == 1] == [[[0], [0]]] * len(zero)
        assert [t for t in panel.texts if t.endswith("(zero)")] == [
            f"{t} (zero)" for t in zero
        ]
