"""A page's figure drawn from the page's own figure spec, as the build does (without
the SVG), and read back (``plotted``)."""

from __future__ import annotations

import importlib

import numpy as np
from matplotlib.figure import Figure

from mha.figures import drawing
from mha.figures.plotted import Panel, plotted
from mha.support.page import Page


def draw(page: Page, name: str) -> Figure | list[Figure]:
    """``mha.figures.<module>.<function>(*data)`` of ``page.figures[name]``."""
    spec = page.figures[name]
    return drawing(spec.draw)(*spec.data)


def drawn(page: str, figure: str) -> tuple[Page, list[Panel]]:
    """``mha.pages.<page>.page()`` and what its figure ``figure`` draws, per axes."""
    p = importlib.import_module(f"mha.pages.{page}").page()
    return p, plotted(draw(p, figure))


def assert_series(got: dict[str, np.ndarray], want: dict[str, object]) -> None:
    """Every labelled series of ``got`` is the page value ``want`` gives its label,
    and there are no others (labels starting with ``_`` are matplotlib's own)."""
    labelled = {k: v for k, v in got.items() if not k.startswith("_")}
    assert labelled.keys() == want.keys()
    for label, value in want.items():
        assert np.allclose(labelled[label], np.asarray(value, float)), label
