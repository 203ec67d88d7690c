"""mkdocs hook: each page's card for a shared link (Open Graph, Twitter).

Its description is its first paragraph (``mha_site.social.description``) unless its
front matter sets one; its image is its first figure drawn as a PNG, written beside
the page as ``card.png`` (the macro ``figure`` marks the first figure of each page),
or, for a page without figures, the home page's. ``docs/_theme/main.html`` writes the
metadata. Material's social plugin is not used: it downloads its fonts at build.
"""

import importlib
import sys
import urllib.parse
from pathlib import Path

import markupsafe

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))  # mha_site: the build's tooling

CARD = "card.png"


def on_page_content(html, page, config, **kwargs):
    """Set the page's description and the address of its image."""
    if not page.meta.get("description"):
        text = importlib.import_module("mha_site.social").description(html)
        if text:  # escaped once: Material's description tag prints it as it is
            page.meta["description"] = markupsafe.escape(text)
    own = getattr(page, "mha_first_figure", None) is not None
    where = f"{page.url}{CARD}" if own else CARD  # the home page's is the site's
    page.meta["social_image"] = urllib.parse.urljoin(config["site_url"] or "/", where)
    return html


def on_post_page(output, page, config, **kwargs):
    """Write the page's first figure as card.png beside it."""
    spec = getattr(page, "mha_first_figure", None)
    if spec is not None:  # drawn with the figure (docs/_glue/macros.py)
        _, png = importlib.import_module("mha_site.social").figure_and_card(spec)
        target = Path(page.file.abs_dest_path).parent / CARD
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(png)
        page.mha_first_figure = None  # `make serve` rebuilds: marked afresh
    return output
