"""One style for every figure, and deterministic SVG output.

Figures are drawn with a single ink colour (``INK``) on a transparent background;
``to_svg`` rewrites that ink to ``currentColor`` so an inlined SVG takes the text
colour of the page, light or dark. Data colours come from a colour-blind-safe
palette (Okabe-Ito) or the cividis colormap.
"""

from __future__ import annotations

import html
import io
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

INK = "#010101"  # a near-black no data colour uses, rewritten to currentColor
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")
CMAP = "cividis"

RC = {
    "svg.hashsalt": "mha",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "text.color": INK,
    "axes.labelcolor": INK,
    "axes.edgecolor": INK,
    "xtick.color": INK,
    "ytick.color": INK,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
    "figure.facecolor": "none",
    "axes.facecolor": "none",
    "savefig.facecolor": "none",
    "legend.frameon": False,
}
# Set once for the process, not in a context: an artist takes its colours when it is
# created, and figure functions go on drawing (labels, legends) after new_figure.
matplotlib.rcParams.update(RC)


def new_figure(width: float = 6.0, height: float = 3.0, **subplots) -> tuple:
    """A figure and its axes in the site style: ``fig, ax = new_figure()``.

    ```python
    from mha.figures.style import new_figure

    fig, ax = new_figure(4, 2)
    assert fig.get_figwidth() == 4
    ```
    """
    fig, axes = plt.subplots(figsize=(width, height), **subplots)
    plt.close(fig)  # figures are not shown, only saved; keep pyplot's registry empty
    return fig, axes


def to_svg(fig: Figure, alt: str) -> str:
    """Deterministic inline SVG of ``fig`` with ``alt`` as its accessible name.

    Byte-identical from run to run (fixed hash salt, no date), one line per element
    so it can sit in Markdown as a raw HTML block.

    ```python
    from mha.figures.style import new_figure, to_svg

    fig, ax = new_figure(2, 1)
    ax.plot([0, 1], [0, 1])
    svg = to_svg(fig, "a rising line")
    assert svg == to_svg(fig, "a rising line") and 'aria-label="a rising line"' in svg
    ```
    """
    if not alt.strip():
        raise ValueError(
            "alt: expected a description of the figure, got an empty string"
        )
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]  # drop the XML prolog and doctype
    svg = svg.replace(INK, "currentColor")
    label = html.escape(alt, quote=True)
    svg = svg.replace(
        "<svg ",
        f'<svg role="img" aria-label="{label}" class="mha-figure" ',
        1,
    )
    # matplotlib's <metadata> and its global `*{...}` stylesheet would leak into the page
    svg = re.sub(r"<metadata>.*?</metadata>|<style .*?</style>", "", svg, flags=re.S)
    return re.sub(r">\s*\n\s*", ">", svg).strip()
