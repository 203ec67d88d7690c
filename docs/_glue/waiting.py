"""mkdocs hook: while serving, a page whose study is still computing waits for it.

`make serve` on a cold cache renders at once every page whose studies are ready
(``mha_site.waiting.missing``) and, in place of each other page, a notice that names
the study it waits for and about how long it takes. The processes computing the
studies touch a file in ``mha_site.prefetch.ready_folder()`` after each page's work;
the server watches that folder, so the next build renders again the pages that
waited, and the browser reloads them. A notebook that waits shows its cells without
their outputs under the notice. `make build` never waits, and refuses a page that
carries the notice.
"""

import importlib
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))  # mha_site: the build's tooling

_STATE = {"serving": False, "waited": set()}  # pages shown waiting at the last build


def on_startup(command, dirty, **kwargs):
    _STATE["serving"] = command == "serve"


def on_serve(server, config, builder, **kwargs):
    """Build again when a page's work is done (after docs/_glue/serve.py has set up
    the observer)."""
    folder = importlib.import_module("mha_site.prefetch").ready_folder()
    folder.mkdir(parents=True, exist_ok=True)
    server.watch(str(folder))
    return server


def on_files(files, config, **kwargs):
    """Render again every page that waited at the last build."""
    for file in files.documentation_pages():
        if file.src_uri in _STATE["waited"]:
            Path(file.abs_dest_path).unlink(missing_ok=True)
    _STATE["waited"] = set()
    return files


@event_priority(100)  # before the macros, which would compute the page's studies
def on_page_markdown(markdown, page, config, files, **kwargs):
    """While serving, a page whose study is missing is only its headings (a notebook
    keeps its cells, rendered without outputs)."""
    if not _STATE["serving"]:
        return markdown
    prefetch = importlib.import_module("mha_site.prefetch")
    argument = prefetch.work(page.file.src_uri, Path(config["docs_dir"]))
    if argument is None:
        return markdown
    waiting = importlib.import_module("mha_site.waiting").missing(argument)
    if waiting is None:
        return markdown
    page.mha_waiting = waiting
    _STATE["waited"].add(page.file.src_uri)
    if argument.startswith("notebook:"):
        return markdown
    return importlib.import_module("mha_site.waiting").outline(markdown)


def on_page_content(html, page, **kwargs):
    """The notice, below the title of a page that waits."""
    waiting = getattr(page, "mha_waiting", None)
    if waiting is None:
        return html
    notice = importlib.import_module("mha_site.waiting").notice(waiting)
    if "</h1>" not in html:  # a notebook: the notice above its cells
        return notice + html
    title, _, rest = html.partition("</h1>")
    return f"{title}</h1>{notice}{rest}"


def on_post_page(output, page, config, **kwargs):
    """A strict build never publishes a page that waits."""
    page.mha_waiting = None  # `make serve` builds again: checked afresh
    marker = importlib.import_module("mha_site.waiting").MARK
    if not _STATE["serving"] and marker in output:
        raise PluginError(
            f"docs/{page.file.src_uri}: the page still waits for a study; "
            "`make build` publishes no page before its studies are computed"
        )
    return output
