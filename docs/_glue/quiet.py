"""mkdocs hook: lines a build prints that tell a reader nothing new, said once or not.

- mkdocs-macros' INFO lines (its version, its variables, the module it loaded) at every
  build: not shown (its warnings and errors are);
- the warning of a dirty build (`make serve` renders only the pages edited), that other
  pages' navigation may be stale: said at the first build, not at every rebuild.

Material's end-of-life notice stays, said once per build (by Material, when it is
imported): tests/docs/test_site_config.py holds that nothing silences it. The
notebooks' kernel talks to its client over local sockets, not TCP
(``mha_site.notebooks``), so it has no unencrypted port to warn about.
"""

import logging

MACROS = "mkdocs.plugins.mkdocs_macros.util"
BUILD = "mkdocs.commands.build"


class _Once(logging.Filter):
    """Let the dirty build's warning through once per process."""

    said = False

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.getMessage().startswith("A 'dirty' build is being performed"):
            return True
        said, type(self).said = type(self).said, True
        return not said


def on_startup(command, dirty, **kwargs):
    logging.getLogger(MACROS).setLevel(logging.WARNING)
    logger = logging.getLogger(BUILD)
    if not any(isinstance(f, _Once) for f in logger.filters):
        logger.addFilter(_Once())
