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

import tempfile
from pathlib import Path

import jupytext
import nbformat
from jupyter_client import KernelManager
from nbclient import NotebookClient

from mha.support import cache
from mha_site.pages import imported


def mha_imports(notebook: nbformat.NotebookNode) -> list[str]:
    """The ``mha`` names a notebook's code cells import, as ``mha_site.pages.imported``
    finds them in a page's code blocks (``code_digest`` counts only the modules)."""
    cells = notebook.cells
    return imported("\n".join(c.source for c in cells if c.cell_type == "code"))


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
    # The kernel talks to this process over local sockets in a folder of its own, not
    # over TCP (which it warns is unencrypted).
    with tempfile.TemporaryDirectory() as folder:
        kernel = KernelManager(transport="ipc", ip=str(Path(folder) / "kernel"))
        try:
            NotebookClient(notebook, km=kernel, record_timing=False).execute()
        finally:  # a kernel handed in is not the client's to stop
            if kernel.has_kernel:
                kernel.shutdown_kernel(now=True)
    return nbformat.writes(notebook)
