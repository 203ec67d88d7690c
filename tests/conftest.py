"""Fixtures shared by the whole suite: one strict build of the site, served locally."""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from threadpoolctl import threadpool_limits

# As in the build (docs/_glue/macros.py): small matrices run faster on one BLAS thread.
threadpool_limits(1)

ROOT = Path(__file__).resolve().parent.parent


def build_site(out: Path) -> subprocess.CompletedProcess:
    """Run ``mkdocs build --strict`` into ``out``; the result carries its output."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH", "0")}
    env.setdefault("NO_MKDOCS_2_WARNING", "1")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once per test session with ``mkdocs build --strict``."""
    out = tmp_path_factory.mktemp("site")
    result = build_site(out)
    if result.returncode:
        pytest.fail(f"mkdocs build --strict failed:\n{result.stderr[-4000:]}")
    return out


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def site_url(built_site: Path) -> Iterator[str]:
    """Base URL (ending in ``/``) of the built site served on 127.0.0.1."""
    handler = functools.partial(_QuietHandler, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
