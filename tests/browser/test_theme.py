"""The theme partial overridden in docs/_theme stays a copy of Material's own."""

from __future__ import annotations

from pathlib import Path

import material

ROOT = Path(__file__).resolve().parents[2]
PARTIAL = "partials/search.html"
# The one change made to the theme's partial: an accessible name for the dialog.
ORIGINAL = '<div class="md-search" data-md-component="search" role="dialog">'
FIXED = '<div class="md-search" data-md-component="search" role="dialog" aria-label="{{ lang.t(\'search\') }}">'


def _without_leading_comment(template: str) -> str:
    return template.split("-#}\n", 1)[1]


def test_search_partial_differs_from_materials_only_by_its_label() -> None:
    theirs = (Path(material.__file__).parent / "templates" / PARTIAL).read_text()
    ours = (ROOT / "docs" / "_theme" / PARTIAL).read_text()
    assert ORIGINAL in theirs, (
        "Material's search partial changed: re-copy it into docs/_theme"
    )
    assert _without_leading_comment(ours) == _without_leading_comment(theirs).replace(
        ORIGINAL, FIXED
    ), (
        "docs/_theme/partials/search.html drifted from Material's; re-copy and re-label it"
    )
