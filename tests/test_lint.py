"""`make test` enforces the linter and the formatter over the whole repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUFF = Path(sys.executable).parent / "ruff"


@pytest.mark.parametrize(
    "command", [["check"], ["format", "--check"]], ids=["check", "format"]
)
def test_ruff_finds_nothing(command: list[str]) -> None:
    result = subprocess.run(
        [RUFF, *command, "."], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, (
        f"ruff {' '.join(command)} (fix with `.venv/bin/ruff check --fix .` and "
        f"`.venv/bin/ruff format .`):\n{result.stdout}{result.stderr}"
    )
