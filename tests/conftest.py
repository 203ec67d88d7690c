"""Fixtures shared by the whole suite: one strict build of the site, served locally.

The suite runs on every core (pytest-xdist, ``-n auto`` in pyproject.toml). The site is
built once per run, in the background from the start, while the tests that do not
need it run (and once more right after, for the test that two builds are
byte-identical); those that do run last (the order and how tests are handed to workers
are in tests/xdist_schedule.py, a plugin of its own). ``-n0`` runs everything in one
process.
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from mha_site import prefetch
from mha_site.links import PLACEHOLDER_SITE, Links, origin, resolve

# The plugins' hooks take effect by being imported here: the run's CPU time, printed
# beside its wall time, and how tests are handed to the workers.
from tests.cpu_time import pytest_configure, pytest_terminal_summary  # noqa: F401
from tests.xdist_schedule import (  # noqa: F401
    needs_site,
    pytest_collection_modifyitems,
    pytest_xdist_make_scheduler,
    reads_studies,
)

# As in the build (docs/_glue/macros.py): small matrices run faster on one BLAS thread.
threadpool_limits(1)

ROOT = Path(__file__).resolve().parent.parent


def site_links() -> Links:
    """The repository's and the site's addresses in the suite's build (``build_site``)."""
    environ = {"SITE_URL": PLACEHOLDER_SITE, **os.environ}
    return resolve(environ, origin(ROOT))


def local_build_env(**extra: str) -> dict[str, str]:
    """The environment of a test's build of this site's mkdocs.yml: a local build,
    served by the tests at their own address whatever the remote, and not the deployed
    one, which CI's `make build` checks for placeholders (docs/_glue/links.py)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "RELEASE")}
    env.setdefault("SITE_URL", PLACEHOLDER_SITE)
    env.setdefault("NO_MKDOCS_2_WARNING", "1")
    return env | extra


def build_site(out: Path) -> subprocess.CompletedProcess:
    """Run ``mkdocs build --strict`` into ``out``; the result carries its output."""
    env = local_build_env(SOURCE_DATE_EPOCH=os.environ.get("SOURCE_DATE_EPOCH", "0"))
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )


class SiteBuild:
    """One ``mkdocs build --strict`` per test run, in ``folder``, shared by workers.

    The first process to ``start`` it runs the build in a thread; every process
    ``wait``s for its exit status, written last to ``folder/status``. A build started
    ``after`` another begins once that one has ended, so that the first is not slowed.
    """

    def __init__(self, folder: Path):
        self.folder = folder
        self.site = folder / "site"
        self.status = folder / "status"
        self.thread: threading.Thread | None = None

    def start(self, after: SiteBuild | None = None) -> None:
        try:
            self.folder.mkdir()  # atomic: exactly one process gets to build
        except FileExistsError:
            return
        self.thread = threading.Thread(target=self._build, args=(after,), daemon=True)
        self.thread.start()

    def _build(self, after: SiteBuild | None) -> None:
        if after is not None:
            while not after.status.exists():
                time.sleep(0.2)
        result = build_site(self.site)
        (self.folder / "stderr.txt").write_text(result.stderr)
        partial = self.folder / "status.partial"
        partial.write_text(str(result.returncode))
        partial.rename(self.status)

    def wait(self) -> Path:
        while not self.status.exists():
            time.sleep(0.2)
        if int(self.status.read_text()):
            stderr = (self.folder / "stderr.txt").read_text()
            pytest.fail(f"mkdocs build --strict failed:\n{stderr[-4000:]}")
        return self.site

    def studies_computed(self) -> None:
        """Return once the build's studies are all in the cache: its second process
        has computed every one (and left its marker, mha_site.prefetch, since the
        build began), or the build has ended; at once if no process of this run has
        started the build."""
        while self.folder.exists() and not self.status.exists():
            if prefetch.computed_since(self.folder.stat().st_mtime):
                return
            time.sleep(0.2)

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()


@dataclass(frozen=True)
class SiteBuilds:
    """The run's builds of the site: the one its tests read, and a second one."""

    site: SiteBuild
    again: SiteBuild  # for tests/docs/test_build.py: two builds are byte-identical


@pytest.fixture(scope="session", autouse=True)
def site_builds(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SiteBuilds]:
    """The run's site builds, started at once if any collected test needs them.

    The second build (``rebuilt_site``) starts when the first has ended, in the
    background too, while other tests run.
    """
    shared = tmp_path_factory.getbasetemp()
    if hasattr(request.config, "workerinput"):  # xdist: workers share the parent
        shared = shared.parent
    builds = SiteBuilds(
        SiteBuild(shared / "built-site"), SiteBuild(shared / "rebuilt-site")
    )
    items = request.session.items
    first = any(needs_site(item) for item in items)
    if first:
        builds.site.start()
    if any("rebuilt_site" in getattr(item, "fixturenames", ()) for item in items):
        builds.again.start(after=builds.site if first else None)
    yield builds
    builds.site.join()
    builds.again.join()


@pytest.fixture(autouse=True)
def studies_from_the_build(
    request: pytest.FixtureRequest, site_builds: SiteBuilds
) -> None:
    """A test of the pages' code (``reads_studies``), in a run that builds the site,
    starts once the build has computed every study (once, on both cores:
    mha_site.prefetch), and reads it from the cache instead of computing it, or
    waiting for it, in its own time. The wait is the setup of the first such test of
    each worker; a run that builds nothing does not wait."""
    if reads_studies(request.node):
        site_builds.site.studies_computed()


# NumPy's print options as a fresh process has them (the build's, when it renders a
# page), read before any test runs.
_PRINT_OPTIONS = np.get_printoptions()


@pytest.fixture(autouse=True)
def numpy_print_options() -> Iterator[None]:
    """Each test starts with NumPy's print options as the build has them, and leaves
    them so: a page's code block run by pytest-markdown-docs sets ``precision=3``
    for the rest of its process, and a fact's values printed from an array then read
    otherwise in the test than in the page."""
    with np.printoptions(**_PRINT_OPTIONS):
        yield


@pytest.fixture(scope="session")
def built_site(site_builds: SiteBuilds) -> Path:
    """The site, built once per test run with ``mkdocs build --strict``."""
    return site_builds.site.wait()


@pytest.fixture(scope="session")
def rebuilt_site(site_builds: SiteBuilds) -> Path:
    """The site built a second time, by another ``mkdocs build --strict`` process."""
    return site_builds.again.wait()


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


@pytest.fixture(scope="session")
def smollm2_reference(request: pytest.FixtureRequest):
    """SmolLM2 in transformers (test-only, ``tests/reference.py``), loaded from the
    same GGUF file once per session (about half a minute): every reference test of a
    SmolLM2 number shares it."""
    from mha.pretrained import smollm2
    from tests.reference import reference_module

    torch = reference_module("torch", request.config)
    transformers = reference_module("transformers", request.config)
    reference_module("accelerate", request.config)  # transformers loads GGUF with it
    path = smollm2.gguf_path()
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32
    )
    loaded.config._attn_implementation = "eager"  # attention weights come back
    return loaded.eval()
