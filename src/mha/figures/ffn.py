"""Figures of the page on what attention cannot do alone."""

from __future__ import annotations

from typing import TYPE_CHECKING

from matplotlib.figure import Figure
from matplotlib.patches import Polygon

from mha.figures.style import PALETTE, new_figure

if TYPE_CHECKING:
    from mha.pages.ffn import _HullDemo


def convex_hull(demo: _HullDemo) -> Figure:
    """One head's value vectors, their convex hull, and the head's outputs inside it."""
    fig, ax = new_figure(3.9, 3.4)
    ax.add_patch(
        Polygon(
            demo.hull,
            closed=True,
            facecolor=PALETTE[4],
            alpha=0.25,
            edgecolor=PALETTE[0],
            label="convex hull of the values",
        )
    )
    ax.plot(*demo.values.T, "o", color=PALETTE[0], label="value vectors")
    ax.plot(*demo.outputs.T, "x", color=PALETTE[5], ms=8, mew=2, label="outputs")
    pad = 0.15 * (demo.values.max(axis=0) - demo.values.min(axis=0))
    ax.set_xlim(demo.values[:, 0].min() - pad[0], demo.values[:, 0].max() + pad[0])
    ax.set_ylim(demo.values[:, 1].min() - pad[1], demo.values[:, 1].max() + pad[1])
    ax.set_xlabel("value coordinate 1")
    ax.set_ylabel("value coordinate 2")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig
