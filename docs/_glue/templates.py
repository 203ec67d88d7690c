"""mkdocs hook: the theme's templates compiled once, not again by every build.

Each build makes a new Jinja environment, which parsed and compiled the theme's
templates (Material's base.html and its partials, the overrides in docs/_theme) again:
about a third of a `make serve` rebuild after a prose edit. Jinja's bytecode cache
keeps each compiled template in ``.cache/jinja``, keyed by its name and checked
against a hash of its source, so an edited template is compiled again.
"""

from pathlib import Path

from jinja2 import Environment, FileSystemBytecodeCache

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "jinja"


def on_env(env: Environment, config, files, **kwargs) -> Environment:
    """Give the theme's environment the bytecode cache in ``CACHE``."""
    CACHE.mkdir(parents=True, exist_ok=True)
    env.bytecode_cache = FileSystemBytecodeCache(str(CACHE))
    return env
