"""One style for every figure, and deterministic SVG output.

Figures are drawn with a single ink colour (``INK``) on a transparent background;
``to_svg`` rewrites that ink to ``currentColor`` so an inlined SVG takes the text
colour of the page, light or dark. Data colours come from a colour-blind-safe
palette (Okabe-Ito) or the cividis colormap.

Legibility: no text is smaller than ``SMALL`` points (tick labels, legends and
annotations take it by default), but for ``DENSE`` token labels in narrow panels. A figure is drawn at 4/3 px per point and shrinks to
fit narrow screens, but never below the scale at which its smallest text is
``PHONE_PX`` pixels: ``to_svg`` writes that floor as the SVG's ``min-width``, and a
wider figure scrolls sideways instead (``docs/assets/css/site.css``). Small multiples
are drawn as a list of figures, one per panel, which wrap on a narrow screen.
"""

from __future__ import annotations

import html
import io
import math
import re
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

INK = "#010101"  # a near-black no data colour uses, rewritten to currentColor
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")
CMAP = "cividis"
FONT = 10  # points: axis labels and titles
SMALL = 9  # points: ticks, legends, annotations; the smallest text of most figures
# points: one label per token of a long sentence, only in a panel narrow enough for a
# phone at its natural size (under 340 px), where it stays 9.3 px on every screen
DENSE = 7
DESKTOP_PX = 9  # smallest text on screen at 1280 px wide (checked in the browser)
PHONE_PX = 7  # smallest text on screen at 375 px wide: the floor of a figure's scale
PX_PER_PT = 4 / 3  # CSS pixels per point: an SVG "432pt" wide is 576 px wide

RC = {
    "svg.hashsalt": "mha",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": FONT,
    "axes.titlesize": FONT,
    "axes.labelsize": FONT,
    "xtick.labelsize": SMALL,
    "ytick.labelsize": SMALL,
    "legend.fontsize": SMALL,
    "legend.title_fontsize": SMALL,
    # log axes print 0.00001 to 100000 as plain numbers (a superscript, 10⁻⁴, would be
    # drawn at 0.7 x SMALL)
    "axes.formatter.min_exponent": 6,
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
    """A figure and its axes in the site style: ``fig, ax = new_figure()``."""
    fig, axes = plt.subplots(figsize=(width, height), **subplots)
    plt.close(fig)  # figures are not shown, only saved; keep pyplot's registry empty
    return fig, axes


# Material's search skips an element with this attribute, then removes the attribute
# from the page it builds
NOT_SEARCHED = 'data-search-exclude="figure"'


def to_svg(fig: Figure | Sequence[Figure], alt: str) -> str:
    """Deterministic inline SVG of ``fig`` with ``alt`` as its accessible name.

    Byte-identical from run to run (fixed hash salt, no date), one line per element
    so it can sit in Markdown as a raw HTML block. Its ``min-width`` keeps its smallest
    text at ``PHONE_PX`` pixels or more on screen. Small multiples are a list of
    figures: each panel is its own SVG, and the panels, in a ``<div>`` named by
    ``alt``, wrap on a narrow screen instead of shrinking.

    The figure's text (ticks, labels, legends) is kept out of the site's search
    (``NOT_SEARCHED``): a snippet of its numbers run together helps no reader.
    """
    if not alt.strip():
        raise ValueError(
            "alt: expected a description of the figure, got an empty string"
        )
    label = html.escape(alt, quote=True)
    if isinstance(fig, Figure):
        return _svg(fig, f'role="img" aria-label="{label}" {NOT_SEARCHED}')
    if not fig or not all(isinstance(panel, Figure) for panel in fig):
        raise TypeError(
            f"fig: expected a matplotlib Figure or a non-empty list of them, got {fig!r}"
        )
    panels = "".join(_svg(panel, 'aria-hidden="true"') for panel in fig)
    return (
        f'<div class="mha-panels" role="img" aria-label="{label}" {NOT_SEARCHED}>'
        f"{panels}</div>"
    )


def smallest_text(svg: str) -> float:
    """The smallest font size, in points, of the text of ``svg`` (``inf``: no text)."""
    sizes = [float(size) for size in re.findall(r"font-size: ([0-9.]+)px", svg)]
    return min(sizes, default=math.inf)


def _svg(fig: Figure, attributes: str) -> str:
    """One figure as inline SVG, ``attributes`` first, its legible ``min-width`` set."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]  # drop the XML prolog and doctype
    svg = svg.replace(INK, "currentColor")
    # user units are points: at its natural size the figure is PX_PER_PT px a point
    width = float(re.search(r'width="([0-9.]+)pt"', svg).group(1)) * PX_PER_PT
    floor = width * PHONE_PX / (smallest_text(svg) * PX_PER_PT)
    svg = svg.replace(
        "<svg ",
        f'<svg {attributes} class="mha-figure" style="min-width: {math.ceil(floor)}px" ',
        1,
    )
    # matplotlib's <metadata> and its global `*{...}` stylesheet would leak into the page
    svg = re.sub(r"<metadata>.*?</metadata>|<style .*?</style>", "", svg, flags=re.S)
    return re.sub(r">\s*\n\s*", ">", svg).strip()
