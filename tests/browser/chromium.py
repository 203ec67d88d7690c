"""Finding the headless Chromium that the browser tests drive through Playwright.

Playwright's own browser download is not used: the tests run the system's Chromium
(Debian: ``apt-get install chromium``), which `.ci/run` installs when it is absent.
"""

from __future__ import annotations

import os
import shutil

import pytest

# Flags for running headless here: no sandbox (root in a container), no GPU, and none
# of the background traffic (updates, sync, first-run pages) of a desktop browser. And
# no request leaves the machine: Chromium sends every request but those to the local
# server (loopback is never proxied) to a proxy on a closed local port, where it fails
# (ERR_PROXY_CONNECTION_FAILED); the tests still record it (tests/browser/recording.py).
# A route that aborts such requests in Python would do the same at a cost: every
# request of every page waits for the test process, and the browser's cache is off.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--proxy-server=127.0.0.1:9",
]

MISSING = "Chromium is not installed (apt-get install chromium): browser tests need it"


def require_chromium() -> str:
    """Path of the Chromium executable.

    When it is absent the calling test is skipped, with the reason shown in pytest's
    summary; under CI (``CI=true``) it fails instead, so a CI machine without a
    browser cannot pass by skipping.
    """
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true, and {MISSING}")
        pytest.skip(MISSING)
    return executable
