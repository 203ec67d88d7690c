"""A missing anchor in any page of the real site fails the strict build (issue 29).

Its own file, so that under xdist (a whole file per worker) its build runs beside the
planted-faults build of tests/docs/test_planted_faults.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _without_plugins(config: str) -> str:
    """The site's mkdocs.yml with its Markdown extensions and link validation, but no
    nav, no hooks, no watched code and no plugins but search: every page builds in a second, its
    macros left as text (they hold no links)."""
    config = re.sub(r"(?ms)^nav:\n.*?(?=^\S)", "", config)
    config = re.sub(r"(?ms)^(hooks|watch):\n.*?(?=^\S)", "", config)
    config = re.sub(r"(?ms)^plugins:\n.*?(?=^\S)", "plugins:\n  - search\n\n", config)
    return config.replace("    omitted_files: warn", "    omitted_files: info")


def test_a_broken_anchor_is_refused_in_every_page_of_the_real_site(tmp_path):
    """The audit saw a missing anchor appended to index.md published while the same in
    cricket.md failed; a full strict build of the real site with a missing anchor
    planted in all of its pages (21 at 977b2a0) refused every one, index.md
    included. This plants one in every page of a copy of the real docs and builds
    them with the real extensions and validation, so no page can be skipped."""
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs, ignore=shutil.ignore_patterns("_glue", "*.py"))
    pages = sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.md"))
    for page in pages:
        with (docs / page).open("a", encoding="utf-8") as markdown:
            markdown.write("\n[planted](#planted-missing-anchor)\n")
    config = _without_plugins((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-d",
            str(tmp_path / "s"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode != 0
    refused = {
        page
        for page in pages
        if f"Doc file '{page}' contains a link '#planted-missing-anchor'"
        in result.stderr
    }
    assert "index.md" in pages and len(pages) > 15
    assert refused == set(pages), sorted(set(pages) - refused)
