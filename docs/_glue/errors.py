"""mkdocs hook: a Python block that raises is reported at its file and line; under
`make serve`, every build error of a page is shown at its top.

markdown-exec logs a failing block as a warning (which strict mode makes an error)
with the block's code and traceback, but not its page. This hook puts one line first:
``docs/<page>.md:<line>: this Python block raised <the exception's last line>``, the
line of the block's opening fence (``mha_site.errors.block_line``).

While serving, a build error does not stop the build (which would leave `mkdocs
serve` waiting for a build that never comes): the page it concerns shows it at its
top, one banner per kind (``mha_site.errors.BANNERS``), each line naming the file and
line, and the other pages are served as usual. The errors of a page are those the
macros (docs/_glue/macros.py) and the drift guard (docs/_glue/drift.py) put on it
(``page.mha_build_errors``), and its blocks that raised.
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
_PAGE: dict = {"where": "", "markdown": "", "raised": [], "serving": False}


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
        first = f"{_PAGE['where']}:{line}: this Python block raised {raised}"
        _PAGE["raised"].append(("block", first))
        record.msg = f"{first}\n{message}"
        record.args = ()
        return True


def on_startup(command, dirty, **kwargs):
    _PAGE["serving"] = command == "serve"


def on_config(config, **kwargs):
    logger = logging.getLogger(LOGGER)
    if not any(isinstance(f, _NameTheBlock) for f in logger.filters):
        logger.addFilter(_NameTheBlock())
    return config


def on_page_markdown(markdown, page, config, **kwargs):
    """Remember the page being rendered (its source, for the block's line)."""
    _PAGE["where"] = f"docs/{page.file.src_uri}"
    _PAGE["markdown"] = Path(page.file.abs_src_path).read_text(encoding="utf-8")
    _PAGE["raised"] = []
    return markdown


def on_page_content(html, page, **kwargs):
    """While serving, the page's build errors, one banner per kind, at its top."""
    found = [*getattr(page, "mha_build_errors", []), *_PAGE["raised"]]
    if not _PAGE["serving"] or not found:
        return html
    banners = importlib.import_module("mha_site.errors").banners(found)
    return f"{banners}{html}"
