"""`make serve`: a prose edit renders its page, a code edit the pages that run it.

`mkdocs serve --dirty` renders again only the pages whose source is newer than their
output; docs/_glue/serve.py also renders the pages whose page module runs an edited
module of mha, and every page after any other code edit; an edit saved during a build
is rendered by the next. (`make bench` times the real thing.)
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from mkdocs.livereload import LiveReloadServer

from tests.docs.glue import glue

ROOT = Path(__file__).resolve().parents[2]


def _page(src_uri: str, source: Path, output: Path) -> SimpleNamespace:
    return SimpleNamespace(
        src_uri=src_uri, abs_src_path=str(source), abs_dest_path=str(output)
    )


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """A built site of two real pages (ffn, cricket), and code last changed before
    it: the hook's code folders point at a copy, the page modules are the real ones."""
    hook = glue("serve")
    hook._SERVE.update(started=None, previous=None)
    code, config = tmp_path / "src" / "mha", tmp_path / "mkdocs.yml"
    (code / "pages").mkdir(parents=True)
    for name in ("ffn.py", "cricket.py", "__init__.py"):
        (code / "pages" / name).write_text("x = 1\n")
    (code / "figures").mkdir()
    (code / "figures" / "ffn.py").write_text("x = 1\n")
    (tmp_path / "glue").mkdir()
    (tmp_path / "glue" / "hooks.py").write_text("x = 1\n")
    config.write_text("site_name: x\n")
    site_dir = tmp_path / "site"
    pages = []
    for name in ("ffn", "cricket"):
        (site_dir / name).mkdir(parents=True)
        (site_dir / name / "index.html").write_text("built")
        source = tmp_path / f"{name}.md"
        source.write_text("prose")
        pages.append(_page(f"{name}.md", source, site_dir / name / "index.html"))
    (site_dir / "sitemap.xml").write_text("built")
    past = (site_dir / "sitemap.xml").stat().st_mtime - 10
    for path in [
        *code.rglob("*.py"),
        tmp_path / "glue" / "hooks.py",
        config,
        *tmp_path.glob("*.md"),
    ]:
        os.utime(path, (past, past))
    monkeypatch.setattr(hook, "ROOT", tmp_path)
    monkeypatch.setattr(hook, "CODE", [tmp_path / "src", tmp_path / "glue"])
    monkeypatch.setattr(hook, "CONFIG", config)
    files = SimpleNamespace(documentation_pages=lambda: pages)
    return {
        "hook": hook,
        "code": code,
        "site_dir": site_dir,
        "files": files,
        "pages": pages,
        "past": past,
    }


def _add_page(site: dict, name: str, text: str) -> None:
    """Another built page of ``site``, its source ``text`` older than its output."""
    source = site["code"].parent.parent / f"{name}.md"
    source.write_text(text)
    os.utime(source, (site["past"], site["past"]))
    (site["site_dir"] / name).mkdir()
    output = site["site_dir"] / name / "index.html"
    output.write_text("built")
    site["pages"].append(_page(f"reference/{name}.md", source, output))


def _build(site: dict) -> list[str]:
    """Run the hook as a dirty build would; the pages it will render again."""
    config = {"site_dir": str(site["site_dir"])}
    site["hook"].on_pre_build(config)
    site["hook"].on_files(site["files"], config)
    return sorted(
        p.name
        for p in site["site_dir"].iterdir()
        if p.is_dir() and not (p / "index.html").exists()
    )


def test_a_prose_edit_keeps_the_other_pages(site: dict):
    assert _build(site) == []


def test_a_page_module_edit_renders_the_pages_that_run_it(site: dict):
    (site["code"] / "pages" / "ffn.py").write_text("x = 2  # edited\n")
    assert _build(site) == ["ffn"]  # the cricket page does not import mha.pages.ffn


def test_a_figure_module_edit_renders_the_page_whose_figures_it_draws(site: dict):
    (site["code"] / "figures" / "ffn.py").write_text("x = 2  # edited\n")
    assert _build(site) == ["ffn"]


def test_each_page_names_figures_of_its_own_figure_module():
    """What the rule above relies on: the figure specs of ``mha.pages.<page>`` name
    ``<page>.<function>``, drawn by ``mha.figures.<page>`` (``figure_module``)."""
    pages = ROOT / "src" / "mha" / "pages"
    named = []
    for path in pages.rglob("*.py"):
        page = path.relative_to(pages).parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Figure":
                assert isinstance(node.args[0], ast.Constant), f"{path}: {node.lineno}"
                named.append((page, node.args[0].value.partition(".")[0]))
    assert len(named) > 30 and all(page == drawn for page, drawn in named), named


def test_a_page_whose_shown_code_imports_the_edited_module_is_rendered(site: dict):
    cricket = Path(site["pages"][1].abs_src_path)
    cricket.write_text('```python exec="on"\nfrom mha.pages.ffn import page\n```\n')
    os.utime(cricket, (site["past"], site["past"]))
    (site["code"] / "pages" / "ffn.py").write_text("x = 2  # edited\n")
    assert _build(site) == ["cricket", "ffn"]


@pytest.mark.parametrize("edited", ["figures/ffn.py", "pages/ffn.py"])
def test_a_module_the_api_reference_documents_renders_the_whole_reference(
    site: dict, edited: str
):
    """mkdocs-autorefs resolves a cross-reference only to a page of the same build:
    the reference renders as a whole (a page documenting mha.heads, which the edit
    does not touch, and the overview linking to it included), or a page rendered
    alone shows its links to the others as literal brackets."""
    _add_page(site, "documents-ffn", "::: mha.pages.ffn\n")
    _add_page(site, "documents-figures", "::: mha.figures\n")
    _add_page(site, "documents-heads", "::: mha.heads\n")
    _add_page(site, "overview", "[`split_heads`][mha.heads.split_heads]\n")
    (site["code"] / edited).write_text("x = 2  # edited\n")
    assert _build(site) == [
        "documents-ffn",
        "documents-figures",
        "documents-heads",
        "ffn",
        "overview",
    ]


def test_a_prose_edit_of_a_reference_page_renders_the_whole_reference(site: dict):
    _add_page(site, "documents-heads", "::: mha.heads\n")
    _add_page(site, "overview", "[mha.heads.split_heads][] splits\n")
    _build(site)  # the previous build
    Path(site["pages"][-1].abs_src_path).write_text("[mha.heads][] splits\n")
    assert _build(site) == ["documents-heads", "overview"]


def test_a_core_edit_renders_every_page(site: dict):
    (site["code"] / "__init__.py").write_text("x = 2  # edited\n")
    assert _build(site) == ["cricket", "ffn"]


def test_another_code_edit_clears_the_output_so_every_page_is_rebuilt(site: dict):
    (site["code"].parent.parent / "glue" / "hooks.py").write_text("x = 2  # edited\n")
    _build(site)
    assert not any(site["site_dir"].iterdir())


def test_compiled_files_are_not_code_edits(site: dict):
    (site["code"] / "pages" / "__pycache__").mkdir()
    (site["code"] / "pages" / "__pycache__" / "ffn.cpython-311.pyc").write_bytes(b"")
    assert _build(site) == []


def test_make_serve_is_dirty_and_bench_times_make_serve():
    recipe = re.search(
        r"^serve:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M
    )
    serve = re.search(r"^\t(.*mkdocs serve.*)$", recipe[1], re.M)
    assert serve and "mkdocs serve --dirty" in serve[1]
    # the bench times what `make serve` runs (mkdocs itself: make would reinstall)
    from tests.bench.site import SERVE

    assert SERVE[1:3] == ["-m", "mkdocs"] and " ".join(SERVE[3:]) in serve[1]
    assert "docs/_glue/serve.py" in (ROOT / "mkdocs.yml").read_text()


def test_an_edit_saved_during_a_build_is_rendered_by_the_next(tmp_path: Path):
    """The page was edited after the previous build started but before that build
    wrote it: its output is newer than its source, which a dirty build alone would
    skip. The next build deletes that output, so the page is rendered again."""
    hook = glue("serve")
    source, output = tmp_path / "page.md", tmp_path / "site" / "page" / "index.html"
    other, other_output = tmp_path / "other.md", tmp_path / "site" / "other.html"
    output.parent.mkdir(parents=True)
    other.write_text("untouched")
    long_ago = time.time() - 100
    os.utime(other, (long_ago, long_ago))
    config = {"site_dir": str(tmp_path / "site")}
    hook.on_pre_build(config)  # the build during which the edit is saved
    source.write_text("edited during the build")
    output.write_text("rendered from the old text")  # written after the edit
    other_output.write_text("built")
    hook.on_pre_build(config)  # the next build, triggered by the edit
    page = SimpleNamespace(abs_src_path=str(source), abs_dest_path=str(output))
    kept = SimpleNamespace(abs_src_path=str(other), abs_dest_path=str(other_output))
    files = SimpleNamespace(documentation_pages=lambda: [page, kept])
    hook.on_files(files, config)
    assert not output.exists() and other_output.exists()


def test_while_serving_a_macro_error_is_shown_in_the_page_not_a_hung_server():
    hook = glue("serve")
    macros = SimpleNamespace(config={"on_error_fail": True})
    config = SimpleNamespace(plugins={"macros": macros})
    hook.on_startup(command="build", dirty=False)
    hook.on_config(config)
    assert macros.config["on_error_fail"]  # `make build` stays strict
    hook.on_startup(command="serve", dirty=True)
    hook.on_config(config)
    assert not macros.config["on_error_fail"]


def test_while_serving_no_compiled_file_is_written_to_start_another_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """After a code edit the build imports the edited module again, and a notebook's
    kernel may too: a compiled file written beside it, in a folder the server
    watches, would start one more build."""
    hook = glue("serve")
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "")
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE")
    monkeypatch.syspath_prepend(tmp_path)
    monkeypatch.delitem(sys.modules, "edited_module", raising=False)
    (tmp_path / "edited_module.py").write_text("x = 1\n")
    config = _config(tmp_path)
    server = _server(config)
    assert hook.on_serve(server, config=config, builder=None) is server
    importlib.import_module("edited_module")  # the next build
    monkeypatch.delitem(sys.modules, "edited_module")
    subprocess.run(  # a kernel the build starts
        [sys.executable, "-c", "import edited_module"], cwd=tmp_path, check=True
    )
    assert not (tmp_path / "__pycache__").exists()


def _server(config: SimpleNamespace) -> LiveReloadServer:
    """The server `mkdocs serve` makes, watching what it watches before the hook
    (not started)."""
    server = LiveReloadServer(
        builder=lambda: None, host="127.0.0.1", port=0, root=config.docs_dir
    )
    server.watch(config.docs_dir)
    server.watch(config.config_file_path)
    return server


def _config(folder: Path) -> SimpleNamespace:
    """docs/ and mkdocs.yml in ``folder``; the theme's folder, not watched."""
    (folder / "docs").mkdir()
    (folder / "docs" / "page.md").write_text("prose")
    (folder / "mkdocs.yml").write_text("site_name: x\n")
    theme = SimpleNamespace(dirs=[str(folder / "theme")])
    return SimpleNamespace(
        docs_dir=str(folder / "docs"),
        config_file_path=str(folder / "mkdocs.yml"),
        theme=theme,
    )


@pytest.mark.parametrize("edited", ["docs/page.md", "mkdocs.yml"])
def test_while_serving_an_edit_is_looked_for_five_times_a_second(
    tmp_path: Path, edited: str
):
    """mkdocs polls every half second; the hook moves what it watches to an observer
    that polls every POLL_SECONDS, which the server starts, and an edit is seen."""
    hook = glue("serve")
    config = _config(tmp_path)
    server = _server(config)
    assert server.observer.timeout == 0.5  # if mkdocs changes this, look again
    hook.on_serve(server, config=config, builder=None)
    assert server.observer.timeout == hook.POLL_SECONDS < 0.5
    server.observer.start()
    try:
        time.sleep(2 * hook.POLL_SECONDS)  # its first look
        (tmp_path / edited).write_text("edited")
        deadline = time.monotonic() + 10
        while not server._want_rebuild and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        server.observer.stop()
        server.observer.join()
    assert server._want_rebuild, f"the edit of {edited} was not seen"


def test_make_serve_with_its_port_taken_fails_at_once_in_one_line(tmp_path: Path):
    """The address is checked before anything is installed or built (the venv is not
    even created): one line, naming a free address to serve on."""
    venv = tmp_path / "venv"
    # as typed at a prompt, not from inside another make (`make test`)
    typed = {
        k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))
    }
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        run = subprocess.run(
            ["make", "serve", f"ADDR=127.0.0.1:{port}", f"VENV={venv}"],
            cwd=ROOT,
            env=typed,
            capture_output=True,
            text=True,
            timeout=60,
        )
        seconds = time.monotonic() - started
    lines = (run.stdout + run.stderr).splitlines()
    assert run.returncode != 0 and len(lines) == 1, lines
    assert f"127.0.0.1:{port} is in use: run make serve ADDR=127.0.0.1:" in lines[0]
    assert seconds < 5 and not venv.exists()


def test_the_readme_says_how_to_serve_on_another_address():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make serve ADDR=127.0.0.1:8001" in readme
