"""``mha.figures.plotted`` reads back what ``plotted`` does not: error bars (matplotlib
labels each one's line ``_nolegend_``) and drawn rectangles (a matrix's cells)."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.patches import Rectangle

from mha.figures.plotted import errorbars, plotted, rectangles
from mha.figures.style import new_figure


def test_each_error_bar_is_read_under_its_label_with_its_ends_in_panel_order():
    fig, axes = new_figure(ncols=2)
    axes[0].errorbar([1, 2], [3, 4], yerr=[[1, 0.5], [2, 0]], label="loss", capsize=3)
    axes[0].errorbar([1, 2], [5, 6], yerr=0.25, label="accuracy")
    axes[1].plot([0, 1], [0, 1], label="not an error bar")
    fig.colorbar(axes[1].imshow(np.eye(2)))
    left, right = errorbars(fig)
    assert left.keys() == {"loss", "accuracy"} and right == {}
    assert left["loss"].tolist() == [[1, 2], [3, 4], [2, 3.5], [5, 4]]
    assert left["accuracy"].tolist() == [[1, 2], [5, 6], [4.75, 5.75], [5.25, 6.25]]
    assert len(errorbars([fig, fig])) == len(plotted(fig)) * 2
    with pytest.raises(TypeError, match="fig: expected a matplotlib Figure"):
        errorbars(None)


def test_rectangles_are_read_in_drawing_order_with_their_colours_but_not_bars():
    fig, axes = new_figure(ncols=2)
    axes[0].bar([0, 1], [2, 3], label="bars")
    axes[0].add_patch(Rectangle((0, 1), 2, 3, facecolor="#ff0000"))
    axes[0].add_patch(Rectangle((4, 5), 1, 1, facecolor=(0, 0, 1, 0.5)))
    fig.colorbar(axes[1].imshow(np.eye(2)))
    (boxes, colours), (no_boxes, no_colours) = rectangles(fig)
    assert boxes.tolist() == [[0, 1, 2, 3], [4, 5, 1, 1]]
    assert colours.tolist() == [[1, 0, 0, 1], [0, 0, 1, 0.5]]
    assert no_boxes.shape == no_colours.shape == (0, 4)
    with pytest.raises(TypeError, match="fig: expected a matplotlib Figure"):
        rectangles([fig, "<svg/>"])
