"""The real-heads page's figures draw the atlas and the pruning study the page prints:
each head's kind and letter, each statistic under its title, each kind's typical head
under its name, each head's and layer's damage, both pruning curves by label."""

from __future__ import annotations

import numpy as np

from mha.figures.plotted import plotted
from mha.figures.real_heads import KIND_STYLE, STAT_TITLES
from mha.pages.real_heads import _CAT, _CRICKET, _KINDS, _TARGETS, page
from tests.figures.from_page import draw


def _name(layer: int, head: int) -> str:
    return f"L{layer}H{head}"  # as the page names a head


def test_kind_grid_colours_and_letters_each_head_by_its_kind_and_counts_them():
    a = page().atlas
    fig = draw(page(), "kinds")
    (panel,) = plotted(fig)
    (codes,) = panel.images
    kinds = list(_KINDS)
    assert np.array_equal(codes, np.vectorize(kinds.index)(a.kinds))
    letters = [KIND_STYLE[kind][1] for kind in a.kinds.ravel()]
    assert panel.texts == [letter for letter in letters if letter]
    legend = fig.axes[0].get_legend()
    counts = page().counts
    assert [t.get_text() for t in legend.get_texts()] == [
        f"{KIND_STYLE[kind][1] or ' '}  {kind} ({counts[kind]})" for kind in a.present()
    ]
    image = fig.axes[0].images[0]
    for kind, patch in zip(a.present(), legend.get_patches(), strict=True):
        cell = image.cmap(image.norm(kinds.index(kind)))  # the colour of its cells
        key = patch.get_facecolor()
        assert np.allclose(cell, key) or cell[3] == key[3] == 0  # or both clear


def test_statistic_grids_draw_each_statistic_under_its_title():
    p = page()
    drawn = {panel.title: panel for panel in plotted(draw(p, "statistics"))}
    names = [*_TARGETS, "spread"]
    assert list(drawn) == [STAT_TITLES[name] for name in names]
    for name in names:
        (image,) = drawn[STAT_TITLES[name]].images
        assert np.array_equal(image, p.atlas.statistics[name])
        layers, heads = (list(map(str, range(n))) for n in image.shape)
        assert drawn[STAT_TITLES[name]].yticks == layers
        assert drawn[STAT_TITLES[name]].xticks == heads
    for name, head in p.strongest.items():  # the brightest cells the page names
        (image,) = drawn[STAT_TITLES[name]].images
        assert _name(*np.unravel_index(image.argmax(), image.shape)) == head
        assert image.max() == p.strongest_value[name]


def test_typical_heads_draw_each_kinds_typical_head_on_the_sentence():
    p = page()
    for name, example in (("cricket", _CRICKET), ("cat", _CAT)):
        seed = p.atlas.examples[example]
        panels = plotted(draw(p, name))
        assert [q.title for q in panels] == [
            f"{kind}: {p.typical[kind]}" for kind in p.atlas.present()
        ]
        for panel, kind in zip(panels, p.atlas.present(), strict=True):
            (image,) = panel.images
            assert np.array_equal(image, seed.weights[p.atlas.typical(kind)])
            assert panel.xticks == list(seed.tokens) == panel.yticks


def test_pruning_damage_draws_each_heads_and_each_layers_damage():
    p = page()
    r = p.pruned
    heads, layers = plotted(draw(p, "damage"))
    (damage,) = heads.images
    assert np.array_equal(damage, r.damage)
    for head, value in ((p.least, p.least_damage), (p.most, p.most_damage)):
        layer, index = (int(n) for n in head[1:].split("H"))
        assert damage[layer, index] == value
    (bars,) = layers.bars.values()
    assert np.array_equal(bars, 1 - r.layer_cosine)
    assert bars.argmax() == p.worst_layer and bars.max() == 1 - p.worst_cosine
    assert layers.yticks == [str(i) for i in range(len(bars))]


def test_cumulative_pruning_draws_both_curves_by_label_and_the_papers_shares():
    p = page()
    r = p.pruned
    (panel,) = plotted(draw(p, "cumulative"))
    cosine = panel.lines["cosine to the unpruned embeddings"]
    retrieval = panel.lines["retrieval accuracy"]
    assert np.array_equal(cosine, [r.counts, r.cumulative_cosine])
    assert np.array_equal(retrieval, [r.counts, r.cumulative_retrieval])
    for count, _, at_cosine, at_retrieval in p.literature:  # the table's rows
        (i,) = np.flatnonzero(r.counts == count)
        assert (cosine[1, i], retrieval[1, i]) == (at_cosine, at_retrieval)
    (_, papers) = p.figures["cumulative"].data
    assert [p.michel.BERT_PRUNABLE, p.voita_share] == [share for share, _ in papers]
    marks = [line for label, line in panel.lines.items() if label.startswith("_")]
    assert [mark[0, 0] for mark in marks] == [s * r.n_heads for s, _ in papers]
    assert panel.texts == [f" {name}: {share:.0%}" for share, name in papers]
