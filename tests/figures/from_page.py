"""Draw a page's figure from its own spec, as the build does (without the SVG)."""

from __future__ import annotations

import importlib

from matplotlib.figure import Figure

from mha.support.page import Page


def draw(page: Page, name: str) -> Figure | list[Figure]:
    """``mha.figures.<module>.<function>(*data)`` of ``page.figures[name]``."""
    spec = page.figures[name]
    module, _, function = spec.draw.rpartition(".")
    figures = importlib.import_module(f"mha.figures.{module}")
    return getattr(figures, function)(*spec.data)
