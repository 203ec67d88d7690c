"""Search ranks the explanations above the API reference.

A reader who searches "rotary" or "KV cache" wants the page that explains it; the
reference pages, which name every function, matched those words more often and came
first. Each reference page's sections count for a quarter (Material's ``search.boost``,
as a page's front matter would set it).
"""

from __future__ import annotations

REFERENCE = "reference/"
BOOST = 0.25


def on_page_markdown(markdown, page, config, **kwargs):
    """A reference page's ``search.boost``, unless its front matter sets one."""
    if page.file.src_uri.startswith(REFERENCE):
        page.meta.setdefault("search", {}).setdefault("boost", BOOST)
    return markdown
