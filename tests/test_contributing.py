"""CONTRIBUTING.md holds: its map of where a page's code lives matches the tree, and
every snippet builds or runs (the page recipe, as a tiny site; its test; the allowlist
example; the commands' paths), with the errors a contributor can cause named in one
line."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

TEXT = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
PAGES = sorted(p.name for p in (ROOT / "docs").glob("*.md"))


@pytest.mark.parametrize("page", PAGES)
def test_a_pages_module_and_test_are_where_its_name_says(page: str):
    """``docs/<page>.md``: ``mha.pages.<page>`` (a module, or a package with studies
    of its own) and ``tests/pages/test_<page>.py``, as CONTRIBUTING says."""
    name = page[:-3].replace("-", "_")
    pages = ROOT / "src" / "mha" / "pages"
    assert (pages / f"{name}.py").is_file() != (pages / name / "__init__.py").is_file()
    assert (ROOT / "tests" / "pages" / f"test_{name}.py").is_file()


def test_no_test_of_a_page_lives_outside_its_file():
    """tests/figures/ is folded into tests/pages/: one test file per page."""
    assert not (ROOT / "tests" / "figures").exists()


# Every fenced snippet of CONTRIBUTING.md: its fence, language and body.
SNIPPET = re.compile(
    r"^(?P<fence>`{3,})(?P<lang>\w+)[^\n]*\n(?P<body>.*?)^(?P=fence)$", re.M | re.S
)
SNIPPETS = [(m["lang"], m["body"]) for m in SNIPPET.finditer(TEXT)]
# A recipe snippet's first line names its file: `# path` or `{# path #}`.
HEADER = re.compile(r"^(?:# |\{# )(?P<path>[\w/.-]+\.(?:py|md))(?: #\})?\n")
RECIPE = {
    m["path"]: body[m.end() :]
    for lang, body in SNIPPETS
    if lang in ("python", "jinja") and (m := HEADER.match(body))
}
# the recipe's nav line, as the one entry of a nav
NAV = yaml.safe_load(
    next(
        body.split("\n", 1)[1]
        for lang, body in SNIPPETS
        if lang == "yaml" and body.startswith("# mkdocs.yml")
    )
)
PAGE_MODULE = "src/mha/pages/temperature.py"
FALSE_FACT = ("softmax(_SCORES / 2)", "softmax(_SCORES * 2)")  # warmer is sharper
NO_CAPTION = (
    'caption="Look at the first bar: it shrinks when the temperature doubles.",',
    "",
)


def test_every_snippet_is_a_recipe_file_an_allowlist_entry_or_a_command():
    """So that the tests below build or run each one."""
    kinds = [
        "recipe" if lang in ("python", "jinja") and HEADER.match(body) else lang
        for lang, body in SNIPPETS
    ]
    assert set(kinds) <= {"recipe", "toml", "bash", "yaml"}, kinds
    assert sorted(RECIPE) == [
        "docs/temperature.md",
        "src/mha/figures/temperature.py",
        "src/mha/pages/temperature.py",
        "tests/pages/test_temperature.py",
    ]


def test_a_page_is_four_files_and_one_nav_line(tmp_path: Path):
    """The recipe's four files and its nav line are all a page needs: the home page
    lists it, with its description, from the nav alone (mha.pages.index)."""
    from mha.pages import index

    assert len(RECIPE) + len(NAV) <= 5 and len(NAV) == 1
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "temperature.md").write_text(RECIPE["docs/temperature.md"])
    (section,) = index._contents(NAV, docs)
    (entry,) = section.entries
    assert (entry.title, entry.path) == ("Softmax temperature", "temperature.md")
    assert entry.description.startswith("what dividing the scores")


def test_the_allowlist_example_is_an_entry_of_the_allowlist():
    allowlist = tomllib.loads(
        (ROOT / "src" / "mha_site" / "drift_allowlist.toml").read_text()
    )["allow"]
    for lang, body in SNIPPETS:
        if lang == "toml":
            assert all(entry in allowlist for entry in tomllib.loads(body)["allow"])


def test_the_commands_name_files_that_exist():
    for lang, body in SNIPPETS:
        if lang == "bash":
            for command in body.splitlines():
                words = command.split("#")[0].split()[1:]
                for path in (w for w in words if "/" in w):
                    assert (ROOT / path).exists(), command


# What the tiny site reads from the project. It is copied, never linked: the recipe's
# files and the error tests' edits are written into the copy, so a contributor's own
# page of the example's name (untracked, and sacred) is never written through a link.
COPIED = ("src/mha", "src/mha_site", "docs/_glue/macros.py", "docs/_glue/errors.py")


def _copy(root: Path, tree: Path, parts: Iterable[str]) -> None:
    """Copy the files and folders ``parts`` (paths under ``root``) into ``tree``."""
    for part in parts:
        source, target = root / part, tree / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy2(source, target)


def recipe_tree(root: Path, tree: Path) -> Path:
    """A tiny project in ``tree``: a copy of the code and glue of the project at
    ``root`` (its compiled files too, still valid, so that nothing compiles again),
    the recipe's files written into the copy, and a mkdocs.yml building its page."""
    _copy(root, tree, COPIED)
    for path, text in RECIPE.items():
        if path.startswith(("src/", "docs/")):
            target = tree / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)  # a copy of the contributor's own page
            target.write_text(text)
    macros = yaml.safe_load((root / "mkdocs.yml").read_text().replace("!ENV", ""))
    settings = next(p["macros"] for p in macros["plugins"] if "macros" in str(p))
    config = {
        "site_name": "recipe",
        "strict": True,
        "exclude_docs": "_glue/\n",
        "nav": NAV,  # the recipe's line
        "hooks": ["docs/_glue/errors.py"],
        "plugins": [
            {"macros": {**settings, "module_name": "docs/_glue/macros"}},
            "markdown-exec",
        ],
        "markdown_extensions": ["pymdownx.superfences"],
    }
    (tree / "mkdocs.yml").write_text(yaml.safe_dump(config))
    return tree


@contextlib.contextmanager
def edited(tree: Path, edit: tuple[str, str]) -> Iterator[None]:
    """The tiny project's page module with ``edit`` (old text, new text) made, for
    the ``with`` block; its text restored after."""
    module = tree / PAGE_MODULE
    original = module.read_text()
    assert edit[0] in original
    module.write_text(original.replace(edit[0], edit[1]))
    try:
        yield
    finally:
        module.write_text(original)


@pytest.fixture(scope="module")
def recipe_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny project: a copy of this one's code and glue plus the recipe's files."""
    return recipe_tree(ROOT, tmp_path_factory.mktemp("recipe"))


def _build(tree: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(tree / "mkdocs.yml")],
        capture_output=True,
        text=True,
        cwd=tree,
        env=env,
    )


def test_the_recipe_builds_a_page_with_its_fact_figure_and_block(recipe_site: Path):
    result = _build(recipe_site)
    assert result.returncode == 0, result.stderr[-3000:]
    html = (recipe_site / "site" / "temperature" / "index.html").read_text()
    assert "a higher temperature flattens the distribution" in html
    assert "<figcaption><strong>Figure 1.</strong> Look at the first bar" in html
    assert 'aria-label="Two groups of three bars' in html
    assert "[0.506 0.307 0.186]" in html  # the block ran, its output shown


def test_the_recipes_page_test_passes_and_can_fail(recipe_site: Path):
    """The recipe's test, run against the recipe's module."""
    names = ["mha.figures.temperature", "mha.pages.temperature"]
    for name in names:
        path = recipe_site / "src" / Path(*name.split(".")).with_suffix(".py")
        spec = importlib.util.spec_from_file_location(name, path)
        sys.modules[name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    try:
        scope: dict = {}
        exec(RECIPE["tests/pages/test_temperature.py"], scope)
        tests = [f for name, f in scope.items() if name.startswith("test_")]
        assert len(tests) == 2
        for test in tests:
            test()
    finally:
        for name in names:
            sys.modules.pop(name, None)


@pytest.mark.parametrize(
    "edit, first_line",
    [
        (
            FALSE_FACT,
            "docs/temperature.md:7: 'a higher temperature flattens the distribution' "
            "no longer holds (0.665 vs 0.867)",
        ),
        (
            NO_CAPTION,
            f"{PAGE_MODULE}:34: Figure.__init__() missing 1 required positional "
            "argument: 'caption' (building mha.pages.temperature.page() for "
            "docs/temperature.md)",
        ),
    ],
    ids=["false fact", "missing caption"],
)
def test_a_contributors_error_is_named_in_one_line_before_any_traceback(
    recipe_site: Path, edit: tuple[str, str], first_line: str
):
    with edited(recipe_site, edit):
        result = _build(recipe_site)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if not line.startswith("INFO")]
    assert lines[0] == f"ERROR   -  {first_line}", result.stderr[-3000:]


# A contributor's own page, not committed yet, named as the recipe's example: its
# Markdown, page module and figure module.
PLANTED = {
    path: f"# {path}: a contributor's page, not committed yet\n"
    for path in RECIPE
    if not path.startswith("tests/")
}


def test_a_contributors_page_named_as_the_example_keeps_its_bytes(tmp_path: Path):
    """A project (a copy, standing in for a contributor's clone) holds its own page
    named as the example, untracked; the recipe's tiny site is made from it and each
    error test's edit is made and undone: the contributor's files keep their bytes."""
    clone = tmp_path / "clone"
    _copy(ROOT, clone, (*COPIED, "mkdocs.yml"))
    for path, text in PLANTED.items():
        (clone / path).parent.mkdir(parents=True, exist_ok=True)
        (clone / path).write_text(text)
    tree = recipe_tree(clone, tmp_path / "recipe")
    for edit in (FALSE_FACT, NO_CAPTION):
        with edited(tree, edit):
            assert (tree / PAGE_MODULE).read_text() != RECIPE[PAGE_MODULE]
    assert {path: (clone / path).read_text() for path in PLANTED} == PLANTED


def test_running_these_tests_leaves_git_status_and_a_contributors_page_alone(
    tmp_path: Path,
):
    """These tests, run by pytest in a copy of the project (its tracked files, as
    a commit of their own) that holds a contributor's page named as the example
    (its page module staged, the rest untracked): `git status`, untracked files
    included, and the page's bytes are the same after as before."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    files = [p for p in tracked.split("\0") if (ROOT / p).is_file()]
    # and the modules compiled beside them (ignored by git), as a contributor's clone
    # holds them after a test run: the run in the copy compiles nothing again
    compiled = {str(Path(p).parent / "__pycache__") for p in files}
    clone = tmp_path / "clone"
    _copy(ROOT, clone, [*files, *(p for p in compiled if (ROOT / p).is_dir())])
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(clone)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "the project"], check=True)
    for path, text in PLANTED.items():
        (clone / path).write_text(text)
    subprocess.run([*git, "add", PAGE_MODULE], check=True)  # staged, not committed

    def status() -> str:
        return subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=all"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    before = status()
    path = Path(__file__).relative_to(ROOT)
    this = f"{path}::{sys._getframe().f_code.co_name}"  # not again, in the copy
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # one process, no cache folder written; without hypothesis's plugin, which these
    # tests do not use (its import took 0.7 s of the run's 4)
    pytest_ = [sys.executable, "-m", "pytest", "-q", "-n0", "-p", "no:cacheprovider"]
    pytest_ += ["-p", "no:hypothesispytest"]
    run = subprocess.run(
        [*pytest_, str(path), "--deselect", this],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
    )
    # the contributor's page has no test file yet: only the layout check says so
    failed = re.findall(r"^FAILED \S+::(test_\w+)", run.stdout, re.M)
    assert run.returncode in (0, 1) and " passed" in run.stdout, run.stdout[-3000:]
    layout = test_a_pages_module_and_test_are_where_its_name_says.__name__
    assert set(failed) <= {layout}, run.stdout[-3000:]
    assert status() == before
    assert {path: (clone / path).read_text() for path in PLANTED} == PLANTED


def test_the_pull_request_template_names_captions_and_facts_and_real_files():
    template = (ROOT / ".github" / "pull_request_template.md").read_text()
    checklist = template[template.index("## Checklist") :]
    assert "caption" in checklist and "alt text" in checklist
    assert '{% call fact("name") %}' in checklist and "making it false" in checklist
    for path in re.findall(r"`((?:src|docs|tests|\.ci)/[\w./-]+\.\w+)`", template):
        assert (ROOT / path).is_file(), path
    assert {'`{{ figure("name") }}`', "`{{ page.x | dec }}`"} <= set(
        re.findall(r"`[^`]+`", checklist)
    )
