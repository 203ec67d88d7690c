"""Every figure on the site: one function per figure, returning a matplotlib Figure.

``to_svg`` turns a figure into deterministic inline SVG whose ink follows the page's
text colour (``currentColor``), so one drawing reads in light and dark mode.
"""

from mha.figures.style import to_svg

__all__ = ["to_svg"]
