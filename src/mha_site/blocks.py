"""A failing executed block named by its page and line.

markdown-exec names a block that raised ``<code block: n7>`` (its rank in the build),
which says neither the page nor the line. The build's hook tells this module which
page it is converting (``reading``), and ``PageAndLine``, a filter on markdown-exec's
logger, prefixes each of its failure warnings with ``docs/<page>.md:<line>:``: the
line of the failing statement when the traceback names it, else the block's first.
"""

from __future__ import annotations

import logging
import re

LOGGER = "mkdocs.plugins.markdown_exec._internal.formatters.base"
FAILED = re.compile(r"^(markdown_exec: )?Execution of \w+ code block")
_PAGE = {"path": "", "markdown": ""}


def reading(path: str, markdown: str) -> None:
    """Remember the page whose Markdown is converted next (the hook calls it)."""
    _PAGE.update(path=path, markdown=markdown)


def located(message: str, path: str, markdown: str) -> str:
    """markdown-exec's failure ``message`` prefixed with ``path:line``, or as it is
    when its code is not found in ``markdown``.

    ```python
    from mha_site.blocks import located

    page = "# T\\n\\n```python exec=\\"on\\"\\nx = 1\\nassert x == 2\\n```\\n"
    message = (
        "Execution of python code block exited with errors\\n\\nCode block is:\\n\\n"
        "  x = 1\\n  assert x == 2\\n\\nOutput is:\\n\\n"
        '  File "<code block: n7>", line 2, in <module>\\n  AssertionError\\n'
    )
    assert located(message, "docs/t.md", page).startswith("docs/t.md:5: Execution")
    ```
    """
    code = _code(message)
    start = _first_line(code, markdown.splitlines()) if code else None
    if start is None:
        return message
    failing = re.findall(r'File "<code block: [^>]*>", line (\d+)', message)
    line = start + int(failing[-1]) - 1 if failing else start
    return f"{path}:{line}: {message}"


class PageAndLine(logging.Filter):
    """Prefix markdown-exec's failure warnings with the page and line they are from."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if FAILED.match(message) and _PAGE["path"]:
            record.msg = located(message, _PAGE["path"], _PAGE["markdown"])
            record.args = ()
        return True


def install() -> None:
    """Put ``PageAndLine`` on markdown-exec's logger, once."""
    logger = logging.getLogger(LOGGER)
    if not any(isinstance(f, PageAndLine) for f in logger.filters):
        logger.addFilter(PageAndLine())


def _code(message: str) -> list[str]:
    """The code lines quoted in the message (indented by two spaces)."""
    quoted = re.search(r"Code block is:\n\n(.*?)\n\nOutput is:", message, re.DOTALL)
    lines = quoted.group(1).splitlines() if quoted else []
    return [line.strip() for line in lines]


def _first_line(code: list[str], lines: list[str]) -> int | None:
    """The 1-based line of ``lines`` where ``code`` starts (compared stripped)."""
    stripped = [line.strip() for line in lines]
    for i in range(len(stripped) - len(code) + 1):
        if stripped[i : i + len(code)] == code:
            return i + 1
    return None
