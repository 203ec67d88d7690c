"""Which module computes a page (``docs/kv-cache.md`` is ``mha.pages.kv_cache``), and
which modules of ``mha`` a page runs or documents.

```python
from mha_site.pages import page_module

assert page_module("kv-cache.md") == "mha.pages.kv_cache"
assert page_module("reference/core.md") is None  # the API reference prints no page
assert page_module("notebooks/cricket_playground.py") is None
```
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

# `from mha.x import y` and `import mha.x` in a page's code blocks or a notebook's cells
_IMPORTS = re.compile(
    r"^\s*(?:from\s+(mha(?:\.\w+)*)\s+import\s+([\w ,()]+)|import\s+(mha(?:\.\w+)*))",
    re.M,
)
_DOCUMENTED = re.compile(r"^:::\s+(mha(?:\.\w+)*)", re.M)  # mkdocstrings


def is_notebook(src_uri: str) -> bool:
    """Whether ``docs/<src_uri>`` is a notebook page (a jupytext ``.py`` under
    ``notebooks/``, rendered by mkdocs-jupyter).

    ```python
    from mha_site.pages import is_notebook

    assert is_notebook("notebooks/mha_in_a_few_lines.py")
    assert not is_notebook("cost.md") and not is_notebook("notebooks/README.md")
    ```
    """
    return src_uri.startswith("notebooks/") and src_uri.endswith(".py")


def page_module(src_uri: str) -> str | None:
    """The module of ``docs/<src_uri>``'s page object, or None for a page without one."""
    if "/" in src_uri or not src_uri.endswith(".md"):
        return None  # the API reference and notebooks print no page object
    name = "mha.pages." + Path(src_uri).stem.replace("-", "_")
    return name if importlib.util.find_spec(name) is not None else None


def figure_module(module: str) -> str:
    """The module that draws the figures of page module ``module``: each page's
    figure specs name ``<page>.<function>``, drawn by ``mha.figures.<page>``.

    ```python
    from mha_site.pages import figure_module

    assert figure_module("mha.pages.kv_cache") == "mha.figures.kv_cache"
    ```
    """
    return "mha.figures." + module.removeprefix("mha.pages.")


def imported(text: str) -> list[str]:
    """The ``mha`` names a page's code blocks (or a notebook's cells) import: modules,
    and ``module.name`` for each name imported from one.

    ```python
    from mha_site.pages import imported

    code = "```python exec=\\"on\\"\\nfrom mha.worked import cricket\\nimport mha.heads\\n```"
    assert imported(code) == ["mha.heads", "mha.worked", "mha.worked.cricket"]
    ```
    """
    found = set()
    for origin, names, module in _IMPORTS.findall(text):
        found.add(origin or module)
        found |= {f"{origin}.{name}" for name in re.findall(r"\w+", names)}
    return sorted(found)


def documented(text: str) -> list[str]:
    """The modules an API reference page documents (``::: mha.x``), with their
    submodules where it shows them.

    ```python
    from mha_site.pages import documented

    assert documented("# Core\\n\\n::: mha.attention\\n\\n::: mha.heads\\n") == [
        "mha.attention",
        "mha.heads",
    ]
    ```
    """
    return _DOCUMENTED.findall(text)
