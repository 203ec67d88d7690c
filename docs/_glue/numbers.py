"""Each printed number as its reader hovers or taps it: the macros marked it with the
attribute of the page object it was read from (docs/_glue/macros.py,
``mha_site.traced``); once the page is HTML, a number in text becomes
``<m-n p=…>``, its key indexing the page's evidence file, and every other mark is
dropped (math, code, attributes, the table of contents, the title), so no mark
reaches the reader or the search index.

The evidence file (``mha_site.evidence.EVIDENCE``), written beside the page, holds
what evidence.js shows on demand: each marker's popover (``f``, by fact), each
number's path (``n``, by key) and the list of where the page's numbers come from
(``s``). Generated at build, in a fixed order: two builds write the same bytes."""

import importlib
import json
from pathlib import Path


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
    """Whatever the theme printed from a marked title: unmarked. The page's
    evidence file written beside it, if it has markers, numbers or sources."""
    evidence = getattr(page, "mha_evidence", None)
    sources = getattr(page, "mha_sources", None)
    if evidence and sources and (evidence["f"] or evidence["s"] or sources.placed):
        name = importlib.import_module("mha_site.evidence").EVIDENCE
        path = Path(config["site_dir"]) / Path(page.file.dest_uri).parent / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(
            {**evidence, "n": sources.placed}, ensure_ascii=False, separators=(",", ":")
        )
        path.write_text(text, encoding="utf-8")
    return _strip(output)
