"""The home page: the whole layer in one figure, the intuition, the reading order.

The figure is the multi-head page's (``mha.pages.multi_head``: one
``MultiHeadAttention`` at the base Transformer's shape on the cat sentence); the
parameter counts the intuition paragraph quotes are the home page's own. The reading
order is the nav of ``mkdocs.yml``, each page with the one-line ``description`` of its
front matter: a new page is listed by its nav line alone.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from mha.accounting import param_count
from mha.pages import multi_head
from mha.support.page import Fact, Page

_ROOT = Path(__file__).resolve().parents[3]  # the repository: mkdocs.yml, docs/


@dataclass(frozen=True)
class _Entry:
    title: str
    path: str  # relative to docs/, as the nav gives it
    description: str | None


@dataclass(frozen=True)
class _Section:
    title: str | None  # None: the pages at the nav's top level
    entries: tuple[_Entry, ...]


@functools.cache
def page() -> Page:
    """The whole-layer figure and the parameters with one head and with ``h``."""
    mechanism = multi_head.page()
    sizes = mechanism.whole.sizes
    d_model, h = sizes["d_model"], sizes["h"]
    one, many = param_count(d_model, 1), param_count(d_model, h)
    return Page(
        d_model=d_model,
        h=h,
        params_one=one,
        params_many=many,
        facts=_facts(one, many, h),
        contents=_contents(_nav(_ROOT / "mkdocs.yml"), _ROOT / "docs"),
        figures={"whole_layer": mechanism.figures["whole_layer"]},
    )


def _facts(params_one: int, params_many: int, h: int) -> dict[str, Fact]:
    """The home page's one comparing sentence: ``h`` heads cost what one head costs."""
    return {
        "same_params": Fact(
            params_one == params_many,
            f"{params_one} with one head, {params_many} with {h}",
            says="one head and h heads at the base Transformer's shape hold the same number of parameters",
        )
    }


class _AnyTag(yaml.SafeLoader):
    """mkdocs.yml's own tags (``!ENV``, ``!!python/name:``) read as nothing."""


_AnyTag.add_multi_constructor("", lambda loader, suffix, node: None)
_AnyTag.add_multi_constructor("!", lambda loader, suffix, node: None)


def _nav(config: Path) -> list:
    return yaml.load(config.read_text(), Loader=_AnyTag)["nav"]


def _front_matter(page: Path) -> dict:
    text = page.read_text()
    if not text.startswith("---\n"):
        return {}
    return yaml.safe_load(text[4 : text.index("\n---", 4)]) or {}


def _entry(title: str | None, path: str, docs: Path) -> _Entry:
    source = docs / path
    meta = _front_matter(source) if path.endswith(".md") else {}
    if title is None:  # a bare nav line: the page's own first heading
        heading = next(
            line for line in source.read_text().splitlines() if line.startswith("# ")
        )
        title = heading[2:].strip()
    return _Entry(title, path, meta.get("description"))


def _pages(items: list, docs: Path) -> list[_Entry]:
    """The pages of a section's items, those of nested sections in their place."""
    found = []
    for item in items:
        title, value = (
            next(iter(item.items())) if isinstance(item, dict) else (None, item)
        )
        if isinstance(value, list):
            found += _pages(value, docs)
        elif value != "index.md":
            found.append(_entry(title, value, docs))
    return found


def _contents(nav: list, docs: Path) -> tuple[_Section, ...]:
    """The nav's pages but the home page, grouped as the nav groups them: the pages
    at its top level, then one group per section, in the nav's order."""
    sections: list[_Section] = []
    for item in nav:
        title, value = (
            next(iter(item.items())) if isinstance(item, dict) else (None, item)
        )
        if isinstance(value, list):  # a section
            sections.append(_Section(title, tuple(_pages(value, docs))))
        elif value != "index.md":
            before: tuple[_Entry, ...] = ()
            if sections and sections[-1].title is None:  # a run of top-level pages
                before = sections.pop().entries
            sections.append(_Section(None, (*before, _entry(title, value, docs))))
    return tuple(sections)
