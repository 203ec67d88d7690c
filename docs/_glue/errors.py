"""mkdocs hook: a Python block that raises is reported at its file and line.

markdown-exec logs a failing block as a warning (which strict mode makes an error)
with the block's code and traceback, but not its page. This hook puts one line first:
``docs/<page>.md:<line>: this Python block raised <the exception's last line>``, the
line of the block's opening fence (``mha_site.errors.block_line``).
"""

import importlib
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))  # mha_site: the build's tooling

# markdown-exec's formatters log through this logger (its own name under mkdocs')
LOGGER = "mkdocs.plugins.markdown_exec._internal.formatters.base"
_PAGE = {"where": "", "markdown": ""}


class _NameTheBlock(logging.Filter):
    """Prefix markdown-exec's report of a failing block with its file and line."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "Code block is:" not in message or "Output is:" not in message:
            return True
        errors = importlib.import_module("mha_site.errors")
        code = message.split("Code block is:", 1)[1].split("Output is:", 1)[0]
        output = [line for line in message.split("Output is:", 1)[1].splitlines()]
        raised = next((line.strip() for line in reversed(output) if line.strip()), "")
        line = errors.block_line(_PAGE["markdown"], code)
        record.msg = (
            f"{_PAGE['where']}:{line}: this Python block raised {raised}\n{message}"
        )
        record.args = ()
        return True


def on_config(config, **kwargs):
    logger = logging.getLogger(LOGGER)
    if not any(isinstance(f, _NameTheBlock) for f in logger.filters):
        logger.addFilter(_NameTheBlock())
    return config


def on_page_markdown(markdown, page, config, **kwargs):
    """Remember the page being rendered (its source, for the block's line)."""
    _PAGE["where"] = f"docs/{page.file.src_uri}"
    _PAGE["markdown"] = Path(page.file.abs_src_path).read_text(encoding="utf-8")
    return markdown
