"""mkdocs hook: the drift guard runs in the build, on the pages being built.

Each page the build renders (every page for `make build`; the edited ones for a
`make serve --dirty` rebuild) is scanned from its source file by
``mha_site.drift`` for numbers typed by hand. Before any page is written, a
finding fails the build with one line per number: the file, the line and the fix.
`make build` then exits non-zero. `make serve` prints the same in the terminal and
shows it at the top of the page (docs/_glue/errors.py), and keeps serving (a failed build would leave the
server waiting for a good one). Raw HTML links and Markdown links to an anchor are
checked here too (``mha_site.anchors``), at their line, in the same one error: MkDocs'
own anchor check runs after every page is written, so an error raised here hid it.
"""

import importlib
import logging
import sys
import time
from pathlib import Path

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))  # mha_site: the build's tooling

_RUN: dict = {
    "drift": None,
    "anchors": None,  # mha_site.anchors
    "allowlist": [],
    "findings": [],
    "links": [],
    "anchor_links": [],  # (page, line, target) of each Markdown link to an anchor
    "serving": False,
    "cpu": 0.0,  # the guard's own CPU time this build (budget: 0.5 s for a full build)
}
log = logging.getLogger("mkdocs.plugins.drift")
TEMPLATE = "{{ }}"  # the text of a finding that the page's template does not parse


def on_startup(command, dirty, **kwargs):
    _RUN["serving"] = command == "serve"


def on_pre_build(config, **kwargs):
    """Import the rules afresh (docs/_glue/macros.py forgets ``mha`` every build);
    read what is published from outside docs/: the page modules' figure texts, the
    docstring examples of the API reference, and the nav titles of mkdocs.yml."""
    started = time.process_time()
    drift = importlib.import_module("mha_site.drift")
    _RUN.update(drift=drift, allowlist=drift.load_allowlist(), findings=[], links=[])
    _RUN.update(anchors=importlib.import_module("mha_site.anchors"), anchor_links=[])
    root = Path(config.config_file_path).parent
    _RUN["findings"] += drift.sources(root, _RUN["allowlist"])
    _RUN["cpu"] = time.process_time() - started


def on_page_markdown(markdown, page, config, files, **kwargs):
    """Scan the page's source (before the macros run) for hand-typed numbers."""
    started = time.process_time()
    drift = _RUN["drift"]
    path = Path(page.file.abs_src_path)
    name = page.file.src_uri
    found = drift.page_findings(path, name, _RUN["allowlist"])
    _RUN["findings"] += found
    if _RUN["serving"]:  # shown at the page's top (docs/_glue/errors.py); a template
        # that does not parse is shown by the macros (docs/_glue/macros.py)
        page.mha_build_errors = [
            *getattr(page, "mha_build_errors", []),
            *(("drift", str(f)) for f in found if f.text != TEMPLATE),
        ]
    if path.suffix == ".md":
        source = path.read_text(encoding="utf-8")
        _RUN["links"] += [(name, *link) for link in drift.html_links(source)]
        _RUN["anchor_links"] += [(name, *a) for a in _RUN["anchors"].links(source)]
    _RUN["cpu"] += time.process_time() - started
    return markdown


def _broken_html_links(files) -> list[str]:
    """Raw HTML links and images (``<a href>``, ``<img src>``) to a file that is not
    in the docs or to an anchor its page does not have, as Markdown links are checked
    (every page is rendered by now, so its anchors are known). Raw HTML is read from
    the page's built URL (``mha_site.drift.resolve``)."""
    broken = []
    for name, line, target in _RUN["links"]:
        candidates, anchor = _RUN["drift"].resolve(name, target)
        found = next(
            (f for f in map(files.get_file_from_path, candidates) if f is not None),
            None,
        )
        where = f"docs/{name}:{line}: {target!r}"
        if found is None and not candidates:
            broken.append(
                f"{where}: mkdocs does not rewrite raw HTML, so the browser reads it "
                "from the page's URL: link to the built page (../cost/), not its .md"
            )
        elif found is None:
            broken.append(f"{where}: no such file in docs/ (tried {candidates})")
        elif anchor and found.page is not None:
            present = found.page.present_anchor_ids
            wrong = present is not None and _RUN["anchors"].missing(
                found.src_uri, anchor, present
            )
            if wrong:
                broken.append(f"{where}: {wrong}")
    return broken


def _broken_anchors(files) -> list[str]:
    """Markdown links to an anchor their page does not have, at their line. MkDocs
    checks them too, but only after every page is written and without the line: an
    error raised before (here) would hide them."""
    anchors, broken = _RUN["anchors"], []
    for name, line, link in _RUN["anchor_links"]:
        path, anchor = anchors.target(name, link)
        found = files.get_file_from_path(path) if path else None
        present = found.page.present_anchor_ids if found and found.page else None
        if present is not None:  # a notebook's or a missing page: MkDocs says
            wrong = anchors.missing(found.src_uri, anchor, present)
            if wrong:
                broken.append(f"docs/{name}:{line}: {link!r}: {wrong}")
    return broken


def on_env(env, config, files, **kwargs):
    """Fail the build, before any page is written, if a page held a number by hand,
    a raw HTML link to nowhere or a link to a missing anchor."""
    started = time.process_time()
    broken = _broken_html_links(files)
    missing = _broken_anchors(files)
    _RUN["cpu"] += time.process_time() - started
    log.info(f"drift guard: {_RUN['cpu']:.2f} CPU-s this build")
    parts = []
    if _RUN["findings"]:
        parts.append(_RUN["drift"].report(_RUN["findings"]))
    if broken:
        parts.append(
            "raw HTML links to nowhere\n" + "\n".join(f"  {b}" for b in broken)
        )
    if missing:
        parts.append(
            "links to a missing anchor (link to a heading's anchor, or add one)\n"
            + "\n".join(f"  {m}" for m in missing)
        )
    if parts:
        if not _RUN["serving"]:
            raise PluginError("\n".join(parts))
        log.error("\n".join(parts))
    return env
