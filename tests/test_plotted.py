"""``mha.figures.plotted`` reads back what a drawing holds, under its legend labels."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.patches import Rectangle

from mha.figures.plotted import errorbars, plotted, rectangles
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


def test_error_bars_bands_infinite_lines_and_other_patches_are_read_in_data_units():
    from matplotlib.patches import FancyArrowPatch, Polygon, Rectangle

    fig, ax = new_figure()
    ax.bar([0, 1], [0.5, 0.25], yerr=[[0.1, 0.05], [0.2, 0.0]], label="with range")
    ax.barh([0], [0.75], xerr=[0.25], label="sideways")
    ax.fill_between([1, 2], [0, 1], [3, 4], label="band")
    ax.axline((0, 0), (2, 1), label="through q")
    ax.axhline(0.5, label="level")
    ax.add_patch(Polygon([[0, 0], [1, 0], [0, 1]], label="hull"))
    ax.add_patch(Rectangle((1.5, 2.5), 1, 2, fill=False, label="frame"))
    ax.add_patch(FancyArrowPatch((0, 0), (3, 1), label="arrow"))
    ax.add_patch(FancyArrowPatch((0, 0), (1, 2)))  # unnamed: named by position
    ax.add_patch(FancyArrowPatch((0, 0), (2, 1)))
    (panel,) = plotted(fig)
    assert panel.bars.keys() == {"with range", "sideways"}  # bars are not patches
    assert panel.errors["with range"].tolist() == [[0.4, 0.7], [0.2, 0.25]]
    assert panel.errors["sideways"].tolist() == [[0.5, 1.0]]
    band = {tuple(p) for p in panel.bands["band"]}
    assert band == {(1, 0), (2, 1), (1, 3), (2, 4)}
    assert panel.lines["through q"].tolist() == [[0, 2], [0, 1]]
    assert panel.lines["level"].tolist() == [[0, 1], [0.5, 0.5]]
    assert panel.patches.keys() == {"hull", "frame", "arrow", "_patch6", "_patch7"}
    assert panel.patches["hull"].tolist()[:3] == [[0, 0], [1, 0], [0, 1]]
    assert {tuple(p) for p in panel.patches["frame"]} == {
        (1.5, 2.5),
        (2.5, 2.5),
        (2.5, 4.5),
        (1.5, 4.5),
    }
    assert panel.patches["arrow"].tolist() == [[0, 0], [3, 1]]
    assert panel.patches["_patch7"].tolist() == [[0, 0], [2, 1]]


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
