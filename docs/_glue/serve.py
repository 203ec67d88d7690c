"""mkdocs hook for `make serve` (`mkdocs serve --dirty`): a code edit rebuilds everything.

A dirty build renders again only the pages whose source is newer than their output,
so a prose edit under docs/ shows in about a second. An edit to the code (src/, this
glue, the theme or mkdocs.yml) can change what every page prints: when such a file is
newer than the last build's output, the output is deleted first, so every page is
built again, with the core imported afresh (docs/_glue/macros.py does it every build).
"""

from pathlib import Path

from mkdocs.utils import clean_directory

ROOT = Path(__file__).resolve().parents[2]
CODE = [ROOT / "src", ROOT / "docs" / "_glue", ROOT / "docs" / "_theme"]
CONFIG = ROOT / "mkdocs.yml"


def newest_code_change(folders: list[Path], *files: Path) -> float:
    """The latest modification time of a file in ``folders`` or of ``files``."""
    found = [*files, *(p for folder in folders for p in folder.rglob("*"))]
    return max(
        p.stat().st_mtime for p in found if p.is_file() and "__pycache__" not in p.parts
    )


def on_pre_build(config, **kwargs):
    """Clear the output of the previous build if the code changed since it."""
    marker = Path(config["site_dir"]) / "sitemap.xml"  # written by every build
    if marker.exists() and newest_code_change(CODE, CONFIG) > marker.stat().st_mtime:
        clean_directory(config["site_dir"])
