"""The head-count sweep's figures draw the page's results: each h's loss and accuracy
ranges and seeds beside the paper's rows, each h's curve under its label, each head's
map and its circles and crosses, each seed's heads in the seed's legend colour."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import to_rgba

from mha.figures.plotted import errorbars, plotted
from mha.pages.one_head_or_many import page
from tests.figures.from_page import draw


def test_sweep_results_draws_each_hs_range_and_seeds_and_the_papers_rows():
    p = page()
    fig = draw(p, "sweep_results")
    heads = [r.n_heads for r in p.rows]
    panels, ranges = plotted(fig), errorbars(fig)  # the same axes, in order

    def titled(part: str) -> int:
        (index,) = (i for i, panel in enumerate(panels) if part in panel.title)
        return index

    for title, spread, seeds in (
        ("test loss", [r.loss_range for r in p.rows], [r.test_loss for r in p.rows]),
        (
            "test accuracy",
            [r.accuracy_range for r in p.rows],
            [r.accuracy for r in p.rows],
        ),
    ):
        (drawn,) = ranges[titled(title)].values()  # x, mean, min, max
        assert drawn[0].tolist() == heads
        assert np.allclose(drawn[1:].T, spread)
        lines = panels[titled(title)].lines
        dots = [line for label, line in lines.items() if label.startswith("_child")]
        assert all(np.array_equal(d[0], heads) for d in dots)
        assert np.allclose([d[1] for d in dots], np.transpose(seeds))  # (seeds, h)
    rows = p.paper["rows"]
    for title, values in (
        ("dev perplexity", [r.perplexity for r in rows]),
        ("dev BLEU", [r.bleu for r in rows]),
    ):
        (line,) = panels[titled(title)].lines.values()
        assert line.tolist() == [[r.n_heads for r in rows], values]
    toy, paper = panels[titled("test accuracy")], panels[titled("dev BLEU")]
    assert toy.xlabel.endswith(f"(d_model = {p.task['D_MODEL']})")
    assert paper.xlabel.endswith(f"(d_model = {p.paper['d_model']})")


def test_learning_curves_draws_each_hs_curve_under_its_label_and_the_level():
    p = page()
    (panel,) = plotted(draw(p, "learning_curves"))
    window, level = p.curve
    for r in p.rows:
        steps, loss = panel.lines[f"h = {r.n_heads}"]
        assert np.array_equal(loss, r.curve())
        assert steps.tolist() == list(range(window, window + len(loss)))
    (level_line,) = (v for k, v in panel.lines.items() if not k.startswith("h = "))
    assert level_line[1].tolist() == [level] * 2


def test_head_heatmaps_draws_each_heads_map_with_its_previous_and_referenced_marks():
    maps, labels, previous, referenced = page().figures["head_heatmaps"].data
    *figures, scale = draw(page(), "head_heatmaps")
    assert plotted(scale) == []  # the colour bar alone
    rows = np.arange(len(labels))
    for fig, (h, weights) in zip(figures, maps.items(), strict=True):
        assert fig._suptitle.get_text() == f"h = {h}"
        drawn = [panel for panel in plotted(fig) if panel.images]
        assert [panel.title for panel in drawn] == [f"H{i}" for i in range(h)]
        for panel, head in zip(drawn, weights, strict=True):
            assert np.array_equal(panel.images[0], head)
            circles, crosses = panel.points.values()
            assert circles.tolist() == np.column_stack([previous, rows]).tolist()
            assert crosses.tolist() == np.column_stack([referenced, rows]).tolist()
        blank = [""] * len(labels)
        assert all(
            q.xticks in (labels, blank) and q.yticks in (labels, blank) for q in drawn
        )
        assert drawn[-1].xticks == labels and drawn[0].yticks == labels  # the edges


def test_head_roles_places_each_seeds_heads_in_the_seeds_legend_colour():
    p = page()
    *figures, legend = draw(p, "head_roles")
    handles = legend.axes[0].get_legend().legend_handles
    names = [text.get_text() for text in legend.axes[0].get_legend().get_texts()]
    assert names == [f"seed {seed}" for seed in p.config.seeds]
    for fig, r in zip(figures, p.rows, strict=True):
        (panel,) = plotted(fig)
        assert panel.title == f"h = {r.n_heads}"
        assert [v.tolist() for v in panel.points.values()] == r.attention_mass.tolist()
        colours = [c.get_facecolor()[0, :3] for c in fig.axes[0].collections]
        keyed = [to_rgba(handle.get_color())[:3] for handle in handles]
        assert np.allclose(colours, keyed)  # seed k's heads in seed k's colour
