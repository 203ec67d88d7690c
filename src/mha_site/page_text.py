"""Every page's published text, to check that a change to the studies changes none.

A saving in a study (a faster form of a formula, float32 where float64 was) must keep
every published value at its printed precision. ``python -m mha_site.page_text A B``
compares two built sites (before and after the change) page by page: the text a
reader sees (prose, tables, captions, code outputs and the figures' labels), tags
and whitespace aside, and prints each line that differs; it exits 1 if any does.

```python
import tempfile
from pathlib import Path
from mha_site.page_text import differences, page_text

html = '<article class="md-content__inner"><p>0.768 <b>and</b> 1,024</p></article>'
assert page_text(html) == ["0.768 and 1,024"]
a, b = (Path(tempfile.mkdtemp()) for _ in range(2))
for site, value in ((a, "0.768"), (b, "0.769")):
    (site / "cost").mkdir()
    (site / "cost" / "index.html").write_text(html.replace("0.768", value))
assert differences(a, b) == ["cost/index.html: - 0.768 and 1,024", "cost/index.html: + 0.769 and 1,024"]
```
"""

from __future__ import annotations

import difflib
import sys
from html.parser import HTMLParser
from pathlib import Path

BLOCKS = {"p", "li", "tr", "td", "th", "h1", "h2", "h3", "h4", "pre", "figcaption"}
BLOCKS |= {"div", "text", "title", "br", "dt", "dd", "summary"}


class _Text(HTMLParser):
    """The text inside a page's article, one line per block element."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # inside <article>
        self.skip = 0  # inside <script> or <style>
        self.lines: list[str] = [""]

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag == "article":
            self.depth += 1
        elif tag in ("script", "style"):
            self.skip += 1
        elif tag in BLOCKS:
            self.lines.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "article":
            self.depth -= 1
        elif tag in ("script", "style"):
            self.skip -= 1
        elif tag in BLOCKS:
            self.lines.append("")

    def handle_data(self, data: str) -> None:
        if self.depth and not self.skip:
            self.lines[-1] += data


def page_text(html: str) -> list[str]:
    """The lines of text of a page's article (its content, without the theme)."""
    parser = _Text()
    parser.feed(html)
    lines = (" ".join(line.split()) for line in parser.lines)
    return [line for line in lines if line]


def differences(before: Path, after: Path) -> list[str]:
    """Each line of page text that differs between two built sites, named by page."""
    found = []
    pages = sorted(
        {p.relative_to(s) for s in (before, after) for p in s.rglob("*.html")}
    )
    for page in pages:
        old, new = (
            page_text(p.read_text(encoding="utf-8")) if p.is_file() else []
            for p in (before / page, after / page)
        )
        for line in difflib.unified_diff(old, new, lineterm="", n=0):
            if line.startswith(("---", "+++", "@@")):
                continue
            found.append(f"{page.as_posix()}: {line[0]} {line[1:]}")
    return found


def main(arguments: list[str]) -> int:
    if len(arguments) != 2:
        print(
            "usage: python -m mha_site.page_text SITE_BEFORE SITE_AFTER",
            file=sys.stderr,
        )
        return 2
    found = differences(Path(arguments[0]), Path(arguments[1]))
    print("\n".join(found) or "every page's text is the same")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
