"""A page's executed Python blocks run once per version of their code and of the code
they import, then their output is read (mha_site.block_cache)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from markdown import Markdown
from markdown_exec._internal.formatters import python
from markdown_exec._internal.formatters.base import ExecutionError

from mha.support import cache
from mha_site import block_cache

BLOCK = "import numpy as np\nfrom mha.heads import split_heads\nprint(np.arange(3))\n"


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """markdown-exec's runner replaced by one that records each block it runs, then
    wrapped as a build wraps it; results kept in an empty cache."""
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    ran: list[str] = []

    def run(code, returncode=None, session=None, id=None, **extra):
        ran.append(code)
        if "raise" in code:
            raise ExecutionError("the block raised")
        return f"<output {len(ran)}>"

    monkeypatch.setattr(python, "_run_python", run)
    block_cache.install()
    block_cache.install()  # a second build of the same process wraps nothing more
    assert python._run_python.wraps is run
    return ran


def _build(code: str, **options: str) -> str:
    """What markdown-exec renders for a Python block of ``code``, as in a build."""
    return python._format_python(code=code, md=Markdown(), **options)


def test_markdown_exec_runs_a_block_once_then_reads_its_output(runs: list[str]):
    first = _build(BLOCK)
    assert first == "<output 1>"  # what the runner printed, rendered
    assert _build(BLOCK) == first and runs == [BLOCK]
    _build(BLOCK + "print(1)\n")  # an edited block runs
    assert len(runs) == 2


def test_a_block_runs_again_when_the_code_it_imports_changes(
    runs: list[str], monkeypatch: pytest.MonkeyPatch
):
    asked = []
    digests = {"now": "code-1"}

    def code_digest(modules: list[str]) -> str:
        asked.append(modules)
        return digests["now"]

    monkeypatch.setattr(cache, "code_digest", code_digest)
    _build(BLOCK)
    _build(BLOCK)
    assert asked[0] == ["mha.heads", "mha.heads.split_heads"] and len(runs) == 1
    digests["now"] = "code-2"  # an edit to mha.heads or to what it imports
    _build(BLOCK)
    assert len(runs) == 2


def test_a_block_that_raises_is_never_kept(runs: list[str]):
    failing = "raise ValueError('no')\n"
    for _ in range(2):
        with pytest.raises(ExecutionError):
            python._run_python(failing)
    assert runs == [failing, failing]


def test_a_block_in_a_session_always_runs(runs: list[str]):
    for _ in range(2):
        _build(BLOCK, session="page")
    assert runs == [BLOCK, BLOCK]


def test_a_block_that_sets_numpys_print_options_sets_them_for_itself_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The attention page's blocks set them; a build that ran those blocks printed the
    arrays of every later page's facts at three decimals, and a build that read their
    outputs from the cache did not: two builds differed."""
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))

    def run(code, returncode=None, session=None, id=None, **extra):
        exec(code, {})
        return str(np.array([1 / 3]))

    monkeypatch.setattr(python, "_run_python", run)
    block_cache.install()
    before = np.get_printoptions()
    try:
        for session in (None, "s"):
            code = (
                f"import numpy as np\nnp.set_printoptions(precision=3)  # {session}\n"
            )
            assert python._run_python(code, session=session) == "[0.333]"
            assert np.get_printoptions() == before
    finally:
        np.set_printoptions(**before)
