"""The home page opens with the whole layer, teaches, gives a reading order; the
notebooks a student downloads carry their outputs and install mha themselves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mha.pages import index
from tests.conftest import ROOT, site_links

NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.py"))


def _article(built_site: Path, page: str = "") -> str:
    html = (built_site / page / "index.html").read_text()
    return re.search(r"<article.*?</article>", html, re.S).group()


def test_home_opens_with_the_whole_layer_figure(built_site: Path) -> None:
    article = _article(built_site)
    after_h1 = article[article.index("</h1>") + len("</h1>") :].lstrip()
    assert after_h1.startswith('<figure class="mha" id="figure-1">')
    figure = after_h1[: after_h1.index("</figure>")]
    home = index.page()
    assert 'aria-label="The whole multi-head attention layer' in figure
    assert "(8, 512)" in figure and "(8, 8, 64)" in figure  # shapes on the arrows
    assert "<figcaption><strong>Figure 1.</strong>" in figure
    assert (home.d_model, home.h) == (512, 8)
    whole = home.figures["whole_layer"]
    assert whole.draw == "multi_head.whole_layer"
    assert whole.data[0].sizes == {"n": 8, "d_model": 512, "h": 8, "d_k": 64}


def test_home_teaches_then_orders_the_reading(built_site: Path) -> None:
    article = _article(built_site)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", article))
    assert "one distribution over the sentence" in text
    assert "for exactly the same number of parameters" in text
    order = [m for m in re.findall(r'href="([^"#]+)"', article) if "://" not in m]
    core = ["attention/", "multi-head/", "cricket/", "cost/"]
    positions = [next(i for i, h in enumerate(order) if h.endswith(c)) for c in core]
    assert positions == sorted(positions)  # the core path, in order
    # the promise and the module table come after the reading order
    assert text.index("Reading order") < text.index("The promise")
    assert text.index("Reading order") < text.index("The code")
    repo = site_links().repo_url
    first_paragraphs = article[: article.index("Reading order")]
    assert f'href="{repo}"' in first_paragraphs  # the repository, near the top


def test_home_facts_hold_and_a_stale_one_is_refused() -> None:
    home = index.page()
    assert all(f.holds for f in home.facts.values())
    assert home.params_one == home.params_many == 4 * 512 * 512
    assert not index._facts(home.params_one, home.params_one + 1, 8)[
        "same_params"
    ].holds


@pytest.mark.parametrize("source", NOTEBOOKS, ids=lambda p: p.name)
def test_the_notebook_download_runs_for_a_student(built_site: Path, source: Path):
    page = built_site / "notebooks" / source.stem
    notebook = json.loads((page / f"{source.stem}.ipynb").read_text())
    first, *cells = notebook["cells"]
    repo = site_links().repo_url.rstrip("/")
    install = "".join(first["source"])
    assert first["cell_type"] == "code"
    assert f'%pip install "git+{repo}"' in install and "import mha" in install
    code = [c for c in cells if c["cell_type"] == "code"]
    assert code and all(c["outputs"] for c in code)  # executed at build, outputs kept
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1))
    site = site_links().site_url
    for cell in cells:
        for link in re.findall(r"\]\(([^)\s]+)\)", "".join(cell["source"])):
            assert link.startswith(site), link  # absolute, under the site's address
    assert all("execution" not in c["metadata"] for c in notebook["cells"])


def test_a_notebook_tie_is_a_tie() -> None:
    """The cricket notebook says head A has two candidates: they tie (its assert)."""
    text = (ROOT / "docs" / "notebooks" / "cricket_playground.py").read_text()
    assert "head A now has two" in text and "assert np.isclose(kohli, century)" in text


def _docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "reference").mkdir(parents=True)
    (docs / "a.md").write_text("---\ndescription: the first idea.\n---\n# A\n")
    (docs / "b.md").write_text("# B, untitled in the nav\n")
    (docs / "reference" / "core.md").write_text("---\ndescription: x.\n---\n# Core\n")
    return docs


def test_the_reading_order_is_the_nav_flat_or_in_sections(tmp_path: Path) -> None:
    flat = [{"Home": "index.md"}, {"The A page": "a.md"}, "b.md"]
    docs = _docs(tmp_path)
    (only,) = index._contents(flat, docs)
    assert only.title is None
    assert [(e.title, e.path, e.description) for e in only.entries] == [
        ("The A page", "a.md", "the first idea."),
        ("B, untitled in the nav", "b.md", None),
    ]
    sectioned = [
        {"Home": "index.md"},
        {"The core path": [{"A": "a.md"}, {"Deeper": ["b.md"]}]},
        {"API reference": ["reference/core.md"]},
    ]
    core, reference = index._contents(sectioned, docs)
    assert core.title == "The core path"
    assert [e.path for e in core.entries] == ["a.md", "b.md"]  # nested: in place
    assert (reference.title, reference.entries[0].title) == ("API reference", "Core")


def test_every_page_of_the_nav_has_a_one_line_description() -> None:
    contents = index.page().contents
    missing = [
        entry.path
        for section in contents
        for entry in section.entries
        if entry.path.endswith(".md") and not entry.description
    ]
    assert not missing, f"add `description:` to the front matter of {missing}"
    paths = [entry.path for section in contents for entry in section.entries]
    assert paths[:3] == ["attention.md", "multi-head.md", "position.md"]
