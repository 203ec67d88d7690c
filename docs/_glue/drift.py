"""mkdocs hook: the drift guard runs in the build, on the pages being built.

Each page the build renders (every page for `make build`; the edited ones for a
`make serve --dirty` rebuild) is scanned from its source file by
``mha_site.drift`` for numbers typed by hand. Before any page is written, a
finding fails the build with one line per number: the file, the line and the fix.
`make build` then exits non-zero. `make serve` prints the same in the terminal and
shows it at the top of the page, and keeps serving (a failed build would leave the
server waiting for a good one).
"""

import importlib
import logging
import sys
from html import escape
from pathlib import Path

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))  # mha_site: the build's tooling

_RUN: dict = {"drift": None, "allowlist": [], "findings": [], "serving": False}
log = logging.getLogger("mkdocs.plugins.drift")


def on_startup(command, dirty, **kwargs):
    _RUN["serving"] = command == "serve"


def on_pre_build(config, **kwargs):
    """Import the rules afresh (docs/_glue/macros.py forgets ``mha`` every build)."""
    drift = importlib.import_module("mha_site.drift")
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
        report = _RUN["drift"].report(_RUN["findings"])
        if not _RUN["serving"]:
            raise PluginError(report)
        log.error(report)
    return env


def on_page_content(html, page, **kwargs):
    """While serving, a page with a hand-typed number says so at its top."""
    found = [f for f in _RUN["findings"] if f.page == page.file.src_uri]
    if not found:
        return html
    items = "".join(f"<li>{escape(str(f))}</li>" for f in found)
    return (
        '<div class="admonition failure"><p class="admonition-title">Drift guard: '
        f"`make build` will refuse this page</p><ul>{items}</ul></div>{html}"
    )
