"""What the site's search index holds (Material's, built with the site)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from tests.docs.glue import glue

SVG = re.compile(r"<svg\b.*?</svg>", re.S)
TEXT = re.compile(r"<text\b[^>]*>([^<]*)</text>")


def search_entries(site: Path) -> list[dict]:
    """The index's entries: one per section of each page."""
    return json.loads((site / "search" / "search_index.json").read_text())["docs"]


def test_search_ranks_the_reference_below_the_explanations(built_site: Path):
    """Every section of a reference page, and only those, carries the lower search
    boost (docs/_glue/search.py), so that "KV cache" finds its page first."""
    boosts = {
        (entry["location"].startswith("reference/"), entry.get("boost"))
        for entry in search_entries(built_site)
    }
    assert boosts == {(True, glue("search").BOOST), (False, None)}


def test_no_figure_text_is_searched(built_site: Path):
    """A figure's ticks and labels, run together, would fill a search snippet with
    digits ("481632641282565121024d_k..."): each figure's first six texts, joined as
    the index would join them, appear in no entry (mha.figures.style.NOT_SEARCHED)."""
    indexed = " ".join(entry["text"] for entry in search_entries(built_site))
    found, figures = [], 0
    for page in built_site.glob("**/index.html"):
        for svg in SVG.findall(page.read_text()):
            texts = [t for t in map(html.unescape, TEXT.findall(svg)) if t.strip()]
            run = "".join(texts[:6])
            if len(texts) < 6 or len(run) < 12:  # too short to be told from prose
                continue
            figures += 1
            if run in indexed:
                found.append(f"{page.parent.relative_to(built_site)}: {run}")
    assert figures > 40, "too few figures read to test anything"
    assert not found, "\n".join(found)
