"""What a figure plots, read back from the drawing itself.

A figure function returns a matplotlib ``Figure``; ``plotted`` reads the arrays its
artists hold (bar heights, line and marker data, images, scatter points), each under
the label the legend shows, so a test can compare what is on the canvas with the
page's values: a figure that draws head B's weights under head A's legend fails it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import FillBetweenPolyCollection, PathCollection
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.lines import AxLine, Line2D
from matplotlib.patches import FancyArrowPatch, Patch, Rectangle


@dataclass(frozen=True)
class Panel:
    """What one axes draws. Keys are the artists' labels, as the legend shows them
    (matplotlib names an unlabelled artist ``_child<n>`` or ``_container<n>``, and
    ``plotted`` an unlabelled patch ``_patch<n>``).

    - ``bars``: each bar group's lengths (heights, or widths of horizontal bars);
    - ``errors``: each bar group's error bars, ``(n, 2)``: low and high end per bar;
    - ``lines``: each line's ``(2, n)`` x and y data (markers-only plots included;
      an ``axline``'s two points; an ``axhline`` spans x 0 to 1 of the axes);
    - ``points``: each scatter's ``(n, 2)`` positions;
    - ``bands``: each ``fill_between``'s outline, ``(m, 2)`` points;
    - ``patches``: every other patch's outline in data coordinates, ``(m, 2)``
      points (a polygon, a frame), an arrow's tail and tip;
    - ``images``: each image's array, in drawing order;
    - ``texts``: every text drawn in the axes (bar labels, annotations), in order;
    - ``xticks``, ``yticks``: the tick labels; ``title``, ``xlabel``, ``ylabel``.
    """

    bars: dict[str, np.ndarray] = field(default_factory=dict)
    errors: dict[str, np.ndarray] = field(default_factory=dict)
    lines: dict[str, np.ndarray] = field(default_factory=dict)
    points: dict[str, np.ndarray] = field(default_factory=dict)
    bands: dict[str, np.ndarray] = field(default_factory=dict)
    patches: dict[str, np.ndarray] = field(default_factory=dict)
    images: list[np.ndarray] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    xticks: list[str] = field(default_factory=list)
    yticks: list[str] = field(default_factory=list)
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""


def plotted(fig: Figure | Sequence[Figure]) -> list[Panel]:
    """One ``Panel`` per axes of ``fig`` (or of each figure of a list, in order),
    colour bars left out.
    """
    return [_panel(ax) for ax in _axes(fig)]


def _axes(fig: object) -> list[Axes]:
    """The axes of ``fig`` (a figure or a list of them), in order, colour bars left
    out; a TypeError naming the argument for anything else."""
    figures = [fig] if isinstance(fig, Figure) else fig
    if not (
        isinstance(figures, Sequence) and all(isinstance(f, Figure) for f in figures)
    ):
        raise TypeError(
            f"fig: expected a matplotlib Figure or a list of them, got {fig!r}"
        )
    return [ax for f in figures for ax in f.axes if not _is_colorbar(ax)]


def _bar_patches(ax: Axes) -> set[int]:
    """The ids of the patches ``ax``'s bar groups drew (read as bars, not patches)."""
    return {id(p) for c in ax.containers if isinstance(c, BarContainer) for p in c}


def _panel(ax: Axes) -> Panel:
    containers = [c for c in ax.containers if isinstance(c, BarContainer)]
    in_bars = _bar_patches(ax)
    return Panel(
        bars={
            c.get_label(): np.array([_length(p, c.orientation) for p in c.patches])
            for c in containers
        },
        errors={c.get_label(): _errors(c) for c in containers if c.errorbar},
        lines={line.get_label(): _line(line) for line in ax.lines},
        points={
            c.get_label(): np.asarray(c.get_offsets(), float)
            for c in ax.collections
            if isinstance(c, PathCollection)  # what scatter draws
        },
        bands={
            c.get_label(): np.concatenate([p.vertices for p in c.get_paths()])
            for c in ax.collections
            if isinstance(c, FillBetweenPolyCollection)
        },
        patches={
            p.get_label() or f"_patch{i}": _outline(p)  # add_patch leaves it unnamed
            for i, p in enumerate(ax.patches)
            if id(p) not in in_bars
        },
        images=[np.asarray(image.get_array()) for image in ax.images],
        texts=[t.get_text() for t in ax.texts],
        xticks=[t.get_text() for t in ax.get_xticklabels()],
        yticks=[t.get_text() for t in ax.get_yticklabels()],
        title=ax.get_title(),
        xlabel=ax.get_xlabel(),
        ylabel=ax.get_ylabel(),
    )


def _length(patch: Rectangle, orientation: str) -> float:
    return patch.get_width() if orientation == "horizontal" else patch.get_height()


def _errors(bars: BarContainer) -> np.ndarray:
    along = 0 if bars.orientation == "horizontal" else 1  # the axis the bars grow on
    segments = bars.errorbar.lines[2][0].get_segments()  # its bars, not its caps
    return np.array([[s[0][along], s[1][along]] for s in segments], float)


def _line(line: Line2D) -> np.ndarray:
    if isinstance(line, AxLine):  # infinite: its data are placeholders
        return np.array([line.get_xy1(), line.get_xy2()], float).T
    return np.array([line.get_xdata(), line.get_ydata()], float)


def _outline(patch: Patch) -> np.ndarray:
    if isinstance(patch, FancyArrowPatch):  # its path is only made when drawn
        return np.array(patch._posA_posB, float)  # no public getter
    return patch.get_patch_transform().transform(patch.get_path().vertices)


def _is_colorbar(ax: Axes) -> bool:
    return getattr(ax, "_colorbar", None) is not None


def errorbars(fig: Figure | Sequence[Figure]) -> list[dict[str, np.ndarray]]:
    """Each axes' error bars, as ``plotted`` orders its panels, under their labels:
    a ``(4, n)`` array of x, y and each vertical bar's low and high end. (``plotted``
    cannot tell them apart: matplotlib labels every error bar's line ``_nolegend_``.)
    """
    return [
        {
            c.get_label(): _errorbar(c)
            for c in ax.containers
            if isinstance(c, ErrorbarContainer)
        }
        for ax in _axes(fig)
    ]


def _errorbar(container: ErrorbarContainer) -> np.ndarray:
    line, _, (vertical, *_) = container.lines
    ends = np.array([segment[:, 1] for segment in vertical.get_segments()])  # (n, 2)
    return np.array([line.get_xdata(), line.get_ydata(), *ends.T], float)


def rectangles(fig: Figure | Sequence[Figure]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each axes' drawn rectangles (cells of a drawn matrix, boxes; bars left out, as
    ``plotted`` reads them), as ``plotted`` orders its panels: their ``(n, 4)`` x, y,
    width and height and their ``(n, 4)`` RGBA face colours, in drawing order.
    """
    return [_rectangles(ax) for ax in _axes(fig)]


def _rectangles(ax: Axes) -> tuple[np.ndarray, np.ndarray]:
    bars = _bar_patches(ax)
    drawn = [p for p in ax.patches if isinstance(p, Rectangle) and id(p) not in bars]
    boxes = [(*p.get_xy(), p.get_width(), p.get_height()) for p in drawn]
    colours = [p.get_facecolor() for p in drawn]
    return np.array(boxes, float).reshape(-1, 4), np.array(colours).reshape(-1, 4)
