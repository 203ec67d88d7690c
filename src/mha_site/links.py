"""The site's address and its repository's, from the environment or the git remote.

``SITE_URL`` and ``REPO_URL`` win when set (CI sets them from the Pages settings and
the repository). Otherwise a GitHub remote ``origin`` gives both: the repository
``https://github.com/<owner>/<repo>`` and its Pages site
``https://<owner>.github.io/<repo>/``. Without either, the build keeps the
placeholders of ``mkdocs.yml`` (the address `make serve` serves, a repository named
OWNER/REPOSITORY), and a release build (``RELEASE=1``) or a build on CI (``CI``)
refuses them.

```python
from mha_site.links import Links, resolve

links = resolve({}, "git@github.com:ada/attention.git")
assert links == Links(
    "https://github.com/ada/attention", "https://ada.github.io/attention/", ()
)
assert resolve({}, None).placeholders == ("REPO_URL", "SITE_URL")
assert resolve({"REPO_URL": "https://x.org/r", "SITE_URL": "https://x.org/"}, None) == (
    Links("https://x.org/r", "https://x.org/", ())
)
```
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

PLACEHOLDER_REPO = "https://github.com/OWNER/REPOSITORY"
PLACEHOLDER_SITE = "http://127.0.0.1:8000/"  # where `make serve` serves the site
PAGES_BRANCH = "gh-pages"  # the published site: main's at its root, previews in pr-<n>/
_GITHUB = re.compile(
    r"(?:https://(?:[^@/]+@)?github\.com/|(?:ssh://)?git@github\.com[:/])"
    r"(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+?)(?:\.git)?/?"
)


class Links(NamedTuple):
    """The repository's address, the site's, and which of the two are placeholders."""

    repo_url: str
    site_url: str
    placeholders: tuple[str, ...]


def from_remote(remote: str) -> tuple[str, str] | None:
    """``(repository, Pages site)`` of a GitHub remote's URL, else None.

    ```python
    from mha_site.links import from_remote

    site = "https://ada.github.io/attention/"
    assert from_remote("https://github.com/ada/attention.git")[1] == site
    assert from_remote("https://github.com/Ada/ada.github.io") == (
        "https://github.com/Ada/ada.github.io", "https://ada.github.io/"
    )
    assert from_remote("/srv/git/attention.git") is None
    ```
    """
    if not isinstance(remote, str):
        raise TypeError(f"remote must be a str, got {type(remote).__name__}")
    match = _GITHUB.fullmatch(remote.strip())
    if match is None:
        return None
    owner, repo = match["owner"], match["repo"]
    host = f"{owner.lower()}.github.io"
    site = f"https://{host}/" if repo.lower() == host else f"https://{host}/{repo}/"
    return f"https://github.com/{owner}/{repo}", site


def origin(root: Path) -> str | None:
    """The URL of ``root``'s git remote ``origin``, or None (no git, no remote).

    ```python
    import tempfile
    from pathlib import Path

    from mha_site.links import origin

    assert origin(Path(tempfile.mkdtemp())) is None  # not a repository
    ```
    """
    try:
        result = subprocess.run(
            ["git", "remote", "get-url", "origin"],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:  # no git on the machine
        return None
    if result.returncode != 0:
        return None
    return result.stdout.strip() or None


def resolve(environ: Mapping[str, str], remote: str | None) -> Links:
    """The links a build uses: ``environ``'s, else the GitHub ``remote``'s, else the
    placeholders (named in ``placeholders``)."""
    derived = from_remote(remote) if remote else None
    repo = environ.get("REPO_URL") or (derived[0] if derived else PLACEHOLDER_REPO)
    site = environ.get("SITE_URL") or (derived[1] if derived else PLACEHOLDER_SITE)
    placeholders = tuple(
        name
        for name, value, placeholder in [
            ("REPO_URL", repo, PLACEHOLDER_REPO),
            ("SITE_URL", site, PLACEHOLDER_SITE),
        ]
        if value == placeholder and not environ.get(name)
    )
    return Links(repo, site, placeholders)


def colab(repo_url: str, path: str) -> str | None:
    """Colab's address for the notebook ``path`` of the Pages branch of a GitHub
    repository (the published site, its .ipynb downloads included), else None.

    ```python
    from mha_site.links import colab

    url = colab("https://github.com/ada/attention", "notebooks/a/a.ipynb")
    assert url == (
        "https://colab.research.google.com/github/ada/attention/blob/gh-pages/"
        "notebooks/a/a.ipynb"
    )
    assert colab("https://gitlab.com/ada/attention", "a.ipynb") is None
    ```
    """
    if repo_url == PLACEHOLDER_REPO or from_remote(repo_url) is None:
        return None
    slug = repo_url.removeprefix("https://github.com/").strip("/")
    return f"https://colab.research.google.com/github/{slug}/blob/{PAGES_BRANCH}/{path}"


def must_be_real(environ: Mapping[str, str]) -> bool:
    """Whether a build in ``environ`` refuses placeholders: on CI or a release.

    ```python
    from mha_site.links import must_be_real

    assert must_be_real({"CI": "true"}) and must_be_real({"RELEASE": "1"})
    assert not must_be_real({}) and not must_be_real({"CI": "false", "RELEASE": "0"})
    ```
    """
    truthy = {"1", "true", "yes"}
    return any(environ.get(name, "").lower() in truthy for name in ("CI", "RELEASE"))
