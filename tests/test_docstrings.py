"""Every public function and class of src/mha has a docstring with a runnable example.

pytest-markdown-docs runs those examples (see pyproject.toml); this test makes sure
there is one to run, and runs the ones the plugin cannot see: it collects functions
and classes only, so a function wrapped by ``functools.cache`` (each page's
``page()``, the models' ``load()``) would keep an example nobody runs.
"""

import importlib
import inspect
import pkgutil
import re

import pytest

import mha


def public_objects():
    for info in pkgutil.walk_packages(mha.__path__, "mha."):
        module = importlib.import_module(info.name)
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
