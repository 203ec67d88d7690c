"""mkdocs hook: the drift guard runs in the build, on the pages being built.

Each page the build renders (every page for `make build`; the edited ones for a
`make serve --dirty` rebuild) is scanned from its source file by
``mha.support.drift`` for numbers typed by hand. Before any page is written, a
finding fails the build with one line per number: the file, the line and the fix.
`make build` then exits non-zero; `make serve` prints the same and keeps the last
good site in the browser (no reload) until the page is fixed.
"""

import importlib
from pathlib import Path

from mkdocs.exceptions import PluginError

_RUN: dict = {"drift": None, "allowlist": [], "findings": []}


def on_pre_build(config, **kwargs):
    """Import the rules afresh (docs/_glue/macros.py forgets ``mha`` every build)."""
    drift = importlib.import_module("mha.support.drift")
    _RUN.update(drift=drift, allowlist=drift.load_allowlist(), findings=[])


def on_page_markdown(markdown, page, config, files, **kwargs):
    """Scan the page's source (before the macros run) for hand-typed numbers."""
    drift = _RUN["drift"]
    path = Path(page.file.abs_src_path)
    name = page.file.src_uri
    _RUN["findings"] += drift.check(drift.page_text(path), name, _RUN["allowlist"])
    return markdown


def on_env(env, config, files, **kwargs):
    """Fail the build, before any page is written, if a page held a number by hand."""
    if _RUN["findings"]:
        raise PluginError(_RUN["drift"].report(_RUN["findings"]))
    return env
