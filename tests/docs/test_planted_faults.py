"""Planted faults: one representative of each route a hand-typed number or a dead
link used to reach the site, planted in a copy of a small site, refused by one
`mkdocs build --strict` with its file and line.

All plants share one build (each in its own page, so one failure does not hide
another); the tests read its error list. If a rule of the guard weakens, the plant it
held is published and its test fails.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mha.support import measured
from mha_site.bench import quartiles, seal
from mha_site.drift import load_allowlist, page_findings

ROOT = Path(__file__).resolve().parents[2]

# page -> (its Markdown, the line the build must name, what it must quote)
PLANTS = {
    "words.md": ("# Words\n\nHere eight heads would be needed.\n", 3, "'eight'"),
    # a small count with any noun (true: two), and counts with nouns of any kind
    "count.md": ("# C\n\nThe width is split into three heads.\n", 3, "'three'"),
    "nouns.md": (
        "# N\n\nIt holds eight scores and seven rows,\nin twelve columns.\n",
        4,
        "'twelve'",
    ),
    "quarter.md": (
        "# Q\n\nHead A puts a quarter of its weight there.\n",
        3,
        "'a quarter'",
    ),
    "tenth.md": (
        "# T\n\nEvery score falls below a tenth of its peak.\n",
        3,
        "'a tenth'",
    ),
    "half.md": ("# H\n\nHead A puts half its weight on Kohli.\n", 3, "'half'"),
    "meter.md": ('# M\n\n<meter value="0.9" min="0" max="1"></meter>\n', 3, "'0.9'"),
    "data.md": ('# D\n\n<span data-weight="0.768">Kohli</span>\n', 3, "'0.768'"),
    "attribute.md": (
        '# A\n\nSee <abbr title="0.768">the weight</abbr>.\n',
        3,
        "'0.768'",
    ),
    "filter.md": ("# F\n\nIt is {{ 0.768 | pct }}.\n", 3, "'0.768'"),
    "set.md": ("# S\n\n{% set w = 0.45 %}\nThe weight is {{ w }}.\n", 3, "'0.45'"),
    "string.md": ('# S\n\nIt is {{ "76.8%" }} of it.\n', 3, "'76.8%'"),
    "units.md": ("# U\n\nA 128k context.\n\nA 4K window.\n", 5, "'4K'"),
    "fraction.md": ("# F\n\nIt puts ¾ of the weight on Kohli.\n", 3, "'¾'"),
    "comment.md": (
        '# C\n\n```python exec="on"\nw = solve()  # Kohli gets 0.768\n```\n',
        4,
        "'0.768'",
    ),
    "math.md": ("# M\n\nEach head has $d_k = 3$.\n", 3, "'3'"),
    "html-link.md": (
        '# L\n\nSee <a href="../missing/">this</a>.\n',
        3,
        "'../missing/'",
    ),
    "html-source.md": ('# S\n\n<a href="words.md">a source</a>\n', 3, "not its .md"),
    "html-image.md": ('# I\n\n<img src="nowhere.png" alt="x">\n', 3, "'nowhere.png'"),
    "figure-macro.md": (
        '# F\n\n{{ figure("bars", alt="76.8% on Kohli") }}\n',
        3,
        "'76.8%'",
    ),
    "html-anchor.md": (
        '# H\n\n## Here\n\nSee <a href="../words/#no-such">it</a>.\n',
        5,
        "has no anchor #no-such",
    ),
}
PAGE_MODULE = (
    "from mha.support.page import Figure\n\n"
    'BARS = Figure("cricket.bars", (), "head A puts 90% of its weight on Kohli", "x")\n'
)
DOCSTRING = (
    'def f():\n    """Head A puts 76.8% of its weight on Kohli.\n\n'
    '    f()  # prints 0.768\n    """\n\n\n'
    'def g():\n    """Split into 3 heads, each of 16 columns."""\n'
)
# The API reference renders mha.claims: its docstrings' prose is published.
REFERENCE = "# API\n\n::: mha.claims\n"


def _home() -> str:
    """index.md holding the real allowlist's fragments for it, the first one followed
    on its line by a number the entry must not excuse ("2017 tokens")."""
    fragments = [e.fragment for e in load_allowlist() if e.page == "index.md"]
    assert fragments, "the allowlist has no entry for index.md to plant beside"
    first, *others = fragments
    return f"# Home\n\n{first} and 2017 tokens.\n\n" + "".join(
        f"{fragment}.\n\n" for fragment in others
    )


@pytest.fixture(scope="module")
def refused(tmp_path_factory) -> str:
    """The error output of one strict build of a small site holding every plant."""
    site = tmp_path_factory.mktemp("planted")
    docs = site / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(_home(), encoding="utf-8")
    (docs / "reference").mkdir()
    (docs / "reference" / "api.md").write_text(REFERENCE, encoding="utf-8")
    for page, (markdown, _, _) in PLANTS.items():
        (docs / page).write_text(markdown, encoding="utf-8")
    (site / "src" / "mha" / "pages").mkdir(parents=True)
    (site / "src" / "mha" / "pages" / "planted.py").write_text(PAGE_MODULE)
    (site / "src" / "mha" / "claims.py").write_text(DOCSTRING)
    nav = [{"Home": "index.md"}, {"Eight heads, 0.9 of the weight": "words.md"}]
    nav += [page for page in PLANTS if page != "words.md"]
    config = {
        "site_name": "planted",
        "site_dir": str(site / "site"),
        "nav": nav,
        "validation": {"links": {"anchors": "warn"}},
        "hooks": [str(ROOT / "docs" / "_glue" / "drift.py")],
    }
    (site / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q"],
        capture_output=True,
        text=True,
        cwd=site,
    )
    assert result.returncode != 0, "the build published every plant"
    assert not (site / "site" / "words" / "index.html").exists()
    return result.stderr


@pytest.mark.parametrize("page", sorted(PLANTS))
def test_the_build_refuses_the_plant_at_its_line(refused, page):
    _, line, quoted = PLANTS[page]
    wanted = f"docs/{page}:{line}: "
    lines = [row for row in refused.splitlines() if wanted in row]
    assert any(quoted in row for row in lines), f"{wanted} {quoted}\n{refused[-3000:]}"


@pytest.mark.parametrize(
    "where, quoted",
    [
        ("mkdocs.yml:", "'0.9'"),  # a nav title
        ("mkdocs.yml:", "'Eight'"),
        ("src/mha/pages/planted.py:3: ", "'90%'"),  # a page module's alt text
        ("src/mha/claims.py:4: ", "'# prints'"),  # a docstring's claimed output
        ("src/mha/claims.py:2: ", "'76.8%'"),  # a value in a docstring's prose
        ("src/mha/claims.py:9: ", "'3'"),  # integers in a docstring's prose
        ("src/mha/claims.py:9: ", "'16'"),
        ("docs/index.md:3: ", "'2017'"),  # beside an allowlisted fragment, not in it
    ],
)
def test_the_build_refuses_what_is_published_outside_docs(refused, where, quoted):
    assert any(where in row and quoted in row for row in refused.splitlines()), refused[
        -3000:
    ]


def test_each_refusal_names_a_fix(refused):
    for row in refused.splitlines():
        if row.strip().startswith(("docs/", "src/", "mkdocs.yml")):
            assert row.count(": ") >= 2 and len(row.rsplit(": ", 1)[-1]) > 10, row


def test_a_notebook_printing_a_typed_number_is_refused_with_a_fix_that_exists(
    tmp_path,
):
    """Notebooks are pages only with mkdocs-jupyter: checked in-process, by the same
    function the hook calls."""
    source = tmp_path / "playground.py"
    source.write_text(
        "# %% [markdown]\n# Play.\n\n# %%\nw = 0.5\nprint('Kohli gets 0.768', w)\n"
    )
    found = page_findings(source, "notebooks/playground.py", [])
    assert [(f.line, f.text) for f in found] == [(6, "0.768")]
    assert "mha.pages" not in found[0].fix  # no module that does not exist
    markdown = tmp_path / "prose.py"
    markdown.write_text("# %% [markdown]\n# Head A puts 0.768 on Kohli.\n")
    fix = page_findings(markdown, "notebooks/prose.py", [])[0].fix
    assert "code cell" in fix and "mha.pages" not in fix


def test_a_bench_summary_moved_inside_its_tolerance_and_resealed_is_refused(
    tmp_path, monkeypatch
):
    """The sixth route: a committed bench result whose summary was edited by hand (a
    median moved by less than any fact's tolerance) and resealed (its checksum
    recomputed) is refused where every page reads it, ``measured.load``, because the
    result keeps the raw samples the summary came from."""
    samples = [0.0141, 0.0143, 0.0144, 0.0146, 0.0150]  # seconds
    fields = {"median": "median", "q1": "q1", "q3": "q3"}
    result = {"forward_ms": quartiles(samples, fields, scale=1e3, digits=2)}
    monkeypatch.setattr(measured, "DATA_DIR", tmp_path)
    (tmp_path / "planted.json").write_text(json.dumps(seal(result)))
    assert measured.load("planted")["forward_ms"]["median"] == 14.4  # as measured
    result["forward_ms"]["median"] = 14.3  # faster by 0.7 %, within a fact's spread
    (tmp_path / "planted.json").write_text(json.dumps(seal(result)))  # resealed
    with pytest.raises(ValueError, match=r"forward_ms.median = 14.3, not the median"):
        measured.load("planted")
