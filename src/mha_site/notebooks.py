"""The site's notebooks, executed once per version of the code they import.

A notebook (a jupytext ``.py`` under ``docs/notebooks/``) is executed with
``nbclient`` and the result kept in the content-hash cache (``mha.support.cache``):
the key is the notebook's cells and the code of the ``mha`` modules it imports
(``mha_imports``), so an edit to ``src/`` that a notebook does not import executes
nothing, and going back to an earlier version of the code finds its result again.
The build hands the executed notebook to mkdocs-jupyter, which only renders it.

```python
import nbformat
from mha_site.notebooks import mha_imports

cell = nbformat.v4.new_code_cell("from mha.worked.cricket import solve\\nimport numpy")
found = mha_imports(nbformat.v4.new_notebook(cells=[cell]))
assert "mha.worked.cricket" in found and "numpy" not in found
```
"""

from __future__ import annotations

import ast
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

from mha.support import cache


def mha_imports(notebook: nbformat.NotebookNode) -> list[str]:
    """The ``mha`` names a notebook's code cells import (magics skipped): modules,
    and names imported from them (``code_digest`` counts only the modules)."""
    found: set[str] = set()
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        code = "\n".join(
            line for line in cell.source.splitlines() if line.lstrip()[:1] not in "%!"
        )
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return sorted(name for name in found if name.split(".")[0] == "mha")


def source_notebook(source: Path) -> nbformat.NotebookNode:
    """The notebook of a jupytext source, its cells numbered in order (ids are random
    otherwise, and two builds must be identical)."""
    notebook = jupytext.read(source)
    for number, cell in enumerate(notebook.cells):
        cell.id = f"cell-{number}"
    return notebook


def executed(source: Path) -> nbformat.NotebookNode:
    """The notebook of ``source`` with its outputs, executed only if its cells or the
    code it imports changed since it last ran."""
    notebook = source_notebook(source)
    text = nbformat.writes(notebook)
    code = cache.code_digest(mha_imports(notebook))
    return nbformat.reads(
        cache.cached_as(f"notebook {source.name}", _execute, text, code), 4
    )


def _execute(text: str, code: str) -> str:
    """Run a notebook given as JSON text; ``code`` (its imports' digest) is only part
    of the cache key."""
    notebook = nbformat.reads(text, 4)
    NotebookClient(notebook, record_timing=False).execute()
    return nbformat.writes(notebook)
