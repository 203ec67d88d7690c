"""Each printed number as its reader hovers or taps it: the macros marked it with the
attribute of the page object it was read from (docs/_glue/macros.py,
``mha_site.traced``); once the page is HTML, a number in text becomes
``<m-n p="…">`` and every other mark is dropped (math, code, attributes, the
table of contents, the title), so no mark reaches the reader or the search index."""

import importlib


def _strip(text: str) -> str:
    return importlib.import_module("mha_site.traced").strip(text)


def _clean(items) -> None:
    """The titles of the table of contents, unmarked (the search index reads them)."""
    for item in items:
        item.title = _strip(item.title)
        _clean(item.children)


def on_page_content(html, page, **kwargs):
    sources = getattr(page, "mha_sources", None)
    if sources is None:
        return html
    _clean(page.toc)
    if page.title:
        page.title = _strip(page.title)
    return sources.place(html)


def on_post_page(output, page, config, **kwargs):
    """Whatever the theme printed from a marked title: unmarked."""
    return _strip(output)
