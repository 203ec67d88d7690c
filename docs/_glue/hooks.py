"""mkdocs hooks: build-time files that belong in the site output, never in docs/.

Writing into docs/ would make `mkdocs serve` rebuild in a loop, so such files (the
notebooks' .ipynb downloads) are written into the built site. Thin: call the core.
"""

import copy
import hashlib
import importlib
import itertools
import re
import shutil
import time
import urllib.parse
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient
from nbconvert.preprocessors import ExecutePreprocessor

_BUILD = {"dirty": False, "started": 0.0}


def on_startup(command, dirty, **kwargs):
    """Remember whether builds are dirty (`make serve` rebuilds one page at a time)."""
    _BUILD["dirty"] = dirty


def on_config(config, **kwargs):
    """Keep executed notebooks in a folder named by the hash of the ``mha`` source.

    mkdocs-jupyter's own cache key hashes a notebook's text and options, not the code
    it imports: one folder per version of ``src/mha`` makes an edit there re-execute
    every notebook by itself. Folders of earlier versions are removed.
    """
    cache = importlib.import_module("mha.support.cache")
    notebooks = config.plugins["mkdocs-jupyter"].config
    folder = cache.cache_dir() / "notebooks"
    notebooks["cache_dir"] = str(folder / cache.code_hash())
    for old in folder.glob("*"):
        if old.name != cache.code_hash():
            shutil.rmtree(old, ignore_errors=True)
    return config


def on_pre_build(config, **kwargs):
    _BUILD["started"] = time.time()


def on_post_build(config, **kwargs):
    """After a full build, delete cached results that neither it nor a recent test
    run read. (The widgets' data is embedded in their pages.)"""
    if not _BUILD["dirty"]:
        importlib.import_module("mha.support.cache").prune(_BUILD["started"])


# Notebook pages (mkdocs-jupyter, sources in docs/notebooks/*.py). nbconvert gives
# each cell a random id, so ids are renumbered in order (two builds stay identical),
# and each page gets a downloadable .ipynb written beside it (the theme,
# docs/_theme/main.html, links it): the notebook as executed for the page, with its
# outputs, a first cell that installs mha from the repository, and links to the
# site's pages made absolute. The executed notebook is the one mkdocs-jupyter ran
# (kept when nbconvert's ExecutePreprocessor returns it, so nothing runs twice), and
# is stored beside mkdocs-jupyter's cached page for builds that do not execute.
_CELL_ID = re.compile(r'id="cell-id=[^"]*"')
_LINK = re.compile(r"\]\((?![a-z]+:|#|/)([^)\s]+)\)")
_EXECUTED: dict[str, nbformat.NotebookNode] = {}
_INSTALL = """\
# Run this cell first: it installs mha from its repository if it is missing.
import importlib.util

if importlib.util.find_spec("mha") is None:
    %pip install "git+{repo_url}"
import mha

print("mha is ready:", mha.MultiHeadAttention.__name__)"""


def _key(notebook: nbformat.NotebookNode) -> str:
    """A notebook's identity: the hash of its cells' sources."""
    sources = "\0".join(cell.source for cell in notebook.cells)
    return hashlib.sha256(sources.encode()).hexdigest()[:16]


def _keep_executed_notebooks() -> None:
    """Wrap ExecutePreprocessor.preprocess so each notebook it runs is kept."""
    run = ExecutePreprocessor.preprocess
    if getattr(run, "keeps_notebooks", False):
        return

    def preprocess(self, nb, resources=None, km=None):
        nb, resources = run(self, nb, resources, km)
        _EXECUTED[_key(nb)] = copy.deepcopy(nb)
        return nb, resources

    preprocess.keeps_notebooks = True
    ExecutePreprocessor.preprocess = preprocess


_keep_executed_notebooks()


def _notebook_source(page) -> Path | None:
    src = page.file.src_uri
    if src.startswith("notebooks/") and src.endswith(".py"):
        return Path(page.file.abs_src_path)
    return None


def _executed(source: Path, config) -> nbformat.NotebookNode:
    """The notebook of ``source`` with its outputs: as mkdocs-jupyter ran it in this
    build, else as stored by an earlier build, else run now."""
    notebook = nbformat.reads(jupytext.writes(jupytext.read(source), "ipynb"), 4)
    key = _key(notebook)
    stored = Path(config.plugins["mkdocs-jupyter"].config["cache_dir"])
    stored = stored / f"{source.stem}-{key}.ipynb"
    if key in _EXECUTED:
        stored.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(_EXECUTED[key], stored)
    elif not stored.exists():
        NotebookClient(
            notebook, resources={"metadata": {"path": source.parent}}
        ).execute()
        stored.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, stored)
    return nbformat.read(stored, 4)


def _ipynb(
    source: Path,
    executed: nbformat.NotebookNode | None = None,
    repo_url: str | None = None,
    page_url: str | None = None,
) -> str:
    """The .ipynb download of ``source``: ``executed`` (outputs kept) or the bare
    source, the install cell first when ``repo_url`` is given, relative links made
    absolute against ``page_url``, cell ids numbered in order, execution times
    dropped."""
    notebook = executed if executed is not None else jupytext.read(source)
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
    source = _notebook_source(page)
    if source is None:
        return output
    number = itertools.count()
    output = _CELL_ID.sub(lambda _: f'id="cell-id={next(number)}"', output)
    name = f"{source.stem}.ipynb"
    target = Path(page.file.abs_dest_path).parent / name
    target.parent.mkdir(parents=True, exist_ok=True)
    page_url = urllib.parse.urljoin(config["site_url"] or "/", page.url)
    download = _ipynb(source, _executed(source, config), config["repo_url"], page_url)
    target.write_text(download, encoding="utf-8")
    return output
