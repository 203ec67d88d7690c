"""A missing anchor in any page of the real site fails the strict build at its file
and line.

The audit saw a missing anchor appended to index.md published while the same link
in cricket.md was refused. Every form tried on the real site (``#x``, ``index.md#x``,
``./#x``, ``cricket.md#x`` from index.md, ``index.md#x`` into it) was refused by a
full strict build when it was the only fault; what hid one was another fault: MkDocs
checks anchors only after every page is written and names no line, and the drift
hook's error (a number typed by hand, a raw HTML link to nowhere) is raised before,
so in a batch of faults a broken anchor was never named. The drift hook now checks
Markdown links to anchors itself (``mha_site.anchors``), at their line, in its one
error.

This test plants, in a copy of the real docs, a link to a missing anchor of its own
page and one into index.md in every Markdown page, and a number typed by hand in
one, and builds the copy once, strict, with the site's theme, Markdown extensions,
validation and drift hook; the other plugins and hooks, which compute what the pages
print, are left out (their macros stay text: a cheap build, whose pages may lose
headings a macro breaks, but never the planted links). Its own file, so that under xdist its
build runs beside the planted-faults build of tests/docs/test_planted_faults.py.
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOOK = "docs/_glue/drift.py"


def _real_config(config: str) -> str:
    """The site's mkdocs.yml with its theme, Markdown extensions, link validation and
    drift hook, but no nav, no other hook, no watched code and no plugin but search:
    every page builds in a second."""
    config = re.sub(r"(?ms)^nav:\n.*?(?=^\S)", "", config)
    config = re.sub(r"(?ms)^watch:\n.*?(?=^\S)", "", config)
    config = re.sub(r"(?ms)^hooks:\n.*?(?=^\S)", f"hooks:\n  - {HOOK}\n\n", config)
    config = re.sub(r"(?ms)^plugins:\n.*?(?=^\S)", "plugins:\n  - search\n\n", config)
    return config.replace("    omitted_files: warn", "    omitted_files: info")


def _plant(docs: Path, page: str) -> list[tuple[int, str, str]]:
    """Append to ``page`` a link to a missing anchor of its own and one into
    index.md; ``(line, link, page it names)`` of each."""
    text = (docs / page).read_text(encoding="utf-8").rstrip("\n")
    into_index = posixpath.relpath("index.md", posixpath.dirname(page) or ".")
    links = [
        ("#planted-missing-anchor", page),
        (f"{into_index}#planted-in-index", "index.md"),
    ]
    lines = text.count("\n") + 1
    text += "".join(f"\n\n[planted]({link})" for link, _ in links) + "\n"
    (docs / page).write_text(text, encoding="utf-8")
    return [(lines + 2 * (i + 1), link, named) for i, (link, named) in enumerate(links)]


def test_a_broken_anchor_is_refused_at_its_line_in_every_page(tmp_path):
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    (tmp_path / "src").symlink_to(ROOT / "src")  # the hook reads the docstrings
    docs = tmp_path / "docs"
    pages = sorted(
        p.relative_to(docs).as_posix()
        for p in docs.rglob("*.md")
        if not p.relative_to(docs).parts[0].startswith("_")
    )
    planted = {page: _plant(docs, page) for page in pages}
    with (docs / "ffn.md").open("a", encoding="utf-8") as markdown:
        markdown.write("\nIt is 10x faster.\n")  # an error raised before MkDocs' check
    config = _real_config((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", "site"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode != 0
    assert "docs/ffn.md:" in result.stderr and "'10x'" in result.stderr
    expected = [
        f"docs/{page}:{line}: {link!r}: {named} has no anchor #{link.partition('#')[2]}"
        for page, links in planted.items()
        for line, link, named in links
    ]
    assert "index.md" in pages and "reference/core.md" in pages and len(pages) > 20
    unnamed = [line for line in expected if line not in result.stderr]
    assert not unnamed, "not refused at its line:\n" + "\n".join(unnamed)
