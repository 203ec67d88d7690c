"""Markdown links to an anchor, each at its file and line, for the build to check.

MkDocs checks a link's anchor (``validation: links: anchors``) only after every page
is written, and names the page but not the line. Any error raised earlier (a number
typed by hand, a raw HTML link to nowhere: the drift hook fails the build before a
page is written) stops the build first, so a broken anchor planted beside another
fault was never named, in index.md or any page. The drift hook checks them itself,
with the other findings: ``links`` finds the Markdown links of a page's source that
carry an anchor, ``target`` resolves one as MkDocs does, ``missing`` says what is
wrong with it once every page is rendered.

```python
from mha_site.anchors import links, missing, target

page = "See [the cost](cost.md#flat) and [above](#top).\\n`[no](#code)`\\n"
assert links(page) == [(1, "cost.md#flat"), (1, "#top")]
assert target("reference/core.md", "../index.md#x") == ("index.md", "x")
assert missing("cost.md", "flat", {"flat", "why"}) is None
assert missing("cost.md", "flst", {"flat", "why"}) == "cost.md has no anchor #flst (#flat?)"
```
"""

from __future__ import annotations

import difflib
import posixpath
import re
import urllib.parse

from mha_site.drift import BLOCKS, INLINE_CODE, split_fences

# [text](target "title") and ![alt](target), the text may hold [brackets] and span lines
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^\s()<>]+)>?[^)]*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?([^\s<>]+)>?", re.M)
EXTERNAL = re.compile(r"[a-z][a-z0-9+.-]*:|/", re.I)  # a scheme, or absolute


def links(markdown: str) -> list[tuple[int, str]]:
    """``(line, target)`` of each Markdown link or image of ``markdown`` whose target
    has an anchor (``#…``) and is relative, outside code and templates (a target a
    macro prints is MkDocs' to check), in the order of the page.

    ```python
    from mha_site.anchors import links

    page = "[a\\nb](cost.md#x) [c](https://a.b/#y) [d]({{ u }}#z)\\n\\n[e]: ./#w\\n"
    assert links(page) == [(2, "cost.md#x"), (4, "./#w")]
    ```
    """
    text = "\n".join(split_fences(markdown)[0])
    for pattern, fill in ((BLOCKS, "\0"), (INLINE_CODE, " ")):  # newlines kept
        text = pattern.sub(lambda m, fill=fill: re.sub(r"[^\n]", fill, m[0]), text)
    found = [
        (match.start(1), match[1])
        for pattern in (INLINE, REFERENCE)
        for match in pattern.finditer(text)
        if "#" in match[1] and "\0" not in match[1] and not EXTERNAL.match(match[1])
    ]
    return [(text.count("\n", 0, at) + 1, link) for at, link in sorted(found)]


def target(src_uri: str, link: str) -> tuple[str | None, str]:
    """The docs file a Markdown ``link`` of page ``src_uri`` names, as MkDocs resolves
    it (from the page's source file, not its URL), and the anchor; None for a target
    that is not a page's source (``./``, ``../``: MkDocs refuses those itself).

    ```python
    from mha_site.anchors import target

    assert target("index.md", "#a") == ("index.md", "a")
    assert target("cricket.md", "index.md#a") == ("index.md", "a")
    assert target("index.md", "./#a") == (None, "a")
    assert target("cricket.md", "../outside.md#a") == (None, "a")
    ```
    """
    path, _, anchor = link.partition("#")
    path = urllib.parse.unquote(path)
    if not path:
        return src_uri, anchor
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(src_uri), path))
    if not path.endswith(".md") or joined.startswith(".."):
        return None, anchor
    return joined, anchor


def missing(src_uri: str, anchor: str, present: set[str]) -> str | None:
    """What is wrong with ``anchor`` on page ``src_uri`` whose anchors are
    ``present``: None if it is there, else a message naming the nearest anchor.

    ```python
    from mha_site.anchors import missing

    assert missing("index.md", "the-code", {"the-code"}) is None
    assert missing("index.md", "planted", {"the-code"}) == "index.md has no anchor #planted"
    ```
    """
    if anchor in present:
        return None
    near = difflib.get_close_matches(anchor, sorted(present), n=1)
    return f"{src_uri} has no anchor #{anchor}" + (f" (#{near[0]}?)" if near else "")
