"""What a link to a page shows when it is shared: its description and its image.

The description is the page's first paragraph as plain text, cut at a word; the
image is the page's first figure as a PNG, drawn with its SVG (a site-wide one, the home
page's, for a page without figures). ``docs/_glue/social.py`` puts both in each page's
Open Graph and Twitter card metadata (``docs/_theme/main.html``).

```python
from mha_site.social import description

html = '<h1>T</h1><figure><p>no</p></figure><p>One <em>head</em> &amp; two.</p>'
assert description(html) == "One head & two."
```
"""

from __future__ import annotations

import html as html_module
import io
import re

from mha.figures import drawing, to_svg
from mha.support.cache import cached_as, described
from mha.support.page import Figure

_FIGURE = re.compile(r"<figure\b.*?</figure>", re.S)
_PARAGRAPH = re.compile(r"<p\b[^>]*>(.*?)</p>", re.S)


def description(html: str, limit: int = 200) -> str:
    """The first paragraph of ``html`` with text (outside figures), as plain text of
    at most ``limit`` characters, cut at a word with an ellipsis; "" if none."""
    if not isinstance(limit, int) or limit < 20:
        raise ValueError(f"limit: expected an int of at least 20, got {limit!r}")
    for paragraph in _PARAGRAPH.findall(_FIGURE.sub("", html)):
        text = " ".join(html_module.unescape(re.sub(r"<[^>]+>", "", paragraph)).split())
        if text:
            if len(text) <= limit:
                return text
            return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return ""


def figure_and_card(spec: Figure) -> tuple[str, bytes]:
    """A page's first figure (``spec``, a page module's figure spec) as its inline
    SVG and as its card, PNG bytes on white, the same bytes on every build: drawn
    once for both, and cached by content hash like the other figures. Of small
    multiples (a list of panels), the card shows the first panel.

    ```python
    from mha.pages.cricket import page
    from mha_site.social import figure_and_card

    svg, png = figure_and_card(page().figures["three_distributions"])
    assert svg.startswith("<svg") and png.startswith(b"\x89PNG\r\n\x1a\n")
    ```
    """
    name = f"figure and card {spec.draw}{described(spec.data)}"
    return cached_as(name, _both, drawing(spec.draw), spec.alt, *spec.data)


def _both(draw, alt: str, *data: object) -> tuple[str, bytes]:
    drawn = draw(*data)
    return to_svg(drawn, alt), _png(drawn)


def _png(drawn) -> bytes:
    if isinstance(drawn, list | tuple):  # small multiples: the card shows the first
        drawn = drawn[0]
    buffer = io.BytesIO()
    drawn.savefig(
        buffer, format="png", dpi=150, facecolor="white", metadata={"Software": None}
    )
    return buffer.getvalue()
