"""Python blocks nested in tabs or admonitions run too.

pytest-markdown-docs only sees fences that start at the left margin; a block indented
inside ``=== "Tab"``, ``!!! note`` or ``??? answer`` would go untested. This test runs
every indented Python fence of every page (except ``notest`` ones), dedented, each in a
fresh namespace, so that the promise "every code block runs" has no hiding place.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
OPENING = re.compile(r"^[ \t]+(?P<fence>`{3,}|~{3,})\s*(?P<info>.*)$")


def nested_python_blocks(markdown: str) -> list[tuple[int, str]]:
    """``(line, source)`` of each indented Python fence that is meant to run."""
    blocks, lines, i = [], markdown.splitlines(), 0
    while i < len(lines):
        opening, start = OPENING.match(lines[i]), i + 1
        i += 1
        if not opening:
            continue
        fence, info = opening["fence"], opening["info"]
        body = []
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        i += 1
        is_python = re.match(r"\{?\.?(python|py)\b", info)
        if is_python and "notest" not in info:
            source = textwrap.dedent("\n".join(body))
            blocks.append((start, source))
    return blocks


CASES = [
    pytest.param(source, id=f"{page.name}:{line}")
    for page in sorted(DOCS.rglob("*.md"))
    for line, source in nested_python_blocks(page.read_text())
]


def test_a_nested_block_is_found_and_a_top_level_one_is_not():
    page = '```python\nx = 1\n```\n\n=== "NumPy"\n\n    ```python\n    y = 2\n    ```\n'
    assert nested_python_blocks(page) == [(7, "y = 2")]
    notest = "!!! note\n\n    ```{.python notest}\n    import torch\n    ```\n"
    assert nested_python_blocks(notest) == []


@pytest.mark.parametrize("source", CASES)
def test_nested_block_runs(source: str):
    exec(compile(source, "<nested block>", "exec"), {"__name__": "__nested__"})
