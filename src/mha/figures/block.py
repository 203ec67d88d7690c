"""Figures of the block page: the two orders of a Transformer block, drawn as
diagrams with the shapes of the real models' arrays on their arrows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyBboxPatch

from mha.figures.style import FONT, INK, PALETTE, SMALL, new_figure

if TYPE_CHECKING:
    from mha.pages.block import _Shapes

# The steps of a block, top to bottom: "split" (the stream forks: one copy goes
# round, the residual), a sublayer ("norm", "attention", "ffn"), "add" (the copy that
# went round is added back).
PRE_NORM = ("split", "norm", "attention", "add", "split", "norm", "ffn", "add")
POST_NORM = ("split", "attention", "add", "norm", "split", "ffn", "add", "norm")
_COLOURS = {"norm": PALETTE[4], "attention": PALETTE[1], "ffn": PALETTE[2]}
_HEIGHT = {"split": 0.55, "add": 0.95, "norm": 0.95, "attention": 1.55, "ffn": 1.55}


def _shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(f"{n:,}" for n in shape) + ")"


def orders(panels: Sequence[tuple[str, str, dict[str, str], _Shapes]]) -> list[Figure]:
    """One diagram a ``(title, "pre" or "post", names, shapes)`` panel: the stream
    enters at the top, each sublayer (its name from ``names``: ``"norm"``,
    ``"attention"``, ``"ffn"``) is a box, each residual path a line round it to the
    ⊕ that adds it back; the stream's shape is on its arrows, the heads' and the
    FFN's inner shapes in their boxes. Two figures, which wrap on a phone.
    """
    return [_panel(*panel) for panel in panels]


def _panel(title: str, order: str, names: dict[str, str], shapes: _Shapes) -> Figure:
    steps = {"pre": PRE_NORM, "post": POST_NORM}[order]
    total = sum(_HEIGHT[s] for s in steps) + 1.6
    fig, ax = new_figure(3.5, 0.62 * total + 0.5)
    ax.set_xlim(-2.3, 2.3)
    ax.set_ylim(-total + 0.2, 0.9)
    ax.axis("off")
    ax.set_title(title, fontsize=FONT)
    stream = _shape(shapes.stream)
    y = 0.0
    ax.text(0, y + 0.15, "x", ha="center", va="bottom", fontsize=FONT)
    fork = None
    for step in steps:
        top, y = y, y - _HEIGHT[step]
        if step == "split":
            _arrow(ax, top, y, head=False)
            ax.plot([0], [y], "o", color=INK, ms=3)
            fork = y
        elif step == "add":
            centre = y + 0.3
            _arrow(ax, top, centre + 0.2)
            ax.add_patch(Circle((0, centre), 0.2, fill=False, ec=INK, lw=1.2))
            ax.text(0, centre, "+", ha="center", va="center", fontsize=FONT)
            side = -1.55
            ax.plot([0, side, side], [fork, fork, centre], color=INK, lw=1.2)
            ax.annotate(
                "",
                (-0.2, centre),
                (side, centre),
                arrowprops={"arrowstyle": "-|>", "color": INK, "lw": 1.2},
            )
            ax.text(
                side - 0.1,
                (fork + centre) / 2,
                "residual\n" + stream,
                ha="right",
                va="center",
                fontsize=SMALL,
                rotation=90,
            )
            y = centre - 0.2
        else:
            _arrow(ax, top, y + _HEIGHT[step] - 0.3)
            box_top, box_bottom = top - 0.3, y
            ax.add_patch(
                FancyBboxPatch(
                    (-1.2, box_bottom),
                    2.4,
                    box_top - box_bottom,
                    boxstyle="round,pad=0.02,rounding_size=0.12",
                    fc=_COLOURS[step],
                    ec=INK,
                    alpha=0.35,
                    lw=1,
                )
            )
            inside = {
                "norm": "",
                "attention": f"Q {_shape(shapes.queries)}\nK, V {_shape(shapes.keys)}",
                "ffn": f"hidden {_shape(shapes.hidden)}",
            }[step]
            label = names[step] + ("\n" + inside if inside else "")
            middle = (box_top + box_bottom) / 2
            ax.text(0, middle, label, ha="center", va="center", fontsize=SMALL)
    _arrow(ax, y, y - 0.6)
    ax.text(0, y - 0.65, "out", ha="center", va="top", fontsize=FONT)
    ax.text(0.12, 0.15 - 0.3, stream, ha="left", va="center", fontsize=SMALL)
    ax.text(0.12, y - 0.3, stream, ha="left", va="center", fontsize=SMALL)
    return fig


def _arrow(ax, start: float, end: float, head: bool = True) -> None:
    """A vertical arrow (or plain line) along the stream, from ``start`` down to
    ``end``."""
    style = "-|>" if head else "-"
    ax.annotate(
        "",
        (0, end),
        (0, start),
        arrowprops={"arrowstyle": style, "color": INK, "lw": 1.2, "shrinkA": 0},
    )
