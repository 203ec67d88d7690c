"""The multi-head mechanism (mha.pages.multi_head), its figures and its page."""

from __future__ import annotations

import dataclasses
import inspect
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mha import MultiHeadAttention, scaled_dot_product_attention
from mha.figures import multi_head as figures
from mha.figures import to_svg
from mha.figures.plotted import plotted, rectangles
from mha.heads import split_heads
from mha.pages import multi_head as mechanism
from mha.pages.multi_head import page
from mha.support.formatting import decimals
from mha.worked import base_layer
from tests.pages.drawn import draw

PAGE = Path(__file__).resolve().parents[2] / "docs" / "multi-head.md"


def tab_fence(label: str) -> tuple[str, str]:
    """``(info, code)`` of the code block under the content tab ``=== "label"``."""
    page = PAGE.read_text()
    start = page.index(f'=== "{label}"')
    fence = re.search(r"\n    ```([^\n]*)\n(.*?)\n    ```", page[start:], re.S)
    return fence.group(1), textwrap.dedent(fence.group(2))


def run_tab(label: str) -> dict:
    """Run the code of a content tab (pytest-markdown-docs does not see indented fences)."""
    _, code = tab_fence(label)
    namespace: dict = {}
    exec(compile(code, f"{PAGE.name}[{label}]", "exec"), namespace)
    return namespace


@pytest.fixture
def biased() -> tuple[MultiHeadAttention, np.ndarray]:
    """A layer with non-zero biases and a batched input."""
    rng = np.random.default_rng(11)
    layer = MultiHeadAttention(12, 3, bias=True, rng=rng)
    for name in ("b_q", "b_k", "b_v", "b_o"):
        setattr(layer, name, rng.normal(size=getattr(layer, name).shape))
    return layer, rng.normal(size=(2, 5, 12))


def test_head_outputs_are_each_heads_attention(biased) -> None:
    layer, x = biased
    q, k, v = (
        split_heads(x @ w + b, 3)
        for w, b in (
            (layer.w_q, layer.b_q),
            (layer.w_k, layer.b_k),
            (layer.w_v, layer.b_v),
        )
    )
    expected, _ = scaled_dot_product_attention(q, k, v)  # (2, 3, 5, 4)
    assert np.allclose(mechanism.head_outputs(layer, x), expected)


def test_writes_add_up_to_the_output(biased) -> None:
    layer, x = biased
    out, _ = layer(x)
    writes = mechanism.head_writes(layer, x)  # (2, 3, 5, 12)
    assert writes.shape == (2, 3, 5, 12)
    assert np.allclose(writes.sum(axis=-3) + layer.b_o, out)
    assert not np.allclose(writes[:, 0], 0)  # each head writes something


def test_without_w_o_leaves_the_layer_alone(biased) -> None:
    layer, x = biased
    w_o, before = layer.w_o.copy(), layer(x)[0]
    bare = mechanism.without_w_o(layer)
    assert np.array_equal(layer.w_o, w_o) and layer.b_o is not None
    assert np.array_equal(layer(x)[0], before)
    heads = mechanism.head_outputs(layer, x)  # (2, 3, 5, 4)
    assert np.allclose(bare(x)[0], np.concatenate(list(np.moveaxis(heads, 1, 0)), -1))


def test_dropping_w_o_keeps_each_head_in_its_own_slice() -> None:
    layer, x = mechanism.example()
    bare = mechanism.dependence(mechanism.without_w_o(layer), x)
    mixed = mechanism.dependence(layer, x)
    h = layer.n_heads
    assert np.array_equal(bare.moved == 0, ~np.eye(h, dtype=bool))
    assert bare.outside_own_slice == 0 and bare.slices_moved.tolist() == [1] * h
    assert mixed.smallest > 0.1 and mixed.slices_moved.tolist() == [h] * h


def test_mechanism_refuses_shared_kv_heads() -> None:
    gqa = MultiHeadAttention(8, 4, n_kv_heads=2)
    with pytest.raises(ValueError, match=r"^layer: expected one K/V head"):
        mechanism.dependence(gqa, np.ones((3, 8)))
    with pytest.raises(ValueError, match=r"^layer: expected one K/V head"):
        mechanism.wide_head(gqa)


def test_wide_head_is_one_full_width_head_with_the_same_arrays(biased) -> None:
    layer, x = biased
    wide = mechanism.wide_head(layer)
    assert wide.n_heads == 1 and wide.w_q is layer.w_q and wide.b_o is layer.b_o
    out, weights = wide(x)
    q, k, v = (
        x @ layer.w_q + layer.b_q,
        x @ layer.w_k + layer.b_k,
        x @ layer.w_v + layer.b_v,
    )
    heads, expected = scaled_dot_product_attention(q, k, v)  # one softmax over d_model
    assert np.allclose(weights[:, 0], expected)
    assert np.allclose(out, heads @ layer.w_o + layer.b_o)


def test_one_vs_many_picks_the_most_divided_query() -> None:
    layer, x = mechanism.example()
    contrast = mechanism._one_vs_many(layer, x)
    _, weights = layer(x)
    distinct = [len(set(weights[:, t].argmax(-1).tolist())) for t in range(len(x))]
    assert len(set(contrast.head_tops)) == max(distinct) > 1
    assert contrast.head_tops == weights[:, contrast.query].argmax(-1).tolist()
    assert contrast.wide_top == contrast.wide.argmax()  # positions from 0
    assert np.allclose(
        contrast.wide, mechanism.wide_head(layer)(x)[1][0, contrast.query]
    )


def test_split_figure_text_follows_the_page_colour() -> None:
    texts = re.findall(r"<text[^>]*>", to_svg(figures.split_heads_reshape(), "alt"))
    assert texts and all("fill: currentColor" in t for t in texts)


def test_split_figure_draws_what_split_heads_returns() -> None:
    fig = figures.split_heads_reshape(seq=2, d_model=6, n_heads=3)
    numbers = [t.get_text() for t in fig.axes[0].texts if t.get_text().isdigit()]
    left, right = numbers[:12], numbers[12:]
    assert left == [str(i) for i in range(12)]
    heads = split_heads(np.arange(12).reshape(1, 2, 6), 3)
    assert right == [str(v) for v in heads.ravel()]


def test_figures_are_byte_identical() -> None:
    layer, x = mechanism.example()
    bare = mechanism.dependence(mechanism.without_w_o(layer), x)
    mixed = mechanism.dependence(layer, x)
    contrast = mechanism._one_vs_many(layer, x)
    for function, args in (
        (figures.split_heads_reshape, ()),
        (figures.head_dependence, (bare, mixed)),
        (figures.one_vs_many, (contrast,)),
    ):
        assert to_svg(function(*args), "alt") == to_svg(function(*args), "alt")


def test_numpy_tab_runs() -> None:
    namespace = run_tab("NumPy")
    assert namespace["weights"].shape == (2, 2, 5, 5)


def test_pytorch_tab_is_kept_out_of_the_build_and_of_markdown_docs() -> None:
    info, code = tab_fence("PyTorch")
    assert info == "{.python notest}" and "import torch" in code


def test_page_renders(built_site: Path) -> None:
    html = (built_site / "multi-head" / "index.html").read_text()
    assert html.count('<figure class="mha"') == 4
    assert html.count("<figcaption><strong>Figure ") == 4
    assert html.count('class="tabbed-set') == 1
    assert "exec" not in re.findall(r'class="language-(\w+)', html)
    text = re.sub(
        r"\s+",
        " ",
        re.sub(r"<[^>]+>", " ", re.sub(r"<svg.*?</svg>", "", html, flags=re.S)),
    )
    layer, x = mechanism.example()
    mixed = mechanism.dependence(layer, x)
    contrast = mechanism._one_vs_many(layer, x)
    assert f"by at least {decimals(mixed.smallest)}" in text
    assert "at tokens " + ", ".join(map(str, contrast.head_tops)) in text
    assert "with W_O: output slices each head moves = [4 4 4 4]" in text
    assert f"the query at position {contrast.query} " in text
    assert "cross-attention maps: (4, 3, 6)" in text
    assert "heads (8, 8, 64) -&gt; maps (8, 8, 8)" in text  # the whole layer ran
    assert "head_1" not in text and "i=1" not in html  # heads from 0


# --- the whole layer, Q_i as a column block, cross-attention --------------------


def test_whole_layer_is_the_base_shape_on_the_cat_sentence() -> None:
    w = mechanism.whole_layer()
    assert w.sizes == {"n": 8, "d_model": 512, "h": 8, "d_k": 64}
    assert w.tokens == ("the", "cat", "sat", "on", "the", "warm", "mat", ".")
    out, weights = w.layer(w.x)
    assert np.allclose(w.out, out) and np.allclose(w.weights, weights)


def test_whole_layer_figure_labels_the_arrays_shapes() -> None:
    w = mechanism.whole_layer()
    fig = figures.whole_layer(w)
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    for shape in ("(8, 512)", "(512, 512)", "(8, 8, 64)", "(8, 8, 8)"):
        assert shape in texts
    assert [t for t in ("H0", "H7") if t in texts] == ["H0", "H7"]
    maps = [im.get_array() for im in fig.axes[0].images]
    assert len(maps) == 8 + 1 and np.allclose(maps[3], w.weights[3])
    scale = maps[-1].ravel()  # the colour scale: 0 to the largest weight drawn
    assert scale[0] == 0 and np.isclose(scale[-1], w.weights.max())
    labels = [t.get_text() for t in fig.axes[0].texts]
    for token in set(w.tokens):  # each map row's and column's token, in order
        assert labels.count(token) == w.tokens.count(token) * (2 + 4)  # rows, keys
    assert f"{w.weights.max():.2f}" in labels


def test_q_i_is_a_column_block_and_the_reshape_view() -> None:
    layer, x = mechanism.example()
    view = split_heads(x @ layer.w_q, layer.n_heads)
    for i in range(layer.n_heads):
        assert np.allclose(x @ mechanism.column_block(layer.w_q, i, 4), view[i])
    with pytest.raises(ValueError, match=r"^i: expected a head"):
        mechanism.column_block(layer.w_q, 4, 4)


def test_cross_attention_reads_another_sequence_through_the_same_weights(
    biased,
) -> None:
    layer, x = biased
    memory, queries = x[0], x[1, :2]
    out, weights = layer(queries, kv=memory)
    assert weights.shape == (3, 2, 5) and np.allclose(weights.sum(-1), 1)
    q = split_heads(queries @ layer.w_q + layer.b_q, 3)
    k = split_heads(memory @ layer.w_k + layer.b_k, 3)
    v = split_heads(memory @ layer.w_v + layer.b_v, 3)
    heads, expected = scaled_dot_product_attention(q, k, v)
    assert np.allclose(weights, expected)
    concat = np.concatenate(list(heads), axis=-1)
    assert np.allclose(out, concat @ layer.w_o + layer.b_o)
    assert np.allclose(layer(memory, kv=memory)[0], layer(memory)[0])


def test_facts_hold_and_a_stale_one_is_refused() -> None:
    page = mechanism.page()
    assert all(f.holds for f in page.facts.values())
    names = inspect.signature(mechanism._facts).parameters
    values = {name: getattr(page, name) for name in names}
    ones = np.ones_like(page.contrast.heads)
    tied = dataclasses.replace(page.contrast, heads=ones)
    assert not mechanism._facts(**values | {"contrast": tied})["tops_differ"].holds
    same = mechanism._Dependence(np.ones((4, 4)))  # every head moves every slice
    refused = mechanism._facts(**values | {"bare": same, "mixed": page.bare})
    assert not refused["bare_own"].holds and not refused["mixed_every"].holds
    gqa = MultiHeadAttention(8, 4, n_kv_heads=2)
    assert not mechanism._facts(**values | {"wide": gqa})["wide_same"].holds
    no_w_o = dataclasses.replace(page.whole, out=page.whole.concat)  # W_O skipped
    assert not mechanism._facts(**values | {"whole": no_w_o})["whole_matches"].holds
    shorter = page.x[:-1]  # not the same tokens twice: the last one is not read
    moved = page.layer(page.x, kv=shorter)[0] - page.layer(page.x)[0]
    gap = float(np.abs(moved).max())
    assert not mechanism._facts(**values | {"cross_gap": gap})["cross_is_self"].holds


def test_the_figures_draw_the_pages_values() -> None:
    page = mechanism.page()
    assert {name: f.data for name, f in page.figures.items()} == {
        "whole_layer": (page.whole,),
        "split_heads_reshape": (3, 8, 4),
        "head_dependence": (page.bare, page.mixed),
        "one_vs_many": (page.contrast,),
    }
    for figure in page.figures.values():
        module, _, function = figure.draw.partition(".")
        assert module == "multi_head" and callable(getattr(figures, function))
    assert "(8, 512)" in page.figures["whole_layer"].alt


def test_the_whole_layer_code_on_the_page_is_the_numerically_safe_softmax(
    monkeypatch,
) -> None:
    """The page's whole-layer block, run on weights scaled so that a plain np.exp of
    the scores overflows to inf: it still gives the layer's own maps."""
    page = PAGE.read_text()
    start = page.index("from mha.worked.base_layer import whole_layer")
    code = page[page.rindex("```python", 0, start) : page.index("\n```\n", start)]
    code = code.split("\n", 1)[1]
    w = mechanism.whole_layer()
    loud = dataclasses.replace(w, layer=MultiHeadAttention(512, 8))
    for name in ("w_q", "w_k", "w_v", "w_o"):
        setattr(loud.layer, name, getattr(w.layer, name))
    loud.layer.w_q = w.layer.w_q * 1000.0  # scores of thousands: exp(1e3) is inf
    qh = split_heads(w.x @ loud.layer.w_q, 8)
    kh = split_heads(w.x @ loud.layer.w_k, 8)
    assert (qh @ kh.swapaxes(-1, -2) / 8).max() > 710  # np.exp would overflow
    monkeypatch.setattr(base_layer, "whole_layer", lambda: loud)
    namespace: dict = {}
    with np.errstate(over="raise", invalid="raise"):
        exec(compile(code, f"{PAGE.name}[whole layer]", "exec"), namespace)
    assert np.isfinite(namespace["weights"]).all()
    assert np.allclose(namespace["weights"], loud.layer(w.x)[1])


# --- its figures --------------------------------------------------------------
# The multi-head page's figures draw the page's arrays: ``split_heads``' cells, what
# W_O mixes with and without it, one query's weights per head, the whole layer's maps.


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
