"""Claims as code: a page's comparing sentences come from its module and are checked.

Every ``{{ claim("name") }}`` of a page names a claim of ``mha.pages.<page>.claims()``,
and all of a module's claims hold (those not printed with ``claim`` are alt texts or
captions the module asserts). Change an input and a stale
sentence is refused: in-process here, and by ``mkdocs build --strict`` end to end.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mha.pages import cricket as cricket_page
from mha.support.claims import ClaimError, check
from mha.worked.cricket import solve
from tests.conftest import ROOT

DOCS = ROOT / "docs"
CALL = re.compile(r"""\{\{-?\s*claim\(\s*["'](?P<name>\w+)["']\s*\)\s*-?\}\}""")
PAGES = {
    page: [m["name"] for m in CALL.finditer(page.read_text(encoding="utf-8"))]
    for page in sorted(DOCS.glob("*.md"))
}
ANOTHER_QUERY = np.array([2.0, 1.0, 0.0, 1.0])  # "his" leaning to "Kohli": no tie


def module_of(page: Path):
    return importlib.import_module("mha.pages." + page.stem.replace("-", "_"))


@pytest.mark.parametrize("page", [p for p, names in PAGES.items() if names], ids=str)
def test_each_claim_of_a_page_is_its_modules_and_holds(page: Path):
    claims = module_of(page).claims()
    used = PAGES[page]
    unknown = sorted(set(used) - set(claims))  # the others: alt texts, captions
    assert not unknown, f"{page.name} prints {unknown}; its module has {sorted(claims)}"
    stale = {name: c.because for name, c in claims.items() if not c.holds}
    assert not stale, f"{page.name}: claims that no longer hold: {stale}"


def test_a_changed_query_makes_the_cricket_tie_claim_refused():
    claims = cricket_page.claims(solve(q=ANOTHER_QUERY))
    assert not claims["tie"].holds and not claims["tie_verdict"].holds
    with pytest.raises(
        ClaimError, match=r"docs/cricket\.md:55: the claim 'but exactly"
    ):
        check(claims["tie"], "docs/cricket.md:55")


def test_the_strict_build_fails_on_a_stale_claim(tmp_path: Path):
    """The cricket page built alone, from a copy of src/mha whose query for "his"
    changed: the build stops and names the page, the line and the claim."""
    shutil.copytree(ROOT / "src", tmp_path / "src")
    example = tmp_path / "src" / "mha" / "worked" / "cricket.py"
    text = example.read_text()
    assert "Q_HIS = np.array([1.0, 2.0, 0.0, 1.0])" in text
    example.write_text(
        text.replace("[1.0, 2.0, 0.0, 1.0]", str(ANOTHER_QUERY.tolist()))
    )
    docs = tmp_path / "docs"
    for part in ("_glue", "_theme", "assets"):
        shutil.copytree(DOCS / part, docs / part)
    shutil.copy(DOCS / "cricket.md", docs / "cricket.md")
    config = (ROOT / "mkdocs.yml").read_text()
    config = re.sub(r"(?ms)^nav:\n.*?(?=^\S)", "", config)  # one page: no nav
    config = config.replace("docs/_glue", str(docs / "_glue")).replace(
        "docs/_theme", str(docs / "_theme")
    )
    (tmp_path / "mkdocs.yml").write_text(config)
    env = {
        **os.environ,
        "PYTHONPATH": str(tmp_path / "src"),
        "MHA_CACHE_DIR": str(tmp_path / "cache"),
        "NO_MKDOCS_2_WARNING": "1",
    }
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "docs/cricket.md:55: the claim 'but exactly as much to itself'" in (
        result.stdout + result.stderr
    ), result.stderr[-3000:]
