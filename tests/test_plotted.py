"""``mha.figures.plotted`` reads back what a drawing holds, under its legend labels."""

from __future__ import annotations

import numpy as np
import pytest

from mha.figures.plotted import plotted
from mha.figures.style import new_figure


def test_every_kind_of_artist_is_read_under_its_label_and_colour_bars_are_left_out():
    fig, ax = new_figure()
    ax.bar([0, 1], [0.75, 0.25], label="head A")
    ax.barh([0, 1], [0.3, 0.2], label="sideways")
    ax.fill_between([0, 1], [0, 1], [1, 2])  # a band: no points of its own
    ax.scatter([1, 2], [3, 4], label="dots")
    ax.plot([0, 2], [1, 5], "o", label="markers")
    fig.colorbar(ax.imshow(np.eye(2)))
    ax.text(0, 0, "76.8%")
    (panel,) = plotted(fig)
    assert {k: v.tolist() for k, v in panel.bars.items()} == {
        "head A": [0.75, 0.25],
        "sideways": [0.3, 0.2],
    }
    assert panel.points.keys() == {"dots"}
    assert panel.points["dots"].tolist() == [[1, 3], [2, 4]]
    assert panel.lines["markers"].tolist() == [[0, 2], [1, 5]]
    assert [image.tolist() for image in panel.images] == [[[1, 0], [0, 1]]]
    assert panel.texts == ["76.8%"]


def test_a_list_of_figures_gives_their_panels_in_order_and_anything_else_is_refused():
    figures = [new_figure()[0] for _ in range(2)]
    for i, fig in enumerate(figures):
        fig.axes[0].set_title(f"panel {i}")
    assert [p.title for p in plotted(figures)] == ["panel 0", "panel 1"]
    with pytest.raises(TypeError, match="fig: expected a matplotlib Figure"):
        plotted("<svg/>")
