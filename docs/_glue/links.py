"""mkdocs hook: the site's address and its repository's in every build.

``mha_site.links`` resolves them: ``SITE_URL`` and ``REPO_URL`` when set, else what
the git remote ``origin`` implies (a GitHub remote gives both), else the placeholders
of ``mkdocs.yml``. A build on CI (``CI``) or a release build (``RELEASE=1``) fails
while either is a placeholder. `make serve` keeps its own address (the server's).
Each notebook page gets its "Open in Colab" address (``page.meta["colab"]``, read by
``docs/_theme/main.html``).
"""

import importlib
import os
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))  # mha_site: the build's tooling

_RUN = {"serving": False}


def on_startup(command, dirty, **kwargs):
    _RUN["serving"] = command == "serve"


@event_priority(100)  # before the macros read config.repo_url
def on_config(config, **kwargs):
    """Set ``repo_url`` and ``site_url``; refuse placeholders on CI and in a release."""
    links = importlib.import_module("mha_site.links")
    here = Path(config.config_file_path).parent  # the clone that holds mkdocs.yml
    found = links.resolve(os.environ, links.origin(here))
    config["repo_url"] = found.repo_url
    if not _RUN["serving"]:  # the server has set site_url to its own address
        config["site_url"] = found.site_url
    if found.placeholders and links.must_be_real(os.environ):
        raise PluginError(
            f"mkdocs.yml: {' and '.join(found.placeholders)} still the placeholder "
            f"({found.repo_url}, {found.site_url}) in a CI or RELEASE build: set them, "
            "or build from a clone whose remote origin is on GitHub"
        )
    return config


def on_page_markdown(markdown, page, config, **kwargs):
    """A notebook page's "Open in Colab" address, if the repository is on GitHub."""
    src = page.file.src_uri
    if src.startswith("notebooks/") and src.endswith(".py"):
        name = Path(src).stem
        path = f"{page.url}{name}.ipynb"
        page.meta["colab"] = importlib.import_module("mha_site.links").colab(
            config["repo_url"], path
        )
    return markdown
