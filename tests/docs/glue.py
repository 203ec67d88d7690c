"""The build's glue (docs/_glue/*.py), loaded by its file, as mkdocs loads a hook."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

GLUE = Path(__file__).resolve().parents[2] / "docs" / "_glue"


def glue(name: str) -> ModuleType:
    """``docs/_glue/<name>.py``, run as a new module (``glue_<name>``) at each call.

    ```python
    from tests.docs.glue import glue

    assert glue("templates").CACHE.name == "jinja"
    ```
    """
    path = GLUE / f"{name}.py"
    if not path.is_file():
        raise ValueError(f"name: no {path}")
    spec = importlib.util.spec_from_file_location(f"glue_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
