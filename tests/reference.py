"""Test-only reference libraries (torch, transformers, accelerate), never site dependencies.

Tests that compare the core with them carry the ``reference`` marker. In the README's
plain ``make test`` they are skipped, with the reason, when a package is missing. A run
that selects them (``pytest -m reference``, as ``.ci/run`` does after installing them)
fails instead, so a reference run can never pass by skipping everything.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

TORCH_VERSION = "2.13.0"  # the CPU build on this project's machines (see .ci/run)
INSTALL = "`make reference` installs the CPU-only build and runs them; .ci/run does too"


def is_reference_run(config: pytest.Config) -> bool:
    """True when the run selects the reference tests (``-m reference``)."""
    return config.getoption("markexpr", "") == "reference"


def reference_module(name: str, config: pytest.Config) -> ModuleType:
    """Import a test-only reference library, or skip (fail in a reference run)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local files only, never the hub
    try:
        module = importlib.import_module(name)
        if name == "torch" and not module.__version__.startswith(TORCH_VERSION):
            raise ImportError(f"torch {module.__version__}, not {TORCH_VERSION}")
        return module
    except ImportError as error:
        message = f"{name} unusable ({error}): a test-only reference ({INSTALL})"
        if is_reference_run(config):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
