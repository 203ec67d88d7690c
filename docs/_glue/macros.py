"""mkdocs-macros glue: hand each page its page object and the number formatters.

A page ``docs/<page>.md`` reads one object, ``page``: what ``mha.pages.<page>.page()``
returns (``-`` in the file name is ``_`` in the module's). The template formats it and
does nothing else:

    {{ page.example.head_a.weights[0] | dec }}                  -> 0.768
    {% call fact("tie") %}exactly as much to itself{% endcall %} -> the words, checked
    {{ figure("three_distributions") }}                         -> Figure 1, captioned

``fact(name)`` prints its sentence if the page's fact holds and otherwise fails the
build at that Markdown line, quoting the sentence (``mha_site.facts``); ``holds(name)``
is the same fact for a sentence that changes with it (an ``if``). ``figure(name)``
inlines the page's figure ``name`` (``mha.support.page.Figure``), with its alt text as
its accessible name, in a ``<figure>`` numbered on its page ("Figure 1.") with its
caption below. Figures are cached by content hash (code and data), so a warm build
does not draw them again.
"""

import html
import importlib
import sys
from pathlib import Path

from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(
        0, str(ROOT / "src")
    )  # mha_site: the build's tooling, not installed


def _fresh_core() -> None:
    """Forget imported ``mha`` modules, so `mkdocs serve` picks up edits in src/."""
    for name in [m for m in sys.modules if m.split(".")[0] in ("mha", "mha_site")]:
        del sys.modules[name]


# The page being rendered: its facts as stated so far, its figures' count.
_PAGE: dict = {"facts": None, "figures": 0, "where": ""}


class _Template:
    """The page object as its template reads it, carrying the front matter (``meta``)
    that mkdocs-macros reads from whatever is called ``page``."""

    def __init__(self, page, meta: dict) -> None:
        self._page, self.meta = page, meta

    def __getattr__(self, name: str):
        return getattr(self._page, name)


def on_pre_page_macros(env) -> None:
    """Before each page: give it its page object; its figures are numbered from 1."""
    facts = importlib.import_module("mha_site.facts")
    support = importlib.import_module("mha.support.page")
    src = env.page.file
    module = importlib.import_module("mha_site.pages").page_module(src.src_uri)
    page = (
        importlib.import_module(module).page()
        if module
        else support.Page(facts={}, figures={})
    )
    env.variables["page"] = _Template(page, env.page.meta)
    where = f"docs/{src.src_uri}"
    markdown = Path(src.abs_src_path).read_text(encoding="utf-8")
    _PAGE.update(facts=facts.PageFacts(page, where, markdown), figures=0, where=where)


def on_post_page_macros(env) -> None:
    """After each page: every fact its module declares was stated in its Markdown."""
    unused = _PAGE["facts"].unused()
    if unused:
        raise importlib.import_module("mha_site.facts").FactError(unused)


def define_env(env):
    """Called by mkdocs-macros once per build."""
    # The build's experiments multiply many small matrices: one BLAS thread runs them
    # several times faster than two threads spinning on each other (measured: the
    # MiniLM pruning study, 23 s with one thread against 127 s with two).
    threadpool_limits(1)
    _fresh_core()
    formatting = importlib.import_module("mha.support.formatting")
    render = importlib.import_module("mha.figures").render

    env.filter(formatting.decimals, "dec")
    env.filter(formatting.percent, "pct")
    env.filter(formatting.thousands, "thousands")
    env.filter(formatting.vector, "vec")
    env.filter(formatting.significant, "sig")

    @env.macro
    def fact(name: str, caller) -> str:
        """The sentence inside ``{% call fact(name) %}…{% endcall %}``, if it holds."""
        return _PAGE["facts"].state(name, caller())

    @env.macro
    def holds(name: str) -> bool:
        """Whether the page's fact ``name`` holds (for ``{% if holds(name) %}``)."""
        return _PAGE["facts"].holds(name)

    @env.macro
    def figure(name: str) -> str:
        """The page's figure ``name``, numbered, captioned, its alt text its name."""
        figures = env.variables["page"].figures
        if name not in figures:
            raise KeyError(
                f"{_PAGE['where']}: the page module has no figure {name!r}; "
                f"it has {sorted(figures)}"
            )
        spec = figures[name]
        svg = render(spec.draw, spec.alt, *spec.data)
        _PAGE["figures"] += 1
        number = _PAGE["figures"]
        below = (
            f"<figcaption><strong>Figure {number}.</strong> "
            f"{html.escape(spec.caption)}</figcaption>"
        )
        # the drawing scrolls sideways on its own when it is wider than the screen at
        # its legible floor (``min-width``, mha.figures.style); the caption does not
        return (
            f'<figure class="mha" id="figure-{number}">'
            f'<div class="mha-scroll">{svg}</div>{below}</figure>'
        )
