"""CONTRIBUTING.md holds: its map of where a page's code lives matches the tree, and
every snippet builds or runs (the page recipe, as a tiny site; its test; the allowlist
example; the commands' paths), with the errors a contributor can cause named in one
line."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

TEXT = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
ROW = re.compile(r"^\| `docs/(?P<page>[\w-]+\.md)` \| (?P<rest>.*) \|$", re.M)
MAP = {m["page"]: re.findall(r"`([^`]+)`", m["rest"]) for m in ROW.finditer(TEXT)}
PAGES = sorted(p.name for p in (ROOT / "docs").glob("*.md"))


def test_every_page_is_in_the_map():
    assert sorted(MAP) == PAGES


@pytest.mark.parametrize("page", PAGES)
def test_a_pages_module_figures_and_tests_exist_where_the_map_says(page: str):
    name = page[:-3].replace("-", "_")
    module = f"src/mha/pages/{name}.py"
    if (ROOT / "src" / "mha" / "pages" / name).is_dir():  # a page with code of its own
        module = f"src/mha/pages/{name}/__init__.py"
    paths = MAP[page]
    assert paths[0] == module, f"{page}: its module is {module}"
    for path in paths:
        assert (ROOT / path).is_file(), f"{page}: {path} does not exist"
    figures = ROOT / "src" / "mha" / "figures" / f"{name}.py"
    assert figures.is_file() == (f"src/mha/figures/{figures.name}" in paths), (
        f"{page}: the map and the tree disagree about {figures.name}"
    )


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
PAGE_MODULE = "src/mha/pages/temperature.py"
FALSE_FACT = ("softmax(SCORES / 2)", "softmax(SCORES * 2)")  # warmer is sharper
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
    assert set(kinds) <= {"recipe", "toml", "bash"}, kinds
    assert sorted(RECIPE) == [
        "docs/temperature.md",
        "src/mha/figures/temperature.py",
        "src/mha/pages/temperature.py",
        "tests/pages/test_temperature.py",
    ]


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


def _mirror(source: Path, target: Path, extra: dict[str, str]) -> None:
    """``target`` reads as ``source`` (symlinks) plus ``extra`` files (name: text)
    among them; the sub-folders named in ``extra`` are mirrored the same way."""
    target.mkdir(parents=True)
    nested = {name.split("/", 1)[0] for name in extra if "/" in name}
    for entry in source.iterdir():
        if entry.name in nested:
            inner = {
                k.split("/", 1)[1]: v
                for k, v in extra.items()
                if k.startswith(entry.name + "/")
            }
            _mirror(entry, target / entry.name, inner)
        elif entry.name != "__pycache__":
            (target / entry.name).symlink_to(entry)
    for name, text in extra.items():
        if "/" not in name:
            (target / name).write_text(text)


@pytest.fixture(scope="module")
def recipe_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny project: this one's code plus the recipe's files, and its glue."""
    tree = tmp_path_factory.mktemp("recipe")
    mha = {k.removeprefix("src/mha/"): v for k, v in RECIPE.items() if "src/mha/" in k}
    _mirror(ROOT / "src" / "mha", tree / "src" / "mha", mha)
    (tree / "src" / "mha_site").symlink_to(ROOT / "src" / "mha_site")
    (tree / "docs" / "_glue").mkdir(parents=True)
    for glue in ("macros.py", "errors.py"):  # copied: they find src/ beside them
        shutil.copy(ROOT / "docs" / "_glue" / glue, tree / "docs" / "_glue" / glue)
    (tree / "docs" / "temperature.md").write_text(RECIPE["docs/temperature.md"])
    macros = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!ENV", ""))
    settings = next(p["macros"] for p in macros["plugins"] if "macros" in str(p))
    config = {
        "site_name": "recipe",
        "strict": True,
        "exclude_docs": "_glue/\n",
        "hooks": ["docs/_glue/errors.py"],
        "plugins": [
            {"macros": {**settings, "module_name": "docs/_glue/macros"}},
            "markdown-exec",
        ],
        "markdown_extensions": ["pymdownx.superfences"],
    }
    (tree / "mkdocs.yml").write_text(yaml.safe_dump(config))
    return tree


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
            "docs/temperature.md:4: 'a higher temperature flattens the distribution' "
            "no longer holds (0.665 vs 0.867)",
        ),
        (
            NO_CAPTION,
            f"{PAGE_MODULE}:41: Figure.__init__() missing 1 required positional "
            "argument: 'caption' (building mha.pages.temperature.page() for "
            "docs/temperature.md)",
        ),
    ],
    ids=["false fact", "missing caption"],
)
def test_a_contributors_error_is_named_in_one_line_before_any_traceback(
    recipe_site: Path, edit: tuple[str, str], first_line: str
):
    module = recipe_site / PAGE_MODULE
    original = module.read_text()
    assert edit[0] in original
    module.write_text(original.replace(edit[0], edit[1]))
    try:
        result = _build(recipe_site)
    finally:
        module.write_text(original)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if not line.startswith("INFO")]
    assert lines[0] == f"ERROR   -  {first_line}", result.stderr[-3000:]


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
