"""The output of each executed Python block of a page, kept in the content-hash cache.

markdown-exec runs every ``exec="on"`` block of every page again at each build: 56
blocks, about 3.4 s of a 23 s warm build here. ``kept`` wraps its runner so that a
block's output is computed once per version of what it runs, and kept
(``mha.support.cache.cached``). The key holds the block's code, the code of the
``mha`` modules it imports and everything they import (``code_digest``, their data
folders included), the versions every key holds (Python, NumPy, Matplotlib), and the
folder it runs in. A block that raises is never kept: it fails every build. A block
in a ``session`` shares names with other blocks, so it always runs.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

import numpy as np
from markdown_exec._internal.formatters import python

from mha_site.pages import imported

Run = Callable[..., str]
_RUNS: dict[str, Run] = {}  # each wrapped runner by its name, the name in the key


def kept(run: Run) -> Run:
    """markdown-exec's ``run`` of a Python block, its output kept by content hash.

    ```python
    import os, tempfile
    from mha_site.block_cache import kept

    os.environ["MHA_CACHE_DIR"] = tempfile.mkdtemp()
    runs = []

    def run(code, returncode=None, session=None, id=None, **extra):
        runs.append(code)
        return "printed\\n"

    block = kept(run)
    assert block("print('printed')") == block("print('printed')") == "printed\\n"
    assert len(runs) == 1  # the second build read it
    del os.environ["MHA_CACHE_DIR"]
    ```
    """
    name = f"{run.__module__}.{run.__qualname__}"
    _RUNS[name] = run

    def run_block(
        code: str,
        returncode: int | None = None,
        session: str | None = None,
        id: str | None = None,
        **extra: Any,
    ) -> str:
        # NumPy's print options are the process's: a block that sets them (the
        # attention page's do) would set them for every page rendered after it, in
        # a build that ran it and not in one that read its output from the cache, and
        # a fact's values printed from an array would differ from build to build.
        with np.printoptions():  # restored when the block ends
            if session:
                return run(code, returncode, session=session, id=id, **extra)
            # imported at each call: `make serve` imports the core afresh every build
            cache = importlib.import_module("mha.support.cache")
            digest = cache.code_digest(imported(code))
            label = f"code block {id}" if id else f"code block: {_first_line(code)}"
            return cache.cached_as(
                label, _output, name, code, digest, os.getcwd(), id, extra
            )

    run_block.wraps = run
    return run_block


def _first_line(code: str, limit: int = 60) -> str:
    """The block's first line of code and its last, each cut to ``limit``
    characters: its name in the build's progress lines (blocks of a page often start
    with the same import)."""
    lines = [line.strip() for line in code.splitlines() if line.strip()] or [""]
    cut = [line if len(line) <= limit else line[: limit - 1] + "…" for line in lines]
    return cut[0] if len(cut) == 1 else f"{cut[0]} … {cut[-1]}"


def _output(
    run: str,
    code: str,
    digest: str,
    folder: str,
    id: str | None,
    extra: dict,
) -> str:
    """What the runner named ``run`` prints for ``code``; ``digest`` and ``folder``
    (where the build runs it) are only part of the cache key."""
    return _RUNS[run](code, None, session=None, id=id, **extra)


def install() -> None:
    """Wrap markdown-exec's runner of Python blocks (``_run_python``, private, the
    version locked; tests/docs/test_block_cache.py checks it is what runs a block),
    once per process."""
    if not hasattr(python._run_python, "wraps"):
        python._run_python = kept(python._run_python)
