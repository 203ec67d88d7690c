"""mkdocs hooks: build-time files that belong in the site output, never in docs/.

Writing into docs/ would make `mkdocs serve` rebuild in a loop, so such files (the
notebooks' .ipynb downloads) are written into the built site. Thin: call the core.
"""

import copy
import hashlib
import importlib
import itertools
import re
import sys
import time
import urllib.parse
from pathlib import Path

import jupytext
import nbformat
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(
        0, str(ROOT / "src")
    )  # mha_site: the build's tooling, not installed

_BUILD = {
    "dirty": False,
    "serving": False,
    "started": 0.0,
    "builds": 0,
    "ahead": [],  # the processes computing studies ahead of the pages
    "code": None,  # the code they compute for (``mha_site.prefetch.marker``)
    "edited": 0.0,  # when the code or a notebook they compute was last modified
}


def on_startup(command, dirty, **kwargs):
    """Remember whether builds are dirty (`make serve` rebuilds one page at a time)
    and whether this process serves; name a failing executed block by its page and
    line; keep each executed block's output by content hash."""
    _BUILD["dirty"], _BUILD["serving"] = dirty, command == "serve"
    importlib.import_module("mha_site.blocks").install()
    importlib.import_module("mha_site.block_cache").install()


def on_pre_build(config, **kwargs):
    """Note when the build started, and which build of the run it is."""
    _BUILD["started"] = time.time()
    _BUILD["builds"] += 1


def on_files(files, config, **kwargs):
    """Render the pages in ``mha_site.prefetch.build_order``: those that compute
    nothing first, then the others in the nav's order. The first build of a run
    computes their studies on two cores: a second process works from the last of
    these pages back while this one renders from the first. While serving, this
    process computes no study (``mha_site.waiting``): a second process works from the
    cheapest page by the sealed timings, and a third from the costliest; and after an
    edit of the code or of a notebook, they start again for the edited code."""
    prefetch = importlib.import_module("mha_site.prefetch")
    nav = _nav_files(config["nav"])
    # the notebooks too, which are pages only once mkdocs-jupyter's on_files has run
    pages = {
        f.src_uri: f for f in files if f.src_uri in nav or f.is_documentation_page()
    }
    order = prefetch.build_order(list(pages), nav)
    others = [file for file in files if file.src_uri not in pages]
    docs = Path(config["docs_dir"])
    edited = _newest([ROOT / "src" / "mha", docs])
    if _BUILD["builds"] == 1 or (_BUILD["serving"] and edited > _BUILD["edited"]):
        _BUILD["edited"] = edited
        ahead = [prefetch.work(page, docs) for page in reversed(order)]
        _compute_ahead([a for a in ahead if a is not None])
    return Files([*(pages[page] for page in order), *others])


def _compute_ahead(ahead: list[str]) -> None:
    """Start the processes computing ``ahead`` (what ``mha_site.prefetch.work``
    returns, from the last page back), unless some already compute it for this very
    code; those that compute it for code edited since are stopped."""
    prefetch = importlib.import_module("mha_site.prefetch")
    code = prefetch.marker(ahead)  # named by the code, the notebooks and ``ahead``
    if code == _BUILD["code"]:
        return
    on_shutdown()
    _BUILD["code"] = code
    progress = importlib.import_module("mha.support.progress")
    progress.begin()  # one count of the studies, shared with the second process
    orders = [ahead]
    if _BUILD["serving"]:  # the cheapest pages first, and the costliest
        table = progress.sealed()
        cheapest = sorted(ahead, key=lambda a: prefetch.cost(a, table))
        orders = [cheapest, cheapest[::-1]]
    started = [prefetch.start(order, _BUILD["serving"]) for order in orders]
    _BUILD["ahead"] = [child for child in started if child is not None]
    progress.set_processes(min(2, len(_BUILD["ahead"]) + 1))


def _newest(folders: list[Path]) -> float:
    """When the newest Python file under ``folders`` was modified (the code, and the
    notebooks' sources among the docs)."""
    return max(
        (p.stat().st_mtime for folder in folders for p in folder.rglob("*.py")),
        default=0.0,
    )


def on_post_build(config, **kwargs):
    """After a full build, delete cached results that neither it nor a recent test
    run read. (The widgets' data is embedded in their pages.)"""
    prefetch = importlib.import_module("mha_site.prefetch")
    if not _BUILD["serving"]:  # while serving, they go on computing
        for child in _BUILD["ahead"]:
            prefetch.finish(child)
        _BUILD["ahead"] = []
    cache = importlib.import_module("mha.support.cache")
    if not _BUILD["dirty"] and cache.prune(_BUILD["started"]):
        prefetch.forget()  # what was computed ahead may be gone


def on_shutdown(**kwargs):
    """`make serve` stopped: stop computing what no page will be rendered with."""
    for child in _BUILD["ahead"]:
        child.kill()
        child.wait()
    _BUILD["ahead"] = []


def _nav_files(nav: list) -> list[str]:
    """The nav's files, in reading order."""
    files = []
    for item in nav or []:
        entry = next(iter(item.values())) if isinstance(item, dict) else item
        files.extend(_nav_files(entry) if isinstance(entry, list) else [entry])
    return files


# Notebook pages (mkdocs-jupyter, sources in docs/notebooks/*.py). Each is executed
# by mha_site.notebooks (once per version of the code it imports, kept in the
# content-hash cache) and handed to mkdocs-jupyter as an executed .ipynb, which it only
# renders (`execute: false` in mkdocs.yml). nbconvert gives each rendered cell a random
# id, so ids are renumbered in order (two builds stay identical), and each page gets a
# downloadable .ipynb written beside it (the theme, docs/_theme/main.html, links it):
# the executed notebook, with a first cell that installs mha from the repository, and
# links to the site's pages made absolute.
_CELL_ID = re.compile(r'id="cell-id=[^"]*"')
_EXECUTED: dict[Path, nbformat.NotebookNode] = {}  # this build's, by source
_LINK = re.compile(r"\]\((?![a-z]+:|#|/)([^)\s]+)\)")
_INSTALL = """\
# Run this cell first: it installs mha from its repository if it is missing.
import importlib.util

if importlib.util.find_spec("mha") is None:
    %pip install "git+{repo_url}"
import mha

print("mha is ready:", mha.MultiHeadAttention.__name__)"""


def _notebook_source(page, config) -> Path | None:
    src = page.file.src_uri
    if importlib.import_module("mha_site.pages").is_notebook(src):
        return Path(config["docs_dir"]) / src  # abs_src_path becomes the executed one
    return None


@event_priority(-100)  # after every other hook: the drift guard reads the .py source
def on_page_markdown(markdown, page, config, files, **kwargs):
    """Hand mkdocs-jupyter the executed notebook of a notebook page to render; tell
    ``mha_site.blocks`` which page's executed blocks run next."""
    src = page.file.abs_src_path  # None for a generated page
    lines = Path(src).read_text(encoding="utf-8") if src else markdown  # the source's
    importlib.import_module("mha_site.blocks").reading(
        f"docs/{page.file.src_uri}", lines
    )
    source = _notebook_source(page, config)
    if source is not None and getattr(page, "mha_waiting", None) is None:
        notebook = importlib.import_module("mha_site.notebooks").executed(source)
        _EXECUTED[source] = notebook  # the download below reuses it
        folder = importlib.import_module("mha.support.cache").cache_dir() / "notebooks"
        text = nbformat.writes(notebook)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        target = folder / f"{source.stem}-{digest}.ipynb"  # named by content: no race
        disk = importlib.import_module("mha_site.disk")
        if target.exists() or disk.keep(target, text, "executed notebooks"):
            page.file.abs_src_path = str(target)
        else:  # a full or read-only cache: mkdocs-jupyter reads it from elsewhere
            page.file.abs_src_path = str(disk.temporary(target.name, text))
    return markdown


def _ipynb(
    notebook: nbformat.NotebookNode,
    repo_url: str | None = None,
    page_url: str | None = None,
) -> str:
    """The .ipynb download of ``notebook``: the install cell first when ``repo_url``
    is given, relative links made absolute against ``page_url``, cell ids numbered in
    order, execution times dropped."""
    notebook = copy.deepcopy(notebook)
    if repo_url is not None:
        install = _INSTALL.format(repo_url=repo_url.rstrip("/"))
        notebook.cells.insert(0, nbformat.v4.new_code_cell(install))
    for cell in notebook.cells:
        if page_url is not None and cell.cell_type == "markdown":
            cell.source = _LINK.sub(
                lambda m: f"]({urllib.parse.urljoin(page_url, m[1])})", cell.source
            )
    for number, cell in enumerate(notebook.cells):
        cell.id = f"cell-{number}"
        cell.metadata.pop("execution", None)  # timestamps: builds stay identical
    return jupytext.writes(notebook, fmt="ipynb")


def on_post_page(output, page, config, **kwargs):
    """Renumber a notebook page's cell ids; write its .ipynb download beside it."""
    source = _notebook_source(page, config)
    if source is None or getattr(page, "mha_waiting", None) is not None:
        return output  # a notebook that waits (docs/_glue/waiting.py): no download yet
    number = itertools.count()
    output = _CELL_ID.sub(lambda _: f'id="cell-id={next(number)}"', output)
    target = Path(page.file.abs_dest_path).parent / f"{source.stem}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    page_url = urllib.parse.urljoin(config["site_url"] or "/", page.url)
    notebook = _EXECUTED.pop(source, None)
    if notebook is None:
        notebook = importlib.import_module("mha_site.notebooks").executed(source)
    target.write_text(_ipynb(notebook, config["repo_url"], page_url), encoding="utf-8")
    return output
