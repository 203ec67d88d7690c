"""`make serve`: a prose edit rebuilds its page only, a code edit rebuilds every page.

`mkdocs serve --dirty` renders again only the pages whose source is newer than their
output; docs/_glue/serve.py clears the output when the code changed since the last
build, so that every page is built again. (`make bench` times the real thing.)
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _serve_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "serve_hook", ROOT / "docs" / "_glue" / "serve.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """A built site, and code (a folder and a config file) last changed before it."""
    hook = _serve_hook()
    code, config = tmp_path / "src", tmp_path / "mkdocs.yml"
    (code / "pkg").mkdir(parents=True)
    (code / "pkg" / "module.py").write_text("x = 1\n")
    config.write_text("site_name: x\n")
    site_dir = tmp_path / "site"
    (site_dir / "page").mkdir(parents=True)
    for built in (site_dir / "sitemap.xml", site_dir / "page" / "index.html"):
        built.write_text("built")
    past = (site_dir / "sitemap.xml").stat().st_mtime - 10
    for path in (code / "pkg" / "module.py", config):
        os.utime(path, (past, past))
    monkeypatch.setattr(hook, "CODE", [code])
    monkeypatch.setattr(hook, "CONFIG", config)
    return {"hook": hook, "code": code, "site_dir": site_dir}


def test_a_prose_edit_keeps_the_other_pages(site: dict):
    site["hook"].on_pre_build({"site_dir": str(site["site_dir"])})
    assert (site["site_dir"] / "page" / "index.html").exists()


def test_a_code_edit_clears_the_output_so_every_page_is_rebuilt(site: dict):
    (site["code"] / "pkg" / "module.py").write_text("x = 2  # edited\n")
    site["hook"].on_pre_build({"site_dir": str(site["site_dir"])})
    assert not any(site["site_dir"].iterdir())


def test_compiled_files_are_not_code_edits(site: dict):
    (site["code"] / "pkg" / "__pycache__").mkdir()
    (site["code"] / "pkg" / "__pycache__" / "module.cpython-311.pyc").write_bytes(b"")
    site["hook"].on_pre_build({"site_dir": str(site["site_dir"])})
    assert (site["site_dir"] / "page" / "index.html").exists()


def test_make_serve_is_dirty_and_bench_times_make_serve():
    serve = re.search(r"^serve:.*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert serve and "mkdocs serve --dirty" in serve[1]
    assert '"make", "serve"' in (ROOT / "tests" / "bench" / "site.py").read_text()
    assert "docs/_glue/serve.py" in (ROOT / "mkdocs.yml").read_text()
