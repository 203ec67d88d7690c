"""Every public function and class of the library has a docstring with a runnable
example; a page module or a figure has none (its page's test file tests it).

The library is ``mha`` without the site's own code: the page modules
(``mha.pages``) and the figures (``mha.figures``). pytest-markdown-docs runs the
examples (see pyproject.toml); this test makes sure there is one to run, and runs the
ones the plugin cannot see: it collects functions and classes only, so a function
wrapped by ``functools.cache`` (the models' ``load()``) would keep an example nobody
runs.
"""

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import mha

SITE = ("mha.pages", "mha.figures")  # the site's own code, tested by each page's test
PACKAGE = Path(mha.__file__).parent
PAGES = PACKAGE / "pages"
EXAMPLE = re.compile(r"^\s*```\s*\{?\.?python", re.M)


def library_modules():
    for info in pkgutil.walk_packages(mha.__path__, "mha."):
        if not info.name.startswith(SITE):
            yield importlib.import_module(info.name)


def public_objects():
    for module in library_modules():
        for name, obj in vars(module).items():
            if (
                name.startswith("_")
                or getattr(obj, "__module__", None) != module.__name__
            ):
                continue
            if inspect.isfunction(inspect.unwrap(obj)) or inspect.isclass(obj):
                yield f"{module.__name__}.{name}", obj


@pytest.mark.parametrize(
    "name, obj", list(public_objects()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_has_a_runnable_example(name, obj):
    doc = inspect.getdoc(obj) or ""
    if inspect.isclass(obj) and not doc:
        pytest.fail(f"{name} has no docstring")
    if inspect.isclass(obj) and _is_plain_record(obj):
        return  # a dataclass holding results is documented by the function returning it
    assert "```python" in doc, f"{name}: docstring has no ```python example"


def _is_plain_record(cls) -> bool:
    return hasattr(cls, "__dataclass_fields__")


def cached_functions():
    return [(name, obj) for name, obj in public_objects() if hasattr(obj, "cache_info")]


@pytest.mark.parametrize(
    "name, obj", cached_functions(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_the_example_of_a_cached_function_runs(name, obj):
    examples = re.findall(r"```python\n(.*?)```", inspect.getdoc(obj) or "", re.S)
    assert examples, f"{name}: docstring has no ```python example"
    for example in examples:
        exec(compile(example, f"<example of {name}>", "exec"), {})


def docstring_examples(path: Path) -> list[str]:
    """Where the module at ``path`` has a docstring with a fenced Python example."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(
            node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        ):
            doc = ast.get_docstring(node, clean=False) or ""
            if EXAMPLE.search(doc):
                found.append(f"{path}:{getattr(node, 'lineno', 1)}")
    return found


def test_docstring_examples_are_found(tmp_path: Path):
    module = tmp_path / "m.py"
    module.write_text(
        'def f():\n    """Text.\n\n    ```python\n    f()\n    ```\n    """\n'
    )
    assert docstring_examples(module) == [f"{module}:1"]
    module.write_text('def f():\n    """Text only."""\n')
    assert docstring_examples(module) == []


def test_the_site_code_carries_no_docstring_example():
    """A page module or a figure is tested by tests/pages/test_<page>.py, not by
    docstring examples."""
    site = [*PAGES.rglob("*.py"), *(PACKAGE / "figures").rglob("*.py")]
    found = [example for path in sorted(site) for example in docstring_examples(path)]
    assert not found, f"move these examples into the page's test file: {found}"
