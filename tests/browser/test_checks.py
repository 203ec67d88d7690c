"""The browser checks themselves catch what they look for (planted faults)."""

from __future__ import annotations

import re

import pytest

from tests.browser.accessibility import (
    BLOCKING_IMPACTS,
    COLOUR_RULES,
    blocking_violations,
    contrast_ratio,
    link_contrast_violations,
    page_violations,
    token_contrast_violations,
)
from tests.browser.chromium import require_chromium
from tests.browser.conftest import NEW_PAGE
from tests.browser.rendering import math_report


def test_missing_chromium_skips_locally_and_fails_under_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install chromium"):
        require_chromium()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        require_chromium()


def test_recording_catches_errors_and_other_hosts(new_page: NEW_PAGE) -> None:
    page = new_page()
    page.goto("")
    assert not page.problems()
    # The request fails at the browser's closed proxy before it reaches any network.
    page.page.evaluate(
        """async () => {
            console.error("planted error");
            try { await fetch("https://example.invalid/planted.js"); } catch {}
        }"""
    )
    page.goto("no-such-page/")
    problems = "\n".join(page.problems())
    assert "planted error" in problems
    assert "request to another host: https://example.invalid/planted.js" in problems
    assert "HTTP error: 404" in problems


def test_math_check_catches_raw_tex(new_page: NEW_PAGE) -> None:
    page = new_page()
    page.goto("")
    page.page.evaluate(
        r"""() => document.querySelector("article").insertAdjacentHTML(
            "beforeend",
            '<p><span class="arithmatex">\\(x^2\\)</span> and \\sqrt{d_k}</p>')"""
    )
    problems = "\n".join(math_report(page.page).problems())
    assert "not rendered: \\(x^2\\)" in problems
    assert "raw TeX in the text: \\(x^2\\)" in problems
    assert "raw TeX in the text: and \\sqrt{d_k}" in problems


def test_axe_catches_a_missing_alt_text_and_low_contrast(new_page: NEW_PAGE) -> None:
    page = new_page(color_scheme="dark")
    page.goto("")
    page.page.evaluate(
        """() => document.querySelector("article").insertAdjacentHTML(
            "beforeend",
            '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">'
            + '<p style="color: #777; background: #666">faint</p>')"""
    )
    # checked within the page's text, where they were planted (as a widget's test does)
    assert any(
        line.startswith("image-alt (critical)")
        for line in blocking_violations(page.page, within="article")
    )
    colour = blocking_violations(page.page, COLOUR_RULES, within="article")
    assert colour and all(
        line.startswith("color-contrast (serious)") for line in colour
    )
    # and the page visits' check finds both, the contrast by distinct colour
    visits = page_violations(page.page)
    assert any(line.startswith("image-alt (critical)") for line in visits)
    assert any(
        line.startswith("text contrast") and "'faint'" in line for line in visits
    )


def test_a_rule_left_out_finds_nothing_that_blocks(new_page: NEW_PAGE) -> None:
    """axe's rules of "minor" or "moderate" impact are not run (accessibility._RUN):
    on a page planted with their faults, and one that blocks, axe with every rule
    finds them all, none of them blocking, and blocks on what the checks find."""
    page = new_page()
    page.goto("")
    page.page.evaluate(
        """() => {
            document.querySelector("article").insertAdjacentHTML("beforeend",
                '<h5>levels skipped</h5><h3></h3>'  // heading-order, empty-heading
                + '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">');  // image-alt
            document.body.insertAdjacentHTML("beforeend",
                '<p>outside every landmark</p><main>a second main</main>');
        }"""
    )
    checked = blocking_violations(page.page)  # injects axe, leaves the rules out
    every_rule = page.page.evaluate(
        """() => axe.run(document, {resultTypes: ["violations"]}).then((results) =>
            results.violations.map((v) => [v.id, v.impact, v.nodes.length]))"""
    )
    blocking = {rule: n for rule, impact, n in every_rule if impact in BLOCKING_IMPACTS}
    not_blocking = {rule for rule, impact, _ in every_rule if rule not in blocking}
    planted = {"heading-order", "empty-heading", "region", "landmark-no-duplicate-main"}
    assert planted <= not_blocking
    assert blocking == {"image-alt": 1}
    assert [line.split(" ")[0] for line in checked] == ["image-alt"]


# Planted on a dark page: text below 4.5:1, large text below 3:1, large text above it,
# and faint text nobody sees.
PLANTED_TEXT = {
    "faint": "color: #777; background: #666",
    "large and faint": "color: #777; background: #666; font-size: 24px",
    "large enough": "color: #999; background: #444; font-size: 24px",  # 3.41:1
    "unseen": "color: #777; background: #666; opacity: 0",
}


def test_the_dark_check_finds_the_faint_text_axe_finds(new_page: NEW_PAGE) -> None:
    page = new_page(color_scheme="dark")
    page.goto("")
    assert page_violations(page.page, COLOUR_RULES) == []
    page.page.evaluate(
        """(planted) => document.querySelector("article").insertAdjacentHTML(
            "beforeend",
            Object.entries(planted).map(([text, style]) =>
                `<p style="${style}">${text}</p>`).join(""))""",
        PLANTED_TEXT,
    )
    faint = {"'faint'", "'large and faint'"}
    found = page_violations(page.page, COLOUR_RULES)
    assert {line.split("e.g. ")[1].split(")")[0] for line in found} == faint
    assert all(line.startswith("text contrast") for line in found)
    axe = blocking_violations(page.page, ("color-contrast",), within="article")
    expected = sorted(line.rpartition("Expected contrast ratio of ")[2] for line in axe)
    assert expected == ["3:1", "4.5:1"]  # the same two, the large one held to 3:1


# The colours of a link and of the text of the block it is in.
_LINK_AND_TEXT = """(selector) => {
    const link = document.querySelector(selector);
    let block = link.parentElement;
    while (getComputedStyle(block).display.startsWith("inline"))
        block = block.parentElement;
    return [getComputedStyle(link).color, getComputedStyle(block).color];
}"""


def test_the_link_check_finds_the_links_axe_finds(new_page: NEW_PAGE) -> None:
    """Without their underline (docs/assets/css/site.css), the theme's links stand
    under 3:1 from the text around them: the dark visits' check (no axe run) finds
    the same links as axe's link-in-text-block, by their pair of colours."""
    page = new_page(color_scheme="dark")
    page.goto("")  # the home page: 22 links in its text, in two colours of text
    assert link_contrast_violations(page.page) == []
    page.page.add_style_tag(
        content=".md-typeset a { text-decoration: none !important; }"
    )
    ours = link_contrast_violations(page.page)
    assert ours and all(line.startswith("link contrast") for line in ours)
    assert page_violations(page.page, COLOUR_RULES) == ours
    axe = blocking_violations(page.page, ("link-in-text-block",))
    assert axe and all(line.startswith("link-in-text-block (serious)") for line in axe)
    at = re.compile(r"; at (.+?): ")  # the element axe names
    axe_pairs = {
        tuple(page.page.evaluate(_LINK_AND_TEXT, at.search(line)[1])) for line in axe
    }
    colours = re.compile(r": (rgba?\(.+?\)) in text of (rgba?\(.+?\)) \(e\.g\.")
    our_pairs = {colours.search(line).groups() for line in ours}
    assert our_pairs == axe_pairs


def test_contrast_ratio_follows_wcag() -> None:
    assert round(contrast_ratio("rgb(0, 0, 0)", ["rgb(255, 255, 255)"]), 2) == 21.0
    assert (
        round(contrast_ratio("rgb(119, 119, 119)", ["rgb(255, 255, 255)"]), 2) == 4.48
    )
    # half-transparent black on white is a mid grey; a transparent layer changes nothing
    grey = contrast_ratio(
        "rgba(0, 0, 0, 0.5)", ["rgb(255, 255, 255)", "rgba(0, 0, 0, 0)"]
    )
    mid_grey = contrast_ratio("rgb(127.5, 127.5, 127.5)", ["rgb(255, 255, 255)"])
    assert round(grey, 6) == round(mid_grey, 6)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_faint_code_token_or_math_colour_is_caught(
    new_page: NEW_PAGE, scheme: str
) -> None:
    page = new_page(color_scheme=scheme)
    page.goto("multi-head/")
    # the page as it is passes (axe's part is test_pages.py's, in both schemes)
    assert token_contrast_violations(page.page) == []
    page.page.add_style_tag(
        content=".highlight .kn, .katex .mord { color: rgba(128, 128, 128, 0.3) "
        "!important; }"
    )
    found = blocking_violations(page.page, COLOUR_RULES)
    assert found and all(
        line.startswith(("code contrast", "math contrast")) for line in found
    )
    assert any(
        line.startswith("code contrast") and "kn, e.g. 'import'" in line
        for line in found
    )
    assert any(line.startswith("math contrast") and "mord" in line for line in found)
