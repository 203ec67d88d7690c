"""Every cache the build writes survives a read-only or full disk as the results cache
does (``mha_site.disk``): one line on stderr, and the build goes on.

Tests may run as root, whom ``chmod`` does not stop: a read-only folder is played by a
path under a regular file (``NotADirectoryError`` for everyone), a full disk by a file
size limit of zero bytes (``RLIMIT_FSIZE``: a write fails with ``EFBIG``, root's too),
set in a child process so that pytest's own files stay writable.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import jinja2
import pytest
from markupsafe import Markup
from mkdocstrings_handlers.python._internal import rendering

import mha_site.disk
from tests.docs.glue import glue

ROOT = Path(__file__).resolve().parents[2]
LONG = "(query: np.ndarray, key: np.ndarray, value: np.ndarray)"  # past a line
FORMATTED = "f(query: np.ndarray,\nkey: np.ndarray,\nvalue: np.ndarray)"


def fake_ruff(code: str, line_length: int) -> str:  # stands in for `ruff format`
    return code.replace(", ", ",\n")


@pytest.fixture
def blocked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder path that no one can create: it is under a regular file."""
    monkeypatch.setattr(mha_site.disk, "_SAID", set())  # each test hears the message
    (tmp_path / "file").write_text("a file, not a folder")
    return tmp_path / "file" / "cache"


def _render(hook) -> str:
    env = jinja2.Environment(loader=jinja2.DictLoader({"t": "Hello, {{ name }}."}))
    env = hook.on_env(env, config=None, files=None)
    return env.get_template("t").render(name="reader")


def test_the_theme_s_template_cache_on_a_read_only_folder(blocked, monkeypatch, capsys):
    hook = glue("templates")
    monkeypatch.setattr(hook, "CACHE", blocked)
    assert _render(hook) == "Hello, reader."
    assert _render(hook) == "Hello, reader."  # a second build: said once
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith(
        f"[mha] cannot keep compiled templates in {blocked} ("
    )
    assert "the build goes on" in said[0]


def test_the_signature_cache_on_a_read_only_folder(blocked, monkeypatch, capsys):
    hook = glue("signatures")
    monkeypatch.setattr(hook, "CACHE", blocked)
    monkeypatch.setattr(rendering, "_get_formatter", lambda: fake_ruff)
    hook.on_config(config=None)
    signature = rendering._format_signature(Markup("f"), LONG, 20)
    assert signature == FORMATTED  # formatted, not kept
    said = capsys.readouterr().err
    assert said.startswith(f"[mha] cannot keep formatted signatures in {blocked} (")


FULL_DISK = """
import resource, signal, sys
from pathlib import Path
import jinja2
sys.path[:0] = [{root!r}, {src!r}]
from tests.docs.glue import glue
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit: EFBIG
templates, signatures = glue("templates"), glue("signatures")
templates.CACHE, signatures.CACHE = Path({jinja!r}), Path({kept!r})
signatures.rendering._get_formatter = lambda: lambda code, n: code.replace(", ", ",@")
signatures.on_config(config=None)
resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))
env = templates.on_env(
    jinja2.Environment(loader=jinja2.DictLoader({{"t": "{{{{ 6 * 7 }}}}"}})), None, None
)
print(env.get_template("t").render())
print(signatures.rendering._format_signature("f", {long!r}, 20))
"""


def test_both_caches_on_a_full_disk(tmp_path):
    script = FULL_DISK.format(
        root=str(ROOT),
        src=str(ROOT / "src"),
        jinja=str(tmp_path / "jinja"),
        kept=str(tmp_path / "signatures"),
        long=LONG,
    )
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["42", FORMATTED.replace("\n", "@")]
    said = done.stderr.splitlines()
    assert len(said) == 2, done.stderr
    assert said[0].startswith(f"[mha] cannot keep compiled templates in {tmp_path}")
    assert said[1].startswith(f"[mha] cannot keep formatted signatures in {tmp_path}")
    assert "File too large" in said[0]
    leftovers = [p for p in tmp_path.rglob("*") if p.is_file() and p.stat().st_size]
    assert not leftovers  # no half-written file


def test_an_executed_notebook_its_cache_cannot_keep_is_written_elsewhere(
    blocked, capsys
):
    target = blocked / "notebooks" / "play-0123.ipynb"
    assert not mha_site.disk.keep(target, "{}", "executed notebooks")
    path = mha_site.disk.temporary(target.name, "{}")
    assert path.read_text() == "{}" and path.parent != blocked
    assert capsys.readouterr().err.startswith("[mha] cannot keep executed notebooks")
