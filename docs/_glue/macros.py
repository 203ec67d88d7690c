"""mkdocs-macros glue: give pages the core and the number formatters. Nothing else.

Every number is computed in ``src/mha``; a page asks for it and formats it:

    {% set cricket = core("worked.cricket").solve() %}
    {{ cricket.head_a.weights[0] | dec }}          -> 0.768
    {{ figure("cricket.three_distributions", alt, cricket, caption=caption) }}
    {{ claim("tie") }}                              -> a sentence, checked

``core(name)`` imports ``mha.<name>``; ``figure("module.function", alt, ...)`` calls
``mha.figures.<module>.<function>(...)`` and inlines the SVG with ``alt`` as its
accessible name, in a ``<figure>`` numbered on its page ("Figure 1.") with its
required ``caption`` below it (a figure without one fails the build, naming the
page). ``claim(name)`` prints the sentence ``claims()[name]`` of the page's module
(``mha.pages.<page>``) if its values bear it out, else fails the build naming the
page, the line and the claim (``mha.support.claims``). Figures are cached by content hash (code and arguments), so a warm
build does not draw them again. A full build then deletes cached results that no
recent build or test read (``docs/_glue/hooks.py``).
"""

import html
import importlib
import sys
from pathlib import Path

from threadpoolctl import threadpool_limits


def _fresh_core() -> None:
    """Forget imported ``mha`` modules, so `mkdocs serve` picks up edits in src/."""
    for name in [m for m in sys.modules if m == "mha" or m.startswith("mha.")]:
        del sys.modules[name]


# What the page being rendered has used so far: its figures' count, its claims.
_PAGE: dict = {"figures": 0, "claims": None}


def on_pre_page_macros(env) -> None:
    """Called by mkdocs-macros before each page: its figures are numbered from 1."""
    _PAGE.update(figures=0, claims=None)


def _line(path: str, text: str) -> int:
    """The 1-based number of the first line of ``path`` containing ``text`` (0: none)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return next((i for i, line in enumerate(lines, 1) if text in line), 0)


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
    def core(name: str):
        """The module ``mha.<name>``."""
        return importlib.import_module(f"mha.{name}")

    claims = importlib.import_module("mha.support.claims")

    @env.macro
    def figure(name: str, alt: str, *args, caption: str = "", **kwargs) -> str:
        """The figure ``mha.figures.<name>(*args, **kwargs)``, numbered, captioned.

        ``caption`` (from the page's module: what to look at) is required: a figure
        without one fails the build, naming the page and the figure.
        """
        if not caption.strip():
            raise ValueError(
                f"docs/{env.page.file.src_uri}: figure {name!r} has no caption: pass "
                "caption=<a sentence from the page's module saying what to look at>"
            )
        _PAGE["figures"] += 1
        number = _PAGE["figures"]
        svg = render(name, alt, *args, **kwargs)
        below = (
            f"<figcaption><strong>Figure {number}.</strong> "
            f"{html.escape(caption)}</figcaption>"
        )
        # the drawing scrolls sideways on its own when it is wider than the screen at
        # its legible floor (``min-width``, mha.figures.style); the caption does not
        return (
            f'<figure class="mha" id="figure-{number}">'
            f'<div class="mha-scroll">{svg}</div>{below}</figure>'
        )

    @env.macro
    def claim(name: str) -> str:
        """The sentence ``claims()[name]`` of the page's module, if it still holds."""
        page = env.page.file
        module = "mha.pages." + Path(page.src_uri).stem.replace("-", "_")
        if _PAGE["claims"] is None:
            _PAGE["claims"] = importlib.import_module(module).claims()
        call = 'claim("' + name + '")'
        where = f"docs/{page.src_uri}:{_line(page.abs_src_path, call)}"
        if name not in _PAGE["claims"]:
            raise KeyError(
                f"{where}: {module}.claims() has no claim {name!r}; "
                f"it has {sorted(_PAGE['claims'])}"
            )
        return claims.check(_PAGE["claims"][name], where)
