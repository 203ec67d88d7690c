"""A cold build's studies computed on a second core while the build renders pages.

A cold build spends most of its time in a few studies (the pruning study, the depth
page's scan, the real model's study, the notebooks), each kept in the content-hash
cache. The build renders its pages in ``build_order``: first the pages that compute
nothing (the API reference), then the others in the nav's order. ``start`` runs, in a
child process, what those pages will ask for (each page module's ``page()``, figures
and card, and each notebook, ``work``), from the last page back. Whichever process
reaches a study first computes it (``mha.support.cache.cached`` locks each entry), so
nothing is computed twice. The build, which needs a study to go on, waits for the
child's; the child does not wait for the build's (pages read one another's studies:
the position page reads the depth page's scan): it puts that page aside until the
study is stored and goes on with the next (``main``). When the
child has computed everything, it leaves a marker named by the code it ran (``mha``'s
code hash, the versions the cache keys hold, the notebooks and the pages): a later
build of the same code is warm and starts no child, which would only read the cache
again (about 6 CPU-seconds). A build that deletes cached results deletes the markers
too (``forget``). Data alone (a model file, a data folder) is not in the marker's name:
after such a change, the build computes what it needs itself, on one core. On a
machine with one core nothing is started.

```python
from mha_site.prefetch import start

assert start([]) is None  # nothing to compute: no process
```
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from mha.support import cache
from mha_site.pages import is_notebook, page_module
from mha_site.social import figure_and_card

SRC = Path(__file__).resolve().parent.parent
ONE_THREAD = {
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


# How much less often a child that computes ahead of `make serve` gets a core than
# the server, which renders the first pages meanwhile (until then it needed about
# 10 CPU-s of its own, beside the children's 19, on a fresh clone).
NICE = 10


def build_order(pages: list[str], nav: list[str]) -> list[str]:
    """``pages`` (paths under docs/) in the order the build renders them: those for
    which ``work`` finds nothing to compute, then the others; each group in ``nav``'s
    order, with pages outside the nav after it.

    ```python
    from mha_site.prefetch import build_order

    nav = ["index.md", "cost.md", "reference/core.md"]
    pages = ["cost.md", "reference/core.md", "index.md"]
    assert build_order(pages, nav) == ["reference/core.md", "index.md", "cost.md"]
    ```
    """

    def key(page: str) -> tuple[bool, int]:
        place = nav.index(page) if page in nav else len(nav)
        return work(page) is not None, place

    return sorted(pages, key=key)


def work(page: str, docs_dir: Path = Path("docs")) -> str | None:
    """What the child computes for ``docs_dir/<page>``: the page's module (its
    ``page()``, figures and card), ``notebook:<path>`` for a notebook, or None for a
    page that computes nothing.

    ```python
    from mha_site.prefetch import work

    assert work("cost.md") == "mha.pages.cost"
    assert work("notebooks/mha_in_a_few_lines.py").startswith("notebook:")
    assert work("reference/core.md") is None
    ```
    """
    if is_notebook(page):
        return f"notebook:{Path(docs_dir, page)}"
    return page_module(page)


def start(arguments: list[str], ready: bool = False) -> subprocess.Popen | None:
    """Start computing ``arguments`` (what ``work`` returns, in the order given) in a
    child process; None when there is nothing to do or one core. With ``ready``, the
    child says when each argument is done (``done``) or failed (``failed``): `make
    serve` renders the page that waited for it (``mha_site.waiting``), and starts one
    even on one core (its pages would wait for nothing otherwise)."""
    if not arguments or (len(os.sched_getaffinity(0)) < 2 and not ready):
        return None
    finished = marker(arguments)
    if finished.exists():
        return None  # computed ahead for this very code: the cache holds it all
    for argument in arguments if ready else []:  # said of code edited since
        failed(argument).unlink(missing_ok=True)
    path = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": path}
    flags = [f"--done={finished}", *(["--ready"] if ready else [])]
    return subprocess.Popen(
        [sys.executable, "-m", __name__, *flags, *arguments], env=env
    )


def cost(argument: str, table: dict[str, dict[str, float]]) -> float:
    """The sealed CPU seconds of ``argument``'s studies (``table``:
    ``mha.support.progress.sealed()``), found by name: its page module's studies,
    figures and card, or its notebook, each with the studies it asks for. `make serve` computes the cheapest pages
    first, so that most pages come soon.

    ```python
    from mha_site.prefetch import cost

    table = {
        "mha.pages.cost.sweep": {"cpu": 0.2, "own": 0.2},
        "figure cost.scaling(…, 8)": {"cpu": 0.3, "own": 0.3},
        "mha.pages.costly.study": {"cpu": 9.0, "own": 9.0},
    }
    assert round(cost("mha.pages.cost", table), 1) == 0.5
    ```
    """
    if argument.startswith("notebook:"):
        names = [f"notebook {Path(argument).name}"]
    else:
        page = argument.removeprefix("mha.pages.")
        names = [f"{argument}.", f"figure {page}.", f"card {page}."]
        names.append(f"figure and card {page}.")
    return sum(
        entry["cpu"]
        for study, entry in table.items()
        if any(study == n or study.startswith(n) for n in names)
    )


def ready_folder() -> Path:
    """Where a child says that an argument's work is done (or failed): the folder
    `make serve` watches."""
    return cache.cache_dir() / "ready"


def done(argument: str) -> Path:
    """The file a child started with ``ready`` touches once ``argument`` is done.

    ```python
    from mha_site.prefetch import done, failed

    assert done("mha.pages.cost").parent == failed("mha.pages.cost").parent
    assert done("mha.pages.cost") != done("mha.pages.ffn")
    ```
    """
    return ready_folder() / hashlib.sha256(argument.encode()).hexdigest()[:16]


def failed(argument: str) -> Path:
    """The file a child started with ``ready`` touches when ``argument`` failed."""
    return done(argument).with_suffix(".failed")


def marker(arguments: list[str]) -> Path:
    """The file the child leaves once it has computed ``arguments`` for this code:
    named by ``mha``'s code hash, the versions in every cache key, the notebooks'
    text and the arguments.

    ```python
    from mha_site.prefetch import marker

    assert marker(["mha.pages.cost"]) != marker(["mha.pages.ffn"])
    assert marker(["mha.pages.cost"]).parent.name == "computed-ahead"
    ```
    """
    digest = hashlib.sha256(f"{cache.code_hash()} {cache.versions()}".encode())
    for argument in arguments:
        digest.update(argument.encode())
        if argument.startswith("notebook:"):
            digest.update(Path(argument.removeprefix("notebook:")).read_bytes())
    return _markers() / digest.hexdigest()


def _markers() -> Path:
    return cache.cache_dir() / "computed-ahead"


def computed_since(began: float) -> bool:
    """Whether a child has computed everything it was given since ``began`` (a
    ``time.time()``): a build's studies are all in the cache once its child has.

    ```python
    import time
    from mha_site.prefetch import computed_since

    assert not computed_since(time.time() + 60)
    ```
    """
    return any(done.stat().st_mtime >= began for done in _markers().glob("*"))


def forget() -> None:
    """Delete every marker: after cached results were deleted, the next build's
    child computes what is missing again."""
    shutil.rmtree(_markers(), ignore_errors=True)


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
    """Compute one page module's page, figures and card (its first figure with it,
    ``mha_site.social.figure_and_card``), or one ``notebook:<path>``."""
    if argument.startswith("notebook:"):
        notebooks = importlib.import_module("mha_site.notebooks")
        notebooks.executed(Path(argument.removeprefix("notebook:")))
        return
    figures = importlib.import_module("mha.figures")
    page = importlib.import_module(argument).page()
    # The card shows the page's first figure, which page modules declare first (drawn
    # once for both); where one does not, the build draws that figure itself.
    for number, spec in enumerate(page.figures.values()):
        if number == 0:
            figure_and_card(spec)
        else:
            figures.render(spec.draw, spec.alt, *spec.data)


def main(arguments: list[str]) -> None:
    """Compute each argument (after an optional ``--done=<marker>``, written when
    every one succeeded); a failure is left for the build to report. An argument that
    reads a study the build is computing is put aside until that study is stored;
    only when every argument left is put aside does the child wait for the build."""
    finished = None
    if arguments and arguments[0].startswith("--done="):
        finished = Path(arguments[0].removeprefix("--done="))
        arguments = arguments[1:]
    say = bool(arguments) and arguments[0] == "--ready"
    arguments = arguments[say:]
    if say:  # `make serve`: the server's builds first, the studies in the background
        os.nice(NICE)
    stopped: list[str] = []
    awaited: dict[str, Path | None] = dict.fromkeys(arguments)  # argument -> entry
    while awaited:
        ready = [a for a, entry in awaited.items() if entry is None or entry.exists()]
        if not ready:  # nothing else to do: wait for the build
            argument = next(iter(awaited))
            awaited.pop(argument)
            _attempt(argument, stopped, say)
            continue
        for argument in ready:
            with cache.not_waiting():
                awaited[argument] = _attempt(argument, stopped, say)
            if awaited[argument] is None:
                awaited.pop(argument)
    if finished is not None and not stopped:
        finished.parent.mkdir(parents=True, exist_ok=True)
        finished.touch()


def _attempt(argument: str, stopped: list[str], say: bool = False) -> Path | None:
    """Compute ``argument``; the entry it waits for if it read a study another
    process is computing (``cache.Busy``), else None, with ``argument`` added to
    ``stopped`` if it raised. With ``say``, touch its ``done`` or ``failed`` file."""
    said = done(argument)
    try:
        compute(argument)
    except cache.Busy as busy:
        return busy.path
    except Exception as error:  # the build computes it again and says why
        stopped.append(argument)
        said = failed(argument)
        print(
            f"[mha] computing ahead stopped at {argument} ({type(error).__name__}); "
            "the build computes it itself",
            file=sys.stderr,
            flush=True,
        )
    if say:
        said.parent.mkdir(parents=True, exist_ok=True)
        said.touch()
    return None


if __name__ == "__main__":
    main(sys.argv[1:])
