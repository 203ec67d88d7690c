"""mkdocs hook for `make serve` (`mkdocs serve --dirty`): no edit dropped, no hung server.

A dirty build renders again only the pages whose source is newer than their output,
so a prose edit under docs/ shows within two seconds. Three things make that safe:

- an edit to the code can change what pages print. An edit to modules of ``mha``
  renders again the pages that run one of them: through their page module or the
  code they show, a notebook's cells included (imports followed:
  ``mha.support.cache.dependencies``; an edit to a page's module renders that page,
  an edit to the core every page that runs it), and the API reference pages that
  document it. Any other code edit (the glue, the theme, the site's tooling,
  mkdocs.yml) clears the output, so every page is built again. The core is imported
  afresh every build (docs/_glue/macros.py). A page of the API reference is never
  rendered alone: its cross-references resolve only to pages of the same build, so
  the whole reference renders with it (``reference``);
- an edit saved while a build runs is newer than that build's start but may be older
  than the page it wrote: the next build renders every page edited since the previous
  build started, so the edit is never dropped;
- while serving, a build error (a fact that no longer holds, a failing macro) is shown
  in the page itself, and the terminal says it, instead of failing the build (which
  leaves `mkdocs serve` waiting for a build that never comes). `make build` stays strict.

And a build never starts another: once serving, Python writes no compiled files. The
build after a code edit imports the edited module again, and its new compiled file
in src/**/__pycache__, a watched folder, made the server build a second time. The
server looks for edits every ``POLL_SECONDS``, not every half second as mkdocs does:
an edit waited a quarter of a second on average before its build began. It still
polls (each look reads the modification times of docs/ and src/, about 3 ms), as
mkdocs does so that an edit made through a shared folder of a virtual machine is
seen too.
"""

import importlib
import os
import re
import sys
import time
from pathlib import Path

from mkdocs.utils import clean_directory
from watchdog.observers.polling import PollingObserver

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(
        0, str(ROOT / "src")
    )  # mha_site: the build's tooling, not installed
CODE = [ROOT / "src", ROOT / "docs" / "_glue", ROOT / "docs" / "_theme"]
CONFIG = ROOT / "mkdocs.yml"
# A link resolved by mkdocs-autorefs to a documented object: [title][mha.x.y], [mha.x][]
_CROSS_REFERENCE = re.compile(r"\]\[mha\.[\w.]+\]|\[mha\.[\w.]+\]\[\]")
_SERVE = {"serving": False, "started": None, "previous": None}
POLL_SECONDS = 0.2


def on_startup(command, dirty, **kwargs):
    """Remember whether this process serves the site (`mkdocs serve`)."""
    _SERVE["serving"] = command == "serve"


def on_config(config, **kwargs):
    """While serving, a macro error is written into its page instead of stopping."""
    if _SERVE["serving"] and "macros" in config.plugins:
        config.plugins["macros"].config["on_error_fail"] = False
    return config


def on_serve(server, config, builder, **kwargs):
    """From the first build on, no compiled file is written: not by this process, nor
    by the processes it starts (a notebook's kernel). The modules not edited since
    are still read from the compiled files the first build wrote. And what mkdocs
    watches so far (docs/, mkdocs.yml) moves to an observer that polls every
    ``POLL_SECONDS``; src/, watched after this hook, is put on it too, and the server
    starts it."""
    sys.dont_write_bytecode = True
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    watched = []
    for path in [config.docs_dir, config.config_file_path, *config.theme.dirs]:
        try:
            server.unwatch(path)
        except KeyError:  # not watched: the theme, unless --watch-theme
            continue
        watched.append(path)
    server.observer = PollingObserver(timeout=POLL_SECONDS)
    for path in watched:
        server.watch(path)
    return server


def on_pre_build(config, **kwargs):
    _SERVE["previous"], _SERVE["started"] = _SERVE["started"], time.time()


def changed_code(since: float) -> list[Path]:
    """The code files (of ``CODE`` and ``CONFIG``) modified after ``since``."""
    found = [CONFIG, *(p for folder in CODE for p in folder.rglob("*"))]
    return [
        p
        for p in found
        if p.is_file() and "__pycache__" not in p.parts and p.stat().st_mtime > since
    ]


def mha_module(path: Path) -> str | None:
    """``mha.pages.ffn`` for ``src/mha/pages/ffn.py``; None for any other file."""
    package = ROOT / "src" / "mha"
    if path.suffix != ".py" or not path.is_relative_to(package):
        return None
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def stale(files, config, edited: list[Path]) -> list:
    """The pages to render again after ``edited`` code: all of them (None) unless every
    edited file is a module of ``mha``; then those that run an edited module (their
    page module, the module drawing their figures or the code they show imports it)
    or document it (or, in the API reference, a package holding it)."""
    modules = {mha_module(path) for path in edited}
    if None in modules:
        return None
    cache = importlib.import_module("mha.support.cache")  # imported afresh this build
    pages = importlib.import_module("mha_site.pages")
    found = []
    for file in files.documentation_pages():
        text = Path(file.abs_src_path).read_text(encoding="utf-8")
        shown = pages.documented(text)
        names = {*pages.imported(text), *shown}
        if module := pages.page_module(file.src_uri):
            names |= {module, pages.figure_module(module)}
        runs = {m for name in names for m in cache.dependencies(name)}
        holds = any(m.startswith(f"{name}.") for name in shown for m in modules)
        if modules & runs or holds:
            found.append(file)
    return found


def reference(files) -> list:
    """The API reference: the pages that document modules (``::: mha.x``) and those
    that link to what they document (``[title][mha.x.y]``). mkdocs-autorefs resolves
    such a link only to a page rendered in the same build, so they render together
    (one rendered alone shows its links to the others as literal brackets)."""
    pages = importlib.import_module("mha_site.pages")
    return [
        file
        for file in files.documentation_pages()
        if (text := Path(file.abs_src_path).read_text(encoding="utf-8"))
        and (pages.documented(text) or _CROSS_REFERENCE.search(text))
    ]


def on_files(files, config, **kwargs):
    """Render again every page whose code changed since the last build, and every
    page edited since the previous build started (an edit saved during that build may
    be older than the output it wrote); with one page of the API reference, all of
    it (``reference``)."""
    marker = Path(config["site_dir"]) / "sitemap.xml"  # written by every build
    edited = changed_code(marker.stat().st_mtime) if marker.exists() else []
    pages = stale(files, config, edited) if edited else []
    if pages is None:
        clean_directory(config["site_dir"])
        return files
    since = _SERVE["previous"]
    render = [
        file
        for file in files.documentation_pages()
        if file in pages
        or (since is not None and Path(file.abs_src_path).stat().st_mtime >= since)
    ]
    group = reference(files) if render else []
    if any(file in group for file in render):
        render += group
    for file in render:
        Path(file.abs_dest_path).unlink(missing_ok=True)
    return files
