"""mkdocs hooks: build-time files that belong in the site output, never in docs/.

Writing into docs/ would make `mkdocs serve` rebuild in a loop, so data for the
page widgets is written into the built site after each build. Thin: call the core.
"""

import importlib
import itertools
import re
import shutil
import time
from pathlib import Path

import jupytext

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
    """Write the widgets' JSON payloads into the site output; after a full build,
    delete cached results that neither it nor a recent test run read."""
    if not _BUILD["dirty"]:
        importlib.import_module("mha.support.cache").prune(_BUILD["started"])
    explorer = importlib.import_module("mha.pages.heads_explorer")  # the heads explorer
    explorer.write(Path(config["site_dir"]) / explorer.SITE_PATH)
    kv_memory = importlib.import_module("mha.pages.kv_cache")  # the KV-cache calculator
    kv_memory.write(Path(config["site_dir"]) / kv_memory.SITE_PATH)


# Notebook pages (mkdocs-jupyter, sources in docs/notebooks/*.py). nbconvert gives
# each cell a random id, so ids are renumbered in order (two builds stay identical),
# and each page gets its source as a downloadable .ipynb written beside it (the theme,
# docs/_theme/main.html, links it).
_CELL_ID = re.compile(r'id="cell-id=[^"]*"')


def _notebook_source(page) -> Path | None:
    src = page.file.src_uri
    if src.startswith("notebooks/") and src.endswith(".py"):
        return Path(page.file.abs_src_path)
    return None


def _ipynb(source: Path) -> str:
    """The jupytext source as an unexecuted .ipynb, cell ids numbered in order."""
    notebook = jupytext.read(source)
    for number, cell in enumerate(notebook.cells):
        cell.id = f"cell-{number}"
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
    target.write_text(_ipynb(source), encoding="utf-8")
    return output
