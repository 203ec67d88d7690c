"""mkdocs hook: each signature of the API reference formatted by ruff once, then kept.

mkdocstrings formats a signature too long for one line by running ``ruff format`` on
it, one process per signature: 253 processes a build, about 14 ms each here, a fifth
of a warm build. This keeps each result in ``.cache/signatures``, under a hash of the
signature, the line length and ruff's version, so ruff runs only for a signature no
build has formatted before. mkdocstrings-python's ``_get_formatter`` (private, the
version locked) is what is wrapped; tests/docs/test_signature_cache.py checks that
it is still what formats a signature.
"""

import hashlib
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

from mkdocstrings_handlers.python._internal import rendering

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "signatures"
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))  # mha_site: the build's tooling

from mha_site.disk import keep  # noqa: E402

Formatter = Callable[[str, int], str]


def kept(format_code: Formatter) -> Formatter:
    """``format_code``, its results kept in ``CACHE`` by a hash of what it was given."""

    ruff = version("ruff")  # read once: a lookup in the installed packages

    def formatted(code: str, line_length: int) -> str:
        given = f"ruff {ruff}\n{line_length}\n{code}"
        path = CACHE / hashlib.sha256(given.encode()).hexdigest()
        try:
            return path.read_text(encoding="utf-8")
        except OSError:  # not kept yet, or a folder that cannot be read
            text = format_code(code, line_length)
            keep(path, text, "formatted signatures")  # a full disk costs the cache
            return text

    formatted.wraps = format_code
    return formatted


def on_config(config, **kwargs):
    """Wrap mkdocstrings' signature formatter, once per process."""
    current = rendering._get_formatter()
    if not hasattr(current, "wraps"):
        wrapped = kept(current)
        rendering._get_formatter = lambda: wrapped
    return config
