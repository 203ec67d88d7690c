"""What a link to a page shows when it is shared: its description and its image.

The description is the page's first paragraph as plain text, cut at a word; the
image is the page's first figure drawn again as a PNG (a site-wide one, the home
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

from mha.support.cache import cached_as, described

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


def card_png(draw, *data: object) -> bytes:
    """``draw(*data)`` (a figure function of ``mha.figures``) as PNG bytes on white,
    the same bytes on every build; cached by content hash like the SVG figures. Of
    small multiples (a list of panels), the first panel.

    ```python
    from mha.figures.cricket import three_distributions
    from mha.pages.cricket import page
    from mha_site.social import card_png

    png = card_png(three_distributions, *page().figures["three_distributions"].data)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    ```
    """
    if not callable(draw):
        raise TypeError(f"draw: expected a figure function, got {draw!r}")
    figure = f"{draw.__module__.removeprefix('mha.figures.')}.{draw.__qualname__}"
    return cached_as(f"card {figure}{described(data)}", _png, draw, *data)


def _png(draw, *data: object) -> bytes:
    drawn = draw(*data)
    if isinstance(drawn, list | tuple):  # small multiples: the card shows the first
        drawn = drawn[0]
    buffer = io.BytesIO()
    drawn.savefig(
        buffer, format="png", dpi=150, facecolor="white", metadata={"Software": None}
    )
    return buffer.getvalue()
