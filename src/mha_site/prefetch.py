"""A cold build's studies computed on a second core while the build renders pages.

A cold build spends most of its time in a few studies (the pruning study, the depth
page's scan, the real model's study, the notebooks), each kept in the content-hash
cache. ``start`` runs, in a child process, what the build will ask for: the given
pages' ``page()`` and figures, last page first, and the notebooks, while the build
renders from the first page. Whichever process reaches a study first computes it; the
other waits for it and reads it from the cache (``mha.support.cache.cached`` locks
each entry), so nothing is computed twice and a warm build starts nothing it needs.
On a machine with one core nothing is started.

```python
from mha_site.prefetch import start

assert start([], []) is None  # nothing to compute: no process
```
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent
ONE_THREAD = {
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def start(modules: list[str], notebooks: list[Path]) -> subprocess.Popen | None:
    """Start computing ``notebooks`` then ``modules`` (page modules, in the order
    given) in a child process; None when there is nothing to do or one core."""
    if not (modules or notebooks) or len(os.sched_getaffinity(0)) < 2:
        return None
    path = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": path}
    arguments = [*(f"notebook:{n}" for n in notebooks), *modules]
    return subprocess.Popen([sys.executable, "-m", __name__, *arguments], env=env)


def finish(process: subprocess.Popen | None, timeout: float = 60) -> None:
    """After the build: by then every study is cached, so the child ends at once;
    stop it if it has not."""
    if process is None:
        return
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def compute(argument: str) -> None:
    """Compute one page module's page and figures, or one ``notebook:<path>``."""
    if argument.startswith("notebook:"):
        notebooks = importlib.import_module("mha_site.notebooks")
        notebooks.executed(Path(argument.removeprefix("notebook:")))
        return
    render = importlib.import_module("mha.figures").render
    page = importlib.import_module(argument).page()
    for spec in page.figures.values():
        render(spec.draw, spec.alt, *spec.data)


def main(arguments: list[str]) -> None:
    """Compute each argument; a failure is left for the build to report."""
    for argument in arguments:
        try:
            compute(argument)
        except Exception as error:  # the build computes it again and says why
            print(
                f"[mha] computing ahead stopped at {argument} ({type(error).__name__}); "
                "the build computes it itself",
                file=sys.stderr,
                flush=True,
            )


if __name__ == "__main__":
    main(sys.argv[1:])
