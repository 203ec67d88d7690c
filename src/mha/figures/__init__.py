"""Every figure on the site: one function per figure, returning a matplotlib Figure.

``to_svg`` turns a figure into deterministic inline SVG whose ink follows the page's
text colour (``currentColor``), so one drawing reads in light and dark mode;
``render`` does it by name, the way pages ask for a figure, and keeps the result in
the content-hash cache (``mha.support.cache``), so a warm build draws nothing.
"""

import importlib
from collections.abc import Callable

from matplotlib.figure import Figure

from mha.figures.style import to_svg
from mha.support.cache import cached_as, described

__all__ = ["drawing", "render", "to_svg"]


def render(name: str, alt: str, *args: object, **kwargs: object) -> str:
    """Inline SVG of ``mha.figures.<name>(*args, **kwargs)``, named by ``alt``."""
    named = f"figure {name}{described(args, kwargs)}"  # two figures of one drawing
    return cached_as(named, _svg, drawing(name), alt, *args, **kwargs)


def drawing(name: str) -> Callable[..., Figure | list[Figure]]:
    """The figure function ``mha.figures.<name>``, named as a page's figure spec
    names it: ``"<module>.<function>"``.
    """
    module, _, function = name.rpartition(".")
    if not module:
        raise ValueError(f"name: expected 'module.function', got {name!r}")
    return getattr(importlib.import_module(f"mha.figures.{module}"), function)


def _svg(draw, alt: str, *args: object, **kwargs: object) -> str:
    return to_svg(draw(*args, **kwargs), alt)
