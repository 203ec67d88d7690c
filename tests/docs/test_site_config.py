"""mkdocs.yml: the site's address, its repository, link validation, the 404 page.

The checks that need a build use a tiny project with this site's own settings (theme,
validation, assets), which builds in seconds: what they check does not depend on the
pages' content.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import material
import pytest
import yaml
from mkdocs.config import load_config
from mkdocs.utils.yaml import yaml_load

from mha_site.links import PLACEHOLDER_REPO, PLACEHOLDER_SITE
from tests.conftest import site_links

ROOT = Path(__file__).resolve().parents[2]
CONFIG = yaml_load((ROOT / "mkdocs.yml").read_text())
SUB = "https://example.org/sub/"


def _build_tiny_site(
    tmp_path: Path,
    pages: dict[str, str],
    env: dict[str, str] | None = None,
    **settings: object,
):
    """Build ``pages`` strictly with this site's theme, assets and validation, in
    ``env`` (the environment less CI, RELEASE, SITE_URL and REPO_URL, plus ``env``)."""
    docs = tmp_path / "docs"
    for name, text in pages.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text)
    theme = {**CONFIG["theme"], "custom_dir": str(ROOT / CONFIG["theme"]["custom_dir"])}
    config = {
        "site_name": "tiny",
        "docs_dir": str(docs),
        "site_dir": str(tmp_path / "site"),
        "strict": CONFIG["strict"],
        "validation": CONFIG["validation"],
        "theme": theme,
        "extra_css": CONFIG["extra_css"],
        "extra_javascript": CONFIG["extra_javascript"],
        **settings,
    }
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    unset = ("CI", "RELEASE", "SITE_URL", "REPO_URL")
    environ = {k: v for k, v in os.environ.items() if k not in unset} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(tmp_path / "mkdocs.yml")],
        capture_output=True,
        text=True,
        env=environ,
    )


# The site's settings for its addresses: the placeholders, resolved by the links hook.
LINKS = {
    "site_url": PLACEHOLDER_SITE,
    "repo_url": PLACEHOLDER_REPO,
    "hooks": [str(ROOT / "docs" / "_glue" / "links.py")],
}
NOTEBOOK = "# %% [markdown]\n# # A notebook\n\n# %%\nprint(1)\n"  # jupytext percent
JUPYTER = {"mkdocs-jupyter": {"include": ["notebooks/*.py"], "execute": False}}


def _git_clone_of(tmp_path: Path, remote: str | None) -> None:
    """Make ``tmp_path`` a git repository, with ``remote`` as its origin if given."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    if remote:
        subprocess.run(
            ["git", "-C", str(tmp_path), "remote", "add", "origin", remote], check=True
        )


def test_a_clone_with_a_github_remote_links_right_without_any_variable(
    tmp_path: Path,
):
    """No SITE_URL, no REPO_URL, even on CI: the remote gives both, and a notebook
    page opens its download in Colab from the Pages branch."""
    _git_clone_of(tmp_path, "git@github.com:ada/attention.git")
    pages = {"index.md": "# Home\n", "notebooks/nb.py": NOTEBOOK}
    result = _build_tiny_site(
        tmp_path, pages, env={"CI": "true"}, plugins=[JUPYTER], **LINKS
    )
    assert result.returncode == 0, result.stderr[-2000:]
    home = (tmp_path / "site" / "index.html").read_text()
    assert '<link rel="canonical" href="https://ada.github.io/attention/">' in home
    assert 'href="https://github.com/ada/attention"' in home
    assert "127.0.0.1" not in home and "OWNER" not in home
    sitemap = (tmp_path / "site" / "sitemap.xml").read_text()
    assert "<loc>https://ada.github.io/attention/</loc>" in sitemap
    notebook = (tmp_path / "site" / "notebooks" / "nb" / "index.html").read_text()
    colab = "https://colab.research.google.com/github/ada/attention/blob/gh-pages/"
    assert f'<a href="{colab}notebooks/nb/nb.ipynb">Open in Colab</a>' in notebook
    assert '<a href="nb.ipynb" download>' in notebook


@pytest.mark.parametrize("variable", ["CI=true", "RELEASE=1"])
def test_a_ci_or_release_build_fails_on_a_placeholder_in_one_line(
    tmp_path: Path, variable: str
):
    _git_clone_of(tmp_path, "/srv/git/attention.git")  # a remote, not on GitHub
    name, value = variable.split("=")
    result = _build_tiny_site(
        tmp_path,
        {"index.md": "# Home\n"},
        env={name: value, "SITE_URL": "https://example.org/"},
        **LINKS,
    )
    assert result.returncode != 0
    first = next(line for line in result.stderr.splitlines() if "ERROR" in line)
    assert "mkdocs.yml: REPO_URL still the placeholder" in first, result.stderr
    assert "Traceback" not in result.stderr


def test_address_and_repository_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("SITE_URL", SUB)
    monkeypatch.setenv("REPO_URL", "https://github.com/someone/mha")
    config = load_config(str(ROOT / "mkdocs.yml"))
    assert config.site_url == SUB
    assert config.repo_url == "https://github.com/someone/mha"
    assert config.edit_uri == "edit/main/docs/"
    assert {"content.action.edit", "content.action.view"} <= set(
        config.theme["features"]
    )


def test_locally_the_site_is_at_the_address_make_serve_serves(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.delenv("SITE_URL", raising=False)
    assert load_config(str(ROOT / "mkdocs.yml")).site_url == "http://127.0.0.1:8000/"


def test_the_tiny_site_builds_when_every_link_holds(tmp_path: Path):
    result = _build_tiny_site(
        tmp_path,
        {"index.md": "# Home\n\n[other](other.md#part)\n", "other.md": "# Part\n"},
    )
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize(
    "link, complaint",
    [
        ("missing.md", "'missing.md', but the target is not found"),
        ("other.md#nowhere", "does not contain an anchor '#nowhere'"),
    ],
)
def test_a_broken_link_or_anchor_fails_the_strict_build(
    tmp_path: Path, link: str, complaint: str
):
    result = _build_tiny_site(
        tmp_path, {"index.md": f"# Home\n\n[see]({link})\n", "other.md": "# Part\n"}
    )
    assert result.returncode != 0
    assert complaint in result.stderr


def test_the_404_page_loads_its_assets_under_a_sub_path(tmp_path: Path):
    """A project's Pages site lives at /<repository>/: so must the 404 page's assets."""
    result = _build_tiny_site(tmp_path, {"index.md": "# Home\n"}, site_url=SUB)
    assert result.returncode == 0, result.stderr[-2000:]
    page = (tmp_path / "site" / "404.html").read_text()
    local = [
        url
        for url in re.findall(r'(?:href|src)="([^"#]+)"', page)
        if "://" not in url and not url.startswith("data:")
    ]
    assets = [url for url in local if "/assets/" in url]
    assert any(url.endswith("katex.min.css") for url in assets)
    assert any(url.endswith("scroll-focus.js") for url in assets)
    assert all(url.startswith("/sub/") for url in local), local


def test_materials_end_of_life_notice_is_not_silenced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """`make build` and `make serve` print it; NO_MKDOCS_2_WARNING would silence it."""
    assert "NO_MKDOCS_2_WARNING" not in (ROOT / "Makefile").read_text()
    monkeypatch.delenv("NO_MKDOCS_2_WARNING", raising=False)  # set by Material itself
    result = _build_tiny_site(tmp_path, {"index.md": "# Home\n"})
    assert "Material for MkDocs reaches end of life" in result.stderr


def test_every_page_links_its_source_and_the_home_page_the_repository(
    built_site: Path,
):
    repo = site_links().repo_url.rstrip("/")
    home = (built_site / "index.html").read_text()
    assert f'<a href="{repo}">the repository</a>' in home
    for source in ["index.md", "cricket.md", "notebooks/cricket_playground.py"]:
        stem = source.rsplit(".", 1)[0].removesuffix("index")
        html = (built_site / stem / "index.html").read_text()
        assert f'href="{repo}/edit/main/docs/{source}"' in html, source
        assert f'href="{repo}/raw/main/docs/{source}"' in html, source
        assert 'data-md-component="source"' not in html, source


def test_the_repository_link_differs_from_materials_only_by_fetching_nothing():
    """Material's script fetches a GitHub repository's stars and latest release from
    api.github.com for a link marked data-md-component="source"; ours is not marked."""
    partial = "partials/source.html"
    theirs = (Path(material.__file__).parent / "templates" / partial).read_text()
    ours = (ROOT / "docs" / "_theme" / partial).read_text()
    marker = ' data-md-component="source"'
    assert marker in theirs, "Material's source partial changed: re-copy it"
    body = theirs.split("-#}\n", 1)[1].replace(marker, "")
    assert ours.split("-#}\n", 1)[1] == body, "docs/_theme/partials/source.html drifted"


def test_the_nav_follows_the_home_pages_reading_order(built_site: Path):
    """Every page's Next button leads where the home page's reading order says: the
    order is generated from the nav (mha.pages.index), read here in the built page."""
    home = (built_site / "index.html").read_text()
    start = home.index('id="reading-order"')
    linked = re.findall(r'href="([\w-]+)/"', home[start : home.index("</ol>", start)])

    def pages(items: list) -> list[str]:  # flat or in sections
        found = []
        for item in items:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            found += pages(value) if isinstance(value, list) else [value]
        return found

    nav = [p.removesuffix(".md") for p in pages(CONFIG["nav"]) if "/" not in p]
    assert nav[1 : len(linked) + 1] == linked and len(linked) > 10


def test_the_nav_is_in_sections_the_core_path_first():
    """The nav's core path, ending with the exercises, then the deep dives; the home
    page's list is generated from these sections (the test above)."""
    titles = [next(iter(entry)) for entry in CONFIG["nav"]]
    assert titles[:3] == ["Home", "The core path", "Deep dives"]
    assert titles[3:] == [
        "Notation",
        "Evidence: every check",
        "Notebooks",
        "API reference",
    ]
    section = dict(next(iter(e.items())) for e in CONFIG["nav"] if isinstance(e, dict))
    core = [next(iter(entry.values())) for entry in section["The core path"]]
    dives = [next(iter(entry.values())) for entry in section["Deep dives"]]
    assert core[0] == "attention.md" and core[-1] == "exercises.md"
    assert core.index("decoding.md") == core.index("kv-cache.md") + 1
    assert {"circuits.md", "depth.md"} <= set(dives)


def _card(html: str) -> dict[str, str]:
    """The page's metadata for a shared link: ``og:…``, ``twitter:…``, description."""
    tags = re.findall(
        r'<meta (?:property|name)="((?:og|twitter):[\w:]+|description)" '
        r'content="([^"]*)"',
        html,
    )
    return {name: unescape(content) for name, content in tags}


@pytest.mark.parametrize(
    "page, image",
    [
        ("", "card.png"),  # the home page's first figure: the site's card
        ("cricket/", "cricket/card.png"),
        ("notation/", "card.png"),  # no figure: the site's card
        ("notebooks/cricket_playground/", "card.png"),
        ("position/", "position/card.png"),  # small multiples: their first panel
    ],
)
def test_a_shared_link_shows_the_pages_title_first_paragraph_and_figure(
    built_site: Path, page: str, image: str
):
    html = (built_site / page / "index.html").read_text()
    card = _card(html)
    assert card["og:title"] == card["twitter:title"]
    assert card["og:title"].endswith(CONFIG["site_name"])
    article = re.search(r"<article.*?</article>", html, re.S).group()
    # the page's own text: no figure, no notebook download link (docs/_theme/main.html)
    article = re.sub(
        r'<figure\b.*?</figure>|<p class="mha-download">.*?</p>',
        "",
        article,
        flags=re.S,
    )
    first = next(
        text
        for p in re.findall(r"<p\b[^>]*>(.*?)</p>", article, re.S)
        if (text := " ".join(unescape(re.sub(r"<[^>]+>", "", p)).split()))
    )
    description = card["og:description"]
    source = ROOT / "docs" / f"{page.rstrip('/') or 'index'}.md"
    front = source.read_text().split("\n---\n")[0] if source.exists() else ""
    if "\ndescription: " in front:  # the page's own one-line description
        assert description == yaml.safe_load(front.removeprefix("---\n"))["description"]
    else:
        assert first.startswith(description.removesuffix("…"))
    assert len(description) > 40
    assert card["description"] == card["twitter:description"] == description
    site = site_links().site_url
    assert card["og:image"] == card["twitter:image"] == site + image
    assert card["og:url"] == site + page
    assert card["twitter:card"] == "summary_large_image"
    assert (built_site / image).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
