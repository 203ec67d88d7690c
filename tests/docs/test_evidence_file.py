"""Each built page's evidence file (``mha_site.evidence.EVIDENCE``, written beside
the page by docs/_glue/numbers.py) holds exactly what the page's markers and
numbers key: a popover for each marker's fact and none other, an entry for each
number's key and none unused, and, for every value an entry reads, its item in the
list of sources. A key without an entry would open a popover with nothing to show;
an entry no key uses would weigh without being read.
"""

from __future__ import annotations

import html.parser
import json
from pathlib import Path

import pytest

from mha_site.evidence import EVIDENCE
from mha_site.traced import fields
from tests.browser.site_pages import nav_pages

PAGES = [p.rstrip("/") or "." for p in nav_pages() if not p.startswith("reference")]


class Keys(html.parser.HTMLParser):
    """A built page's markers (their facts) and numbers (their keys, each number
    without one read as the next entry of the file, as evidence.js reads it)."""

    def __init__(self) -> None:
        super().__init__()
        self.marks: list[str] = []
        self.numbers: list[int] = []
        self._next = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "button" and "mha-mark" in (a.get("class") or "").split():
            self.marks.append(a["data-f"])
        elif tag == "m-n" and "p" in a:
            self.numbers.append(int(a["p"]))
        elif tag == "m-n":
            self.numbers.append(self._next)
            self._next += 1


def read(site: Path, page: str) -> tuple[Keys, dict]:
    """The keys of ``page`` (a path under the site) and its evidence file ({} if none)."""
    keys = Keys()
    keys.feed((site / page / "index.html").read_text(encoding="utf-8"))
    file = site / page / EVIDENCE
    return keys, json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {}


def unmatched(keys: Keys, data: dict) -> list[str]:
    """What the keys and the file do not agree on, in words (empty if they do)."""
    wrong = []
    facts, entries = data.get("f", {}), data.get("n", [])
    wrong += [f"marker {m!r} has no popover" for m in keys.marks if m not in facts]
    wrong += [f"popover {f!r} has no marker" for f in facts if f not in keys.marks]
    wrong += [f"key {k} has no entry" for k in keys.numbers if k >= len(entries)]
    unused = sorted(set(range(len(entries))) - set(keys.numbers))
    wrong += [f"entry {k} ({entries[k]}) has no number" for k in unused]
    listed = set()
    for item in html_items(data.get("s", "")):
        listed.update(item.split())
    wrong += [f"{f} is not in the list" for f in fields(entries) if f not in listed]
    return wrong


def html_items(listed: str) -> list[str]:
    """The values of the page object each item of a list of sources names."""
    found: list[str] = []

    class Items(html.parser.HTMLParser):
        def handle_starttag(self, tag: str, attrs: list) -> None:
            if tag == "li":
                found.append(dict(attrs)["data-f"])

    Items().feed(listed)
    return found


@pytest.mark.parametrize("page", PAGES)
def test_the_evidence_file_holds_exactly_what_the_page_keys(
    built_site: Path, page: str
) -> None:
    keys, data = read(built_site, page)
    assert unmatched(keys, data) == []
    if keys.marks or keys.numbers:
        assert data, f"{page} has markers or numbers and no {EVIDENCE}"


def test_a_key_without_an_entry_or_an_entry_without_a_key_is_found(
    built_site: Path,
) -> None:
    keys, data = read(built_site, "circuits")
    assert len(keys.numbers) > 100 and keys.marks and unmatched(keys, data) == []
    # a repeated number keys an earlier entry; the rest read the entries in order
    assert any(k < i for i, k in enumerate(keys.numbers))
    assert unmatched(keys, {**data, "n": data["n"][:-1]}) == [
        f"key {len(data['n']) - 1} has no entry"
    ]
    extra = {**data, "n": [*data["n"], "x.y"]}
    assert unmatched(keys, extra)[0] == f"entry {len(data['n'])} (x.y) has no number"
    first = keys.marks[0]
    fewer = {**data, "f": {f: h for f, h in data["f"].items() if f != first}}
    assert unmatched(keys, fewer) == [f"marker {first!r} has no popover"]
    more = {**data, "f": {**data["f"], "gone": "<span>x</span>"}}
    assert unmatched(keys, more) == ["popover 'gone' has no marker"]
