"""A failing executed block is named by its page and line, not ``<code block: n7>``."""

from __future__ import annotations

import logging

import markdown
from markdown_exec import formatter, validator

from mha_site import blocks

PAGE = """# A page

Some words.

```python exec="on"
x = 1
y = 2
assert x == y, "not equal"
```
"""


def convert(text: str) -> None:
    fences = [
        {
            "name": "python",
            "class": "python",
            "validator": validator,
            "format": formatter,
        }
    ]
    markdown.Markdown(
        extensions=["pymdownx.superfences"],
        extension_configs={"pymdownx.superfences": {"custom_fences": fences}},
    ).convert(text)


def test_a_failing_block_is_named_by_its_page_and_failing_line(caplog):
    blocks.install()
    blocks.reading("docs/a-page.md", PAGE)
    with caplog.at_level(logging.WARNING):
        convert(PAGE)
    failures = [
        r.getMessage() for r in caplog.records if "code block" in r.getMessage()
    ]
    assert len(failures) == 1
    assert failures[0].startswith("docs/a-page.md:8: ")  # the assert's line
    assert "not equal" in failures[0]


def test_a_message_whose_code_is_not_on_the_page_is_left_as_it_is():
    message = "Execution of python code block exited with errors\n\nno code quoted"
    assert blocks.located(message, "docs/a-page.md", PAGE) == message
