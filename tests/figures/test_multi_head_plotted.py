"""The multi-head page's figures draw the page's arrays: ``split_heads``' cells, what
W_O mixes with and without it, one query's weights per head, the whole layer's maps."""

from __future__ import annotations

import numpy as np

from mha.figures.plotted import plotted, rectangles
from mha.heads import split_heads
from mha.pages.multi_head import page
from tests.figures.from_page import draw


def test_split_heads_reshape_writes_x_then_each_head_split_heads_returns():
    seq, d_model, n_heads = page().figures["split_heads_reshape"].data
    (panel,) = plotted(draw(page(), "split_heads_reshape"))
    x = np.arange(seq * d_model).reshape(1, seq, d_model)
    cells = [t for t in panel.texts if t.isdigit()]  # in drawing order
    expected = [*x.ravel(), *split_heads(x, n_heads).ravel()]
    assert cells == [str(v) for v in expected]
    assert [t for t in panel.texts if t.startswith("H")] == [
        f"H{i}" for i in range(n_heads)
    ]
    shape = f"shape {split_heads(x, n_heads).shape}"
    assert f"shape {x.shape}" in panel.texts and shape in panel.texts


def test_split_heads_reshape_tints_each_entry_as_the_head_split_heads_puts_it_in():
    seq, d_model, n_heads = page().figures["split_heads_reshape"].data
    fig = draw(page(), "split_heads_reshape")
    (panel,), ((_, colours),) = plotted(fig), rectangles(fig)
    cells = [int(t) for t in panel.texts if t.isdigit()]  # a cell's box, then value
    assert len(cells) == len(colours) == 2 * seq * d_model
    left, right = np.split(np.array(colours), 2)  # x's cells, then the heads'
    tint = dict(zip(cells[len(left) :], map(tuple, right), strict=True))
    assert [tint[v] for v in cells[: len(left)]] == list(map(tuple, left))
    blocks = right.reshape(n_heads, -1, 4)  # each head's cells: one tint a head
    assert all((block == block[0]).all() for block in blocks)
    assert len({tuple(block[0]) for block in blocks}) == n_heads


def test_head_dependence_draws_bare_without_w_o_and_mixed_with_it():
    p = page()
    bare, mixed = plotted(draw(p, "head_dependence"))
    heads = [f"H{i}" for i in range(p.layer.n_heads)]
    for panel, values, title in (
        (bare, p.bare.moved, "W_O dropped"),
        (mixed, p.mixed.moved, "then W_O"),
    ):
        assert title in panel.title
        (image,) = panel.images
        assert np.array_equal(image, values)
        assert panel.texts == [f"{v:.2f}" for v in values.ravel()]
        assert panel.xticks == heads and panel.yticks == heads


def test_one_vs_many_draws_each_heads_row_then_the_wide_heads_and_bolds_the_top():
    p = page()
    c = p.contrast
    fig = draw(p, "one_vs_many")
    (panel,) = plotted(fig)
    rows = np.vstack([c.heads, c.wide[None]])
    (image,) = panel.images
    assert np.array_equal(image, rows)
    assert panel.yticks == [f"H{i}" for i in range(len(c.heads))] + ["one wide head"]
    assert panel.texts == [f"{v:.3f}" for v in rows.ravel()]
    assert f"query token {c.query} " in panel.xlabel
    bold = [t.get_fontweight() == "bold" for t in fig.axes[0].texts]
    tops = [*c.head_tops, c.wide_top]
    assert bold == [j == tops[i] for i, j in np.ndindex(rows.shape)]


def test_whole_layer_draws_each_heads_map_in_order_and_the_arrays_shapes():
    w = page().whole
    (panel,) = plotted(draw(page(), "whole_layer"))
    *maps, scale = panel.images
    assert len(maps) == len(w.weights)
    assert all(np.array_equal(m, w.weights[i]) for i, m in enumerate(maps))
    assert np.allclose(scale, np.linspace(0, w.weights.max(), scale.size)[None])
    ends = [f"{v:.2f}" for v in (0, w.weights.max() / 2, w.weights.max())]
    assert all(end in panel.texts for end in ends)  # the scale's labels
    heads = [t for t in panel.texts if t in {f"H{i}" for i in range(len(maps))}]
    assert heads == [f"H{i}" for i in range(len(maps))]

    def shape(a: np.ndarray) -> str:
        return "(" + ", ".join(str(d) for d in a.shape) + ")"

    said = [
        shape(w.x),
        f"× W_Q {shape(w.layer.w_q)}",
        f"× W_K {shape(w.layer.w_k)}",
        f"× W_V {shape(w.layer.w_v)}",
        f"Q_i, K_i, V_i: {shape(w.q_heads)} each",
        f"× V_i: {shape(w.heads)}",
        shape(w.concat),
        f"× W_O {shape(w.layer.w_o)}",
        f"output {shape(w.out)}",
    ]
    assert all(text in panel.texts for text in said), said
    assert panel.texts[0] == "X: " + " ".join(w.tokens)
