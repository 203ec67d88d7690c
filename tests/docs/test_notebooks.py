"""Notebook pages: sources that run, executed at build, reproducible, downloadable.

The notebooks are jupytext percent-format sources in docs/notebooks/ (pytest does not
collect them: see ``--ignore`` in pyproject.toml). Each one is run here as a script,
so a broken notebook fails `make test` as well as the build.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mha_site import notebooks
from mha_site.notebooks import source_notebook
from tests.conftest import ROOT
from tests.docs.glue import glue
from tests.docs.test_build import CONFIG

NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.py"))
RANDOM_ID = re.compile(r'id="cell-id=[0-9a-f]{8}')


def test_there_are_notebooks_and_each_is_in_the_nav():
    assert len(NOTEBOOKS) >= 2
    nav = json.dumps(CONFIG["nav"])
    for path in NOTEBOOKS:
        assert f"notebooks/{path.name}" in nav


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_notebook_source_runs(path: Path, capsys):
    runpy.run_path(str(path), run_name="__main__")
    assert capsys.readouterr().out  # it printed what it computed


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_download_is_an_ipynb_with_numbered_cells(path: Path):
    text = glue("hooks")._ipynb(source_notebook(path))
    again = glue("hooks")._ipynb(source_notebook(path))  # as a second build does
    assert text == again  # the same bytes every build
    notebook = json.loads(text)
    assert notebook["nbformat"] == 4
    assert [c["id"] for c in notebook["cells"]] == [
        f"cell-{i}" for i in range(len(notebook["cells"]))
    ]
    sources = "".join("".join(c["source"]) for c in notebook["cells"])
    assert "import" in sources and "# %%" not in sources


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_built_page_is_executed_renumbered_and_linked(built_site: Path, path: Path):
    page_dir = built_site / "notebooks" / path.stem
    html = (page_dir / "index.html").read_text()
    assert not RANDOM_ID.search(html), "random nbconvert cell ids left in the page"
    ids = re.findall(r'id="cell-id=(\d+)"', html)
    assert ids == [str(i) for i in range(len(ids))] and ids
    assert f'href="{path.stem}.ipynb"' in html
    download = json.loads((page_dir / f"{path.stem}.ipynb").read_text())
    assert download["cells"]
    assert "jp-OutputArea-output" in html  # the cells ran at build


def test_the_few_lines_notebook_matches_the_core(built_site: Path):
    html = (built_site / "notebooks" / "mha_in_a_few_lines" / "index.html").read_text()
    assert "largest difference in the output" in html


def test_a_failing_cell_fails_the_build(tmp_path: Path):
    """The build's own execution (docs/_glue/hooks.py) stops at a failing cell."""
    jupyter = next(
        p["mkdocs-jupyter"]
        for p in CONFIG["plugins"]
        if isinstance(p, dict) and "mkdocs-jupyter" in p
    )
    assert jupyter["execute"] is False  # executed by the hook, rendered by the plugin
    docs = tmp_path / "docs"
    (docs / "notebooks").mkdir(parents=True)
    (docs / "tiny.md").write_text("# Tiny\n")
    (docs / "notebooks" / "broken.py").write_text(
        '# %%\nraise RuntimeError("this cell failed")\n'
    )
    config = {
        "site_name": "tiny",
        "docs_dir": str(docs),
        "site_dir": str(tmp_path / "site"),
        "strict": True,
        "nav": ["tiny.md", "notebooks/broken.py"],
        "hooks": [str(ROOT / "docs" / "_glue" / "hooks.py")],
        "plugins": [{"mkdocs-jupyter": jupyter}],
    }
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(tmp_path / "mkdocs.yml")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "MHA_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.returncode != 0
    assert "this cell failed" in result.stdout + result.stderr


def test_a_notebook_runs_again_only_when_the_code_it_imports_changes(
    tmp_path, monkeypatch
):
    """Cached by content hash: the cells and the code of the mha modules it imports."""
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    source = tmp_path / "nb.py"
    source.write_text(
        "# %%\nfrom mha.attention import softmax\nprint(softmax([0.0]))\n"
    )
    runs = []
    real = notebooks._execute
    monkeypatch.setattr(
        notebooks, "_execute", lambda *a: runs.append(1) or real(*a), raising=True
    )
    first = notebooks.executed(source)
    assert notebooks.executed(source) == first and len(runs) == 1  # not run again
    assert "[1.]" in first.cells[0].outputs[0]["text"]
    touched = notebooks.mha_imports(first)
    assert "mha.attention" in touched and "mha.layer" not in touched
    monkeypatch.setattr(notebooks.cache, "code_digest", lambda modules: "other code")
    notebooks.executed(source)
    assert len(runs) == 2  # the code it imports changed: executed again


def test_the_notebook_plugin_finds_the_notebooks_without_reading_a_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """mkdocs-jupyter reads a Markdown page with jupytext to ask whether it is a
    notebook, twice a build, unless mkdocs.yml ignores ``*.md`` (our notebooks are .py)."""
    import jupytext
    from mkdocs.config import load_config
    from mkdocs.structure.files import get_files

    read = []  # (a raising stand-in would not do: the plugin catches what it raises)
    monkeypatch.setattr(
        jupytext, "read", lambda path, *args, **kwargs: read.append(path)
    )
    config = load_config(str(ROOT / "mkdocs.yml"))
    plugin = config.plugins["mkdocs-jupyter"]
    found = [f.abs_src_path for f in get_files(config) if plugin.should_include(f)]
    assert sorted(map(Path, found)) == NOTEBOOKS
    assert not read, f"mkdocs-jupyter read {len(read)} pages, e.g. {read[0]}"
