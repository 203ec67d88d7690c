"""Draw a page's figure from its own spec, as the build does (without the SVG)."""

from __future__ import annotations

from matplotlib.figure import Figure

from mha.figures import drawing
from mha.support.page import Page


def draw(page: Page, name: str) -> Figure | list[Figure]:
    """``mha.figures.<module>.<function>(*data)`` of ``page.figures[name]``."""
    spec = page.figures[name]
    return drawing(spec.draw)(*spec.data)
