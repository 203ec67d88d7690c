"""`make serve` on a cold cache: each page as soon as its studies are ready.

A fresh clone's first build computes every study, a few minutes on two cores. While
serving, the build does not wait for them: it renders a page at once when its
studies are stored (or cheap: ``CHEAP_SECONDS`` by the sealed timings), and in its
place, for a page whose study is still to come, a notice naming that study and
about how long it takes (``notice``). Two processes compute the studies meanwhile
(``mha_site.prefetch``, one from the cheapest page by the sealed timings, one from
the costliest; started again for the edited code after an edit of the code); after
each page's work one of them touches a file in ``prefetch.ready_folder()``, which the server
watches, so the build runs again, renders the pages that waited, and the browser
reloads them (mkdocs' live reload). `make build` never waits: it computes every
study and refuses a page that still carries a notice (``docs/_glue/waiting.py``).

```python
from mha_site.waiting import missing

assert missing("mha.pages.notation") is None  # computes nothing: ready at once
```
"""

from __future__ import annotations

import html

from mha.support import cache, progress
from mha_site import prefetch

# A study expected to take less is computed while rendering: more would delay the
# first page (the studies under a second add up to about 14 s, those under a quarter
# of a second to about 1.4 s, in the sealed cold build).
CHEAP_SECONDS = 0.25
MARK = "mha-waiting"  # the class of the notice: no page of a strict build carries it


def cheap(name: str) -> bool:
    """Whether ``name`` is computed while rendering: timed before, under
    ``CHEAP_SECONDS``.

    ```python
    from mha_site.waiting import cheap

    assert not cheap("a study no build ever timed")
    ```
    """
    expected = progress.estimate(name)
    return expected is not None and expected < CHEAP_SECONDS


def missing(argument: str) -> cache.Missing | None:
    """The study that ``argument``'s page (what ``prefetch.work`` returns) waits for,
    or None when it is ready: its page object, figures and card are stored or cheap,
    or its computation failed, here or in the second process (the build then shows
    why, in the page)."""
    if prefetch.failed(argument).exists():
        return None
    with cache.only_cheap(cheap):
        try:
            prefetch.compute(argument)
        except cache.Missing as waiting:
            return waiting
        except Exception:  # the page's own error, which its rendering shows
            return None
    return None


def outline(markdown: str) -> str:
    """The headings of a page's Markdown (outside code fences, without macros): what
    a page that waits shows under its notice, so that links to its sections hold.

    ```python
    from mha_site.waiting import outline

    text = "# Depth\n\nProse.\n\n```python\n# a comment\n```\n\n## Two layers\n"
    assert outline(text) == "# Depth\n\n## Two layers\n"
    ```
    """
    headings, fence = [], None
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            fence = None if fence == marker else fence or marker
            continue
        if fence is None and line.startswith("#") and "{{" not in line:
            headings.append(line.rstrip())
    return "\n\n".join(headings) + "\n" if headings else ""


def notice(waiting: cache.Missing) -> str:
    """The notice shown in place of a page whose study ``waiting`` names.

    ```python
    from pathlib import Path
    from mha.support.cache import Missing
    from mha_site.waiting import MARK, notice

    text = notice(Missing("mha.pages.depth.scan", Path("0a.pickle")))
    assert MARK in text and "mha.pages.depth.scan" in text
    ```
    """
    expected, left = progress.estimate(waiting.name), progress.left()
    how_long = "" if expected is None else f", about {progress.seconds(expected)}"
    if left is not None:
        how_long += f" (about {progress.seconds(left)} of studies left in all)"
    return (
        f'<div class="admonition info {MARK}"><p class="admonition-title">'
        "This page is being computed</p>"
        f"<p>It waits for the study <code>{html.escape(waiting.name)}</code>"
        f"{how_long}. It reloads itself when the study is ready.</p></div>"
    )
