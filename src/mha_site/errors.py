"""Where a contributor's build error is: the file and line, said in one line first.

The build reports each error a contributor can cause as ``<file>:<line>: <what>``
before any traceback: a page object that cannot be built (a figure without caption:
the line of the page module that builds it), a false fact or an unknown figure (the
line of the Markdown that states it), an unknown value (the first line of the
Markdown that reads it), a Python block that raises (the line of its fence).

```python
from mha_site.errors import block_line, line_of

text = 'Intro\\n{{ page.n | dec }}\\n\\n```python exec="on"\\nx = 1\\nraise ValueError\\n```\\n'
assert line_of(text, r"\\bn\\b") == 2
assert block_line(text, "x = 1\\nraise ValueError") == 4  # the fence's line
```
"""

from __future__ import annotations

import html
import re
import traceback
from pathlib import Path

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
# A message that already names its file and line: ``docs/cost.md:4: ...``.
LOCATED = re.compile(r"^[\w./-]+\.\w+:\d+: ")
# Each kind of error a contributor can cause, and the title of the banner that shows
# it at the top of its page under `make serve` (`make build` refuses the page).
BANNERS = {
    "template": "Template error: the page's {{ }} or {% %} does not parse",
    "page": "The page module failed: its page object could not be built",
    "fact": "A fact no longer holds (or is not the page module's)",
    "unstated": "A fact is declared but never stated: the page module and its Markdown disagree",
    "value": "The page reads a value its page object does not have",
    "figure": "A figure is missing or could not be drawn",
    "block": "A Python block of the page raised",
    "drift": "Drift guard: numbers typed by hand",
}


def line_of(markdown: str, pattern: str) -> int:
    """The first line (from 1) of ``markdown`` inside ``{{ }}`` or ``{% %}`` that
    matches the regular expression ``pattern``; else the first line that matches at
    all; else 0."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"pattern: expected a regular expression, got {pattern!r}")
    found = re.compile(pattern)
    lines = markdown.splitlines()
    for number, line in enumerate(lines, 1):
        for template in re.findall(r"\{\{.*?\}\}|\{%.*?%\}", line):
            if found.search(template):
                return number
    return next((n for n, line in enumerate(lines, 1) if found.search(line)), 0)


def block_line(markdown: str, code: str) -> int:
    """The line (from 1) of the opening fence of the block of ``markdown`` whose code
    is ``code`` (compared line by line, indentation ignored); 0 if there is none."""
    wanted = [line.strip() for line in code.strip("\n").splitlines()]
    if not wanted:
        raise ValueError("code: expected the block's code, got nothing")
    lines = markdown.splitlines()
    for number, line in enumerate(lines):
        if not _FENCE.match(line):
            continue
        body = [row.strip() for row in lines[number + 1 : number + 1 + len(wanted)]]
        if body == wanted:
            return number + 1
    return 0


def where_raised(error: BaseException, root: Path) -> str | None:
    """``<path>:<line>`` (relative to ``root``) of the innermost frame of ``error``'s
    traceback in a page module (``src/mha/pages``), else anywhere under ``src/``;
    None when no frame is there.

    ```python
    from pathlib import Path

    from mha_site.errors import where_raised

    try:
        int("x")
    except ValueError as error:
        assert where_raised(error, Path("/nowhere")) is None
    ```
    """
    frames = traceback.extract_tb(error.__traceback__)
    for folder in (root / "src" / "mha" / "pages", root / "src"):
        inside = [f for f in frames if Path(f.filename).is_relative_to(folder)]
        if inside:
            frame = inside[-1]
            return f"{Path(frame.filename).relative_to(root)}:{frame.lineno}"
    return None


def first_line(message: str) -> str:
    """A message on one line: its lines joined, blank ones dropped.

    ```python
    from mha_site.errors import first_line

    assert first_line("a\\n\\n  b") == "a b"
    ```
    """
    return " ".join(line.strip() for line in str(message).splitlines() if line.strip())


def banners(errors: list[tuple[str, str]]) -> str:
    """One banner (HTML) per kind of the ``(kind, message)`` pairs ``errors``, each
    listing its messages, in the order the kinds first appear: what `make serve`
    shows at the top of a page that `make build` would refuse.

    ```python
    from mha_site.errors import banners

    shown = banners([("fact", "docs/t.md:4: 'flatter' no longer holds (1 vs 2)")])
    assert "A fact no longer holds" in shown and "docs/t.md:4: &#x27;flatter" in shown
    ```
    """
    kinds: dict[str, list[str]] = {}
    for kind, message in errors:
        if kind not in BANNERS:
            raise ValueError(
                f"errors: unknown kind {kind!r}; expected one of {sorted(BANNERS)}"
            )
        kinds.setdefault(kind, []).append(message)
    return "\n".join(
        '<div class="admonition failure mha-build-error"><p class="admonition-title">'
        f"{html.escape(BANNERS[kind])}. `make build` will refuse this page</p><ul>"
        + "".join(f"<li><code>{html.escape(m)}</code></li>" for m in messages)
        + "</ul></div>"
        for kind, messages in kinds.items()
    )
