"""mkdocs hook: the theme's templates compiled once, not again by every build.

Each build makes a new Jinja environment, which parsed and compiled the theme's
templates (Material's base.html and its partials, the overrides in docs/_theme) again:
about a third of a `make serve` rebuild after a prose edit. Jinja's bytecode cache
keeps each compiled template in ``.cache/jinja``, keyed by its name and checked
against a hash of its source, so an edited template is compiled again. A folder that
cannot be written (read-only, a full disk) costs the cache, not the build
(``mha_site.disk.BytecodeCache``).
"""

import sys
from pathlib import Path

from jinja2 import Environment

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "jinja"
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))  # mha_site: the build's tooling

from mha_site.disk import BytecodeCache  # noqa: E402


def on_env(env: Environment, config, files, **kwargs) -> Environment:
    """Give the theme's environment the bytecode cache in ``CACHE``."""
    env.bytecode_cache = BytecodeCache(CACHE)
    return env
