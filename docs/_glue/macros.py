"""mkdocs-macros glue: give pages the core and the number formatters. Nothing else.

Every number is computed in ``src/mha``; a page asks for it and formats it:

    {% set cricket = core("worked.cricket").solve() %}
    {{ cricket.head_a.weights[0] | dec }}          -> 0.768
    {{ figure("cricket.three_distributions", "alt text", cricket) }}

``core(name)`` imports ``mha.<name>``; ``figure("module.function", alt, ...)`` calls
``mha.figures.<module>.<function>(...)`` and inlines the SVG with ``alt`` as its
accessible name. Figures are cached by content hash (code and arguments), so a warm
build does not draw them again. A full build then deletes cached results that no
recent build or test read (``docs/_glue/hooks.py``).
"""

import importlib
import sys

from threadpoolctl import threadpool_limits


def _fresh_core() -> None:
    """Forget imported ``mha`` modules, so `mkdocs serve` picks up edits in src/."""
    for name in [m for m in sys.modules if m == "mha" or m.startswith("mha.")]:
        del sys.modules[name]


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

    @env.macro
    def figure(name: str, alt: str, *args, **kwargs) -> str:
        """Inline SVG of the figure ``mha.figures.<name>(*args, **kwargs)``."""
        return (
            f'<figure class="mha">{render(name, alt, *args, **kwargs)}</figure>'
        )
