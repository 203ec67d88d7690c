"""Build the site with Zensical, Material for MkDocs' successor, and say what it lacks.

Run by `make zensical`, in a venv of its own (never by `make test` or .ci/run). Zensical
reads mkdocs.yml; the site goes to .cache/zensical/site. The report: the nav's pages
built, each page not built, pages with an unexpanded ``{{`` (outside code), pages with fewer figures
than their Markdown asks for (``figure(`` macro calls against ``<figure class="mha">``).
Exits with Zensical's status, else 1 if any of those lists is not empty: an unbuilt
page is a failure.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from mkdocs.utils.yaml import yaml_load

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / ".cache" / "zensical" / "site"


def nav_sources(nav: object) -> list[str]:
    """Every source file named in a (nested) nav, in order."""
    if isinstance(nav, str):
        return [] if "://" in nav else [nav]
    if isinstance(nav, dict):
        return [path for value in nav.values() for path in nav_sources(value)]
    if isinstance(nav, list):
        return [path for item in nav for path in nav_sources(item)]
    return []


def built_page(source: str) -> Path:
    """Where the page built from ``source`` lies (directory URLs)."""
    stem = source.rsplit(".", 1)[0]
    return SITE / ("index.html" if stem == "index" else f"{stem}/index.html")


def build() -> int:
    """Run ``zensical build`` on mkdocs.yml with the site directory moved aside."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    with tempfile.NamedTemporaryFile(
        "w", suffix=".yml", dir=ROOT, prefix=".zensical-", delete=False
    ) as copy:  # beside mkdocs.yml, so that its relative paths hold
        copy.write(config + f"\nsite_dir: {SITE.relative_to(ROOT)}\n")
    try:
        command = [Path(sys.executable).parent / "zensical", "build", "-f", copy.name]
        return subprocess.run(command, cwd=ROOT).returncode
    finally:
        Path(copy.name).unlink()


def report(status: int) -> int:
    sources = nav_sources(
        yaml_load((ROOT / "mkdocs.yml").open(encoding="utf-8"))["nav"]
    )
    built = [s for s in sources if built_page(s).is_file()]
    braces, figures = [], []
    for source in built:
        html = built_page(source).read_text(encoding="utf-8")
        if "{{" in re.sub(r"<code>.*?</code>", "", html, flags=re.S):  # not shown
            braces.append(source)
        if source.endswith(".md"):
            wanted = len(
                re.findall(r"\bfigure\(", (ROOT / "docs" / source).read_text())
            )
            drawn = html.count('<figure class="mha"')
            if drawn < wanted:
                figures.append(f"{source} ({drawn} of {wanted})")
    unbuilt = [s for s in sources if s not in built]
    version = importlib.metadata.version("zensical")
    print(f"\nZensical {version}: exit status {status}")
    print(f"pages built: {len(built)} of the nav's {len(sources)}")
    for title, found in [
        ("pages not built", unbuilt),
        ("pages with an unexpanded {{", braces),
        ("pages missing figures", figures),
    ]:
        print(f"{title}: {len(found)}" + "".join(f"\n  {item}" for item in found))
    return status or int(bool(unbuilt or braces or figures))


if __name__ == "__main__":
    sys.exit(report(build()))
