"""The evidence index: every fact of every page, where its sentence is, what it
checks and the values it saw in this build (``docs/evidence.md``).

Each page's facts come from its own page object (``mha.pages.<page>.page()``, built
once per process); the line is where the page's Markdown states it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from mha.support.page import Page

_DOCS = Path(__file__).resolve().parents[3] / "docs"
_USE = r"""\b(?:fact|holds)\(\s*["']{}["']\s*\)"""


@dataclass(frozen=True)
class _Row:
    """One fact: its name, the Markdown line that states it, what it checks (and,
    for a qualitative one, why its sentence prints no value) and its values."""

    name: str
    line: int
    says: str
    qualitative: str
    values: str


@dataclass(frozen=True)
class _Group:
    """One page's facts, in the order its Markdown states them."""

    file: str
    title: str
    rows: tuple[_Row, ...]


def _title(markdown: str, file: str) -> str:
    found = re.search(r"^# (.+)$", markdown, re.M)
    return found[1].strip() if found else file


def _line(markdown: str, name: str) -> int:
    found = re.search(_USE.format(re.escape(name)), markdown)
    return markdown.count("\n", 0, found.start()) + 1 if found else 0


def _group(file: str) -> _Group | None:
    """The facts of ``docs/<file>``, or None for a page whose module states none."""
    module = "mha.pages." + file.removesuffix(".md").replace("-", "_")
    if module == __name__ or importlib.util.find_spec(module) is None:
        return None
    facts = importlib.import_module(module).page().facts
    if not facts:
        return None
    markdown = (_DOCS / file).read_text(encoding="utf-8")
    rows = sorted(
        (
            _Row(name, _line(markdown, name), f.says, f.qualitative, f.values)
            for name, f in facts.items()
        ),
        key=lambda row: (row.line, row.name),
    )
    return _Group(file, _title(markdown, file), tuple(rows))


@functools.cache
def page() -> Page:
    """Every page's facts (``groups``, by file name) and how many (``n_facts``)."""
    groups = tuple(
        g for f in sorted(p.name for p in _DOCS.glob("*.md")) if (g := _group(f))
    )
    return Page(
        groups=groups,
        n_facts=sum(len(g.rows) for g in groups),
        n_pages=len(groups),
        n_qualitative=sum(bool(r.qualitative) for g in groups for r in g.rows),
        facts={},
        figures={},
    )
