"""The theme's templates are compiled once and kept (docs/_glue/templates.py)."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest

from tests.docs.glue import glue


def test_a_template_is_compiled_once_and_again_after_an_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = glue("templates")
    monkeypatch.setattr(hook, "CACHE", tmp_path / "cache")
    compiled = []
    compile_ = jinja2.Environment.compile
    monkeypatch.setattr(
        jinja2.Environment,
        "compile",
        lambda env, *args, **kwargs: (
            compiled.append(args) or compile_(env, *args, **kwargs)
        ),
    )
    theme = tmp_path / "theme"
    theme.mkdir()
    template = theme / "main.html"

    def build() -> str:
        """What a build does: a new environment, given to the hook, renders."""
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(theme))
        env = hook.on_env(env, config=None, files=None)
        return env.get_template("main.html").render(name="reader")

    template.write_text("Hello, {{ name }}.")
    assert build() == "Hello, reader." and len(compiled) == 1
    assert build() == "Hello, reader." and len(compiled) == 1  # read from the cache
    template.write_text("Goodbye, {{ name }}.")
    assert build() == "Goodbye, reader." and len(compiled) == 2
