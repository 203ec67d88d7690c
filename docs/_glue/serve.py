"""mkdocs hook for `make serve` (`mkdocs serve --dirty`): no edit dropped, no hung server.

A dirty build renders again only the pages whose source is newer than their output,
so a prose edit under docs/ shows in about a second. Three things make that safe:

- an edit to the code (src/, this glue, the theme or mkdocs.yml) can change what every
  page prints: when such a file is newer than the last build's output, the output is
  deleted first, so every page is built again (with the core imported afresh:
  docs/_glue/macros.py does it every build);
- an edit saved while a build runs is newer than that build's start but may be older
  than the page it wrote: the next build renders every page edited since the previous
  build started, so the edit is never dropped;
- while serving, a build error (a fact that no longer holds, a failing macro) is shown
  in the page itself, and the terminal says it, instead of failing the build (which
  leaves `mkdocs serve` waiting for a build that never comes). `make build` stays strict.
"""

import time
from pathlib import Path

from mkdocs.utils import clean_directory

ROOT = Path(__file__).resolve().parents[2]
CODE = [ROOT / "src", ROOT / "docs" / "_glue", ROOT / "docs" / "_theme"]
CONFIG = ROOT / "mkdocs.yml"
_SERVE = {"serving": False, "started": None, "previous": None}


def newest_code_change(folders: list[Path], *files: Path) -> float:
    """The latest modification time of a file in ``folders`` or of ``files``."""
    found = [*files, *(p for folder in folders for p in folder.rglob("*"))]
    return max(
        p.stat().st_mtime for p in found if p.is_file() and "__pycache__" not in p.parts
    )


def on_startup(command, dirty, **kwargs):
    """Remember whether this process serves the site (`mkdocs serve`)."""
    _SERVE["serving"] = command == "serve"


def on_config(config, **kwargs):
    """While serving, a macro error is written into its page instead of stopping."""
    if _SERVE["serving"] and "macros" in config.plugins:
        config.plugins["macros"].config["on_error_fail"] = False
    return config


def on_pre_build(config, **kwargs):
    """Clear the output of the previous build if the code changed since it."""
    _SERVE["previous"], _SERVE["started"] = _SERVE["started"], time.time()
    marker = Path(config["site_dir"]) / "sitemap.xml"  # written by every build
    if marker.exists() and newest_code_change(CODE, CONFIG) > marker.stat().st_mtime:
        clean_directory(config["site_dir"])


def on_files(files, config, **kwargs):
    """Render again every page edited since the previous build started (an edit
    saved during that build may be older than the output it wrote)."""
    since = _SERVE["previous"]
    if since is None:
        return files
    for file in files.documentation_pages():
        source, output = Path(file.abs_src_path), Path(file.abs_dest_path)
        if source.stat().st_mtime >= since and output.exists():
            output.unlink()
    return files
