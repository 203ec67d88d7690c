"""API signatures are formatted by ruff once and kept (docs/_glue/signatures.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from markupsafe import Markup
from mkdocstrings_handlers.python._internal import rendering

from tests.docs.glue import glue

LONG = "(query: np.ndarray, key: np.ndarray, value: np.ndarray, mask: None = None)"


def test_a_signature_is_formatted_once_for_each_line_length(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = glue("signatures")
    monkeypatch.setattr(hook, "CACHE", tmp_path)
    asked = []

    def ruff(code: str, line_length: int) -> str:  # stands in for `ruff format`
        asked.append(line_length)
        return code.replace(", ", ",\n    ")

    monkeypatch.setattr(rendering, "_get_formatter", lambda: ruff)
    for _ in range(2):  # two builds, each loading the hook's configuration
        hook.on_config(config=None)
    # mkdocstrings formats a signature through the wrapped formatter
    first = rendering._format_signature(Markup("attend"), LONG, 60)
    assert first == rendering._format_signature(Markup("attend"), LONG, 60)
    assert first.startswith("attend(query: np.ndarray,\n    key:")
    assert asked == [60]  # once: the second came from the cache
    rendering._format_signature(Markup("attend"), LONG, 40)
    assert asked == [60, 40]
    assert len(list(tmp_path.iterdir())) == 2
