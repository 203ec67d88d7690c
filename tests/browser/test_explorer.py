"""The heads explorer in headless Chromium, driven by mouse and keyboard at two widths.

The numbers the widget shows are compared with the core's, computed here from
`mha.worked.cat_mat` (not read back from the page's data).
After each selection the arithmetic panel's heading and the row's breakdown must be
on screen, with the selected row still on screen (the map is not scrolled away).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest
from playwright.sync_api import Locator, Page, expect

from mha import split_heads
from mha.worked import cat_mat
from tests.browser.accessibility import COLOUR_RULES, blocking_violations
from tests.browser.recording import RecordedPage

PAGE = "heads-explorer/"
WIDTHS = (1280, 375)
HEIGHT = 800
RELATIONS = ("neighbour", "part of speech", "same word", "sink")
MODES = {
    "1 head": [1],
    "2 heads": [2],
    "4 heads": [4],
    "1 and 4 heads side by side": [1, 4],
}


def open_widget(
    new_page: Callable[..., RecordedPage],
    path: str = PAGE,
    width: int = 1280,
    **options,
) -> RecordedPage:
    """A recorded page on ``path``, ``width`` x 800, once its widget has drawn."""
    recorded = new_page(**options)
    recorded.page.set_viewport_size({"width": width, "height": HEIGHT})
    recorded.goto(path)
    widget(recorded.page).locator("svg").first.wait_for()
    return recorded


def widget(page: Page) -> Locator:
    return page.locator(".mha-explorer").first


def panel(page: Page) -> Locator:
    return widget(page).get_by_role("region", name=re.compile("arithmetic"))


def row(page: Page, token: str, position: int, head: int, of: int) -> Locator:
    label = "1 head" if of == 1 else f"{of} heads"
    name = f"{token}, position {position}, H{head} of {label}"
    return widget(page).get_by_role("button", name=name, exact=True)


def in_viewport(page: Page, locator: Locator) -> bool:
    box = locator.bounding_box()
    size = page.viewport_size
    return (
        box is not None
        and box["y"] >= 0
        and box["y"] + box["height"] <= size["height"]
        and box["x"] >= 0
        and box["x"] + box["width"] <= size["width"]
    )


def assert_shown(page: Page, selected: Locator) -> None:
    """The panel's heading and breakdown are on screen, and so is the selected row."""
    heading = panel(page).get_by_role("heading")
    expect(heading).to_contain_text("arithmetic")
    breakdown = panel(page).locator("table")
    assert in_viewport(page, heading), heading.bounding_box()
    assert in_viewport(page, breakdown), breakdown.bounding_box()
    wrapper = panel(page).locator(".mhx-scroll")  # nothing hidden to the side
    assert wrapper.evaluate("e => e.scrollWidth <= e.clientWidth")
    header = page.locator(".md-header").bounding_box()
    top = selected.bounding_box()["y"]
    assert header["y"] + header["height"] <= top <= page.viewport_size["height"], top


def to_bottom(page: Page, locator: Locator) -> None:
    """Scroll so that ``locator`` sits just above the bottom edge of the screen."""
    locator.evaluate(
        "el => window.scrollBy(0, el.getBoundingClientRect().bottom - innerHeight + 4)"
    )
    assert in_viewport(page, locator)


def smallest_text(root: Locator) -> float:
    """The smallest rendered font size (px) of the maps' text: size x SVG scale."""
    return root.locator("svg").evaluate_all(
        """svgs => Math.min(...svgs.map(s => {
            const scale = s.getBoundingClientRect().width / s.viewBox.baseVal.width;
            const t = s.querySelector('text');
            return parseFloat(getComputedStyle(t).fontSize) * scale;
        }))"""
    )


def breakdown(page: Page) -> tuple[list[str], np.ndarray]:
    """The breakdown table: its column names and its numbers (one row per key).

    The first column of numbers, "a+b+...", is split into one column per term.
    """
    table = panel(page).locator("table")
    columns = table.locator("thead th").all_text_contents()
    cells = table.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(td => td.textContent))"
    )
    numbers = [
        [float(c.replace(",", "")) for c in line[0].split("+") + line[1:]]
        for line in cells
    ]
    return columns, np.array(numbers)


def core_row(n_heads: int, head: int, query: int, sink: float | None = None) -> dict:
    """The core's contributions, dots, scores, exps and weights of one row."""
    strength = cat_mat.strengths(sink)
    x = cat_mat.features()
    p = cat_mat.projections(strength)
    q, k = x @ p.w_q, x @ p.w_k
    parts = split_heads(q, 4) @ np.swapaxes(split_heads(k, 4), -1, -2)  # (4, 8, 8)
    layer = cat_mat.layer(n_heads, strength)
    _, weights = layer(x)
    group = 4 // n_heads
    dots = parts[head * group : (head + 1) * group, query].sum(axis=0)
    scores = dots / np.sqrt(layer.d_k)
    return {
        "parts": parts[head * group : (head + 1) * group, query],
        "dots": dots,
        "scores": scores,
        "exps": np.exp(scores),
        "weights": weights[head, query],
    }


def assert_matches_core(numbers: np.ndarray, expected: dict) -> None:
    n_parts = len(expected["parts"])
    assert np.allclose(numbers[:, :n_parts].T, expected["parts"], atol=5e-3)
    dots, scores, exps, weights = numbers[:, n_parts:].T
    assert np.allclose(dots, expected["dots"], atol=5e-3)
    # shown to 3 decimals (and stored to 4): within 6e-4 of the core
    assert np.allclose(scores, expected["scores"], atol=6e-4)
    assert np.allclose(exps, expected["exps"], rtol=5e-3, atol=6e-4)
    assert np.allclose(weights, expected["weights"], atol=6e-4)


@pytest.mark.parametrize("width", WIDTHS)
def test_a_click_shows_the_rows_arithmetic_on_screen(new_page, width: int) -> None:
    """Mouse: cat in the sink head of four, then "." in the one head beside it."""
    recorded = open_widget(new_page, width=width)
    page = recorded.page
    region = panel(page)
    expect(region).to_have_attribute("aria-live", "polite")
    expect(
        widget(page).get_by_role("button", name="1 and 4 heads side by side")
    ).to_have_attribute("aria-pressed", "true")
    expect(widget(page).locator("svg")).to_have_count(5)  # small multiples: 1 + 4
    least = {1280: 9, 375: 7}[width]  # px: the figures' legibility rule
    assert smallest_text(widget(page)) >= least, smallest_text(widget(page))
    target = row(page, "cat", 1, 3, 4)
    to_bottom(page, target)  # the row at the bottom of the screen: the panel is below
    target.click()
    expect(region.get_by_role("heading")).to_contain_text("“cat” (position 1) in H3")
    assert_shown(page, target)
    columns, numbers = breakdown(page)
    assert columns == ["key", "sink", "q·k", "score", "exp", "weight"]
    assert_matches_core(numbers, core_row(4, 3, 1))
    for name in RELATIONS:  # the other three are named: they live in other heads
        expect(region).to_contain_text(name)
    # cat -> ".": neighbour 0 + part of speech 0 + same word 0 + sink 24
    merged = row(page, "cat", 1, 0, 1)
    merged.click()
    assert_shown(page, merged)
    columns, numbers = breakdown(page)
    assert columns == [
        "key",
        " + ".join(RELATIONS),
        "q·k",
        "score",
        "exp",
        "weight",
    ]
    assert numbers[-1, :4].tolist() == [0, 0, 0, cat_mat.STRENGTH["sink"]]
    assert_matches_core(numbers, core_row(1, 0, 1))
    expect(region).to_contain_text(
        f"√{cat_mat.D_MODEL} = {np.sqrt(cat_mat.D_MODEL):.3f}"
    )
    assert not recorded.problems(), recorded.problems()
    assert not [u for u in recorded.requests if "explorer" in u and u.endswith(".json")]


@pytest.mark.parametrize("width", WIDTHS)
def test_the_keyboard_alone_drives_the_widget(new_page, width: int) -> None:
    """Tab to a toggle, press it, Tab into a map, arrows, Enter: arithmetic on screen."""
    recorded = open_widget(new_page, width=width)
    page = recorded.page
    focused = "document.activeElement"
    for _ in range(300):
        page.keyboard.press("Tab")
        if page.evaluate(f"{focused}.textContent") == "2 heads":
            break
    else:
        pytest.fail("Tab never reached the '2 heads' button")
    page.keyboard.press("Enter")
    expect(widget(page).locator("svg")).to_have_count(2)
    page.keyboard.press("Tab")  # "4 heads"
    page.keyboard.press("Tab")  # side by side
    page.keyboard.press("Tab")  # the slider
    page.keyboard.press("Tab")  # the first map's current row
    label = f"{focused}.getAttribute('aria-label')"
    assert page.evaluate(label) == "the, position 0, H0 of 2 heads"
    assert page.evaluate(f"{focused}.matches(':focus-visible')")
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")  # same row, the next head
    assert page.evaluate(label) == "on, position 3, H1 of 2 heads"
    page.keyboard.press("Enter")
    heading = panel(page).get_by_role("heading")
    expect(heading).to_contain_text("“on” (position 3) in H1 of 2 heads")
    assert_shown(page, row(page, "on", 3, 1, 2))
    columns, numbers = breakdown(page)
    assert columns[1] == "same word + sink"
    assert_matches_core(numbers, core_row(2, 1, 3))
    assert not recorded.problems(), recorded.problems()


def test_switching_the_head_count_keeps_the_selected_row(new_page) -> None:
    recorded = open_widget(new_page)
    page = recorded.page
    row(page, "warm", 5, 2, 4).click()  # the same-word head of four
    heading = panel(page).get_by_role("heading")
    for label, counts in MODES.items():
        widget(page).get_by_role("button", name=label, exact=True).click()
        expect(widget(page).locator("svg")).to_have_count(sum(counts))
        expect(heading).to_contain_text("“warm” (position 5)")
        for other in MODES:
            expect(
                widget(page).get_by_role("button", name=other, exact=True)
            ).to_have_attribute("aria-pressed", str(other == label).lower())
    # 1 and 4 side by side: back on the same-word head, the row still selected
    expect(heading).to_contain_text("H2 of 4 heads")
    assert breakdown(page)[0][1] == "same word"
    selected = widget(page).locator('[aria-current="true"]')
    expect(selected).to_have_attribute("aria-label", "warm, position 5, H2 of 4 heads")
    # "warm" occurs once: its same-word row spreads its weight evenly
    _, numbers = breakdown(page)
    assert np.allclose(numbers[:, -1], 1 / len(cat_mat.TOKENS), atol=6e-4)
    assert not recorded.problems(), recorded.problems()


def test_the_sink_slider_shows_when_the_full_stop_stops_dominating(new_page) -> None:
    recorded = open_widget(new_page)
    page = recorded.page
    slider = widget(page).get_by_role("slider", name="Sink strength")
    summary = widget(page).locator(".mhx-summary")
    row(page, "sat", 2, 0, 1).click()
    expect(slider).to_have_attribute("aria-valuetext", "24")
    expect(summary).to_contain_text("is dominated by")
    slider.focus()
    for sink in (16, 8, 0):
        page.keyboard.press("ArrowLeft")
        expect(slider).to_have_attribute("aria-valuetext", str(sink))
        expect(summary).to_contain_text("not dominated by")
        _, numbers = breakdown(page)  # the selected row follows the slider
        assert_matches_core(numbers, core_row(1, 0, 2, float(sink)))
    page.keyboard.press("End")
    expect(slider).to_have_attribute("aria-valuetext", "32")
    expect(summary).to_contain_text("in 8 of 8 rows")
    assert_matches_core(breakdown(page)[1], core_row(1, 0, 2, 32.0))
    assert not recorded.problems(), recorded.problems()


def _contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two CSS colours ``rgb(r, g, b)``."""

    def luminance(css: str) -> float:
        rgb = np.array([float(v) for v in re.findall(r"[\d.]+", css)[:3]]) / 255
        lin = np.where(rgb <= 0.03928, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
        return float(lin @ [0.2126, 0.7152, 0.0722])

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("width", WIDTHS)
def test_every_cell_prints_its_weight_legibly(new_page, width: int) -> None:
    """The four heads' maps: each cell's printed weight is the core's, to 2 decimals,
    in black or white as legible on its colour, at the legibility rule's size."""
    recorded = open_widget(new_page, width=width)
    root = widget(recorded.page)
    root.get_by_role("button", name="4 heads", exact=True).click()
    expect(root.locator("svg")).to_have_count(4)
    cells = root.locator("svg").evaluate_all(
        """svgs => svgs.map(s => [...s.querySelectorAll('text.mhx-value')].map(t => ({
            text: t.textContent,
            px: parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a,
            ink: getComputedStyle(t).fill,
            cell: getComputedStyle(t.previousElementSibling).fill,
        })))"""
    )
    _, weights = cat_mat.layer(4)(cat_mat.features())  # (4 heads, 8, 8)
    n = len(cat_mat.TOKENS)
    for h, shown in enumerate(cells):
        printed = np.array([float(c["text"]) for c in shown]).reshape(n, n)
        assert np.allclose(printed, weights[h], atol=0.0051)
        assert all(c["text"] == f"{float(c['text']):.2f}" for c in shown)
    flat = [c for shown in cells for c in shown]
    least = {1280: 9, 375: 7}[width]  # px: the figures' legibility rule
    assert min(c["px"] for c in flat) >= least, min(c["px"] for c in flat)
    assert min(_contrast(c["ink"], c["cell"]) for c in flat) >= 4.5
    assert not recorded.problems(), recorded.problems()


def test_no_serious_accessibility_violation_while_in_use(new_page) -> None:
    """axe on the widget with the arithmetic shown: every rule in light mode, colours
    in dark (the page as a whole, before use, is audited by test_pages.py)."""
    recorded = open_widget(new_page)
    page = recorded.page
    widget(page).get_by_role(
        "button", name=re.compile(r", H0 of 1 head$")
    ).first.click()
    expect(panel(page).locator("table")).to_be_visible()
    assert blocking_violations(page, within=".mha-explorer") == []
    # Material's dark palette is this attribute (what its palette toggle sets).
    page.evaluate("document.body.setAttribute('data-md-color-scheme', 'slate')")
    # the theme fades colours over 250 ms: wait until every fade has run its course
    page.wait_for_function(
        "() => !document.getAnimations().some((a) => a instanceof CSSTransition)"
    )
    label = widget(page).locator("text").first
    assert label.evaluate("t => getComputedStyle(t).fill") != "rgba(0, 0, 0, 0.87)"
    assert blocking_violations(page, COLOUR_RULES, within=".mha-explorer") == []


def test_no_layout_break_and_legible_text_at_375_pixels(new_page) -> None:
    recorded = open_widget(new_page, width=375)
    page, root = recorded.page, widget(recorded.page)
    root.get_by_role("button", name="1 head", exact=True).click()
    first = root.get_by_role("button", name=re.compile(r", H0 of 1 head$")).first
    first.scroll_into_view_if_needed()
    first.click()  # the top row of the one large map: the panel is furthest away
    assert_shown(page, first)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, f"the page scrolls sideways: {width}px wide"
    for right in root.locator("svg, button, h3, table").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().right)"
    ):
        assert right <= 375, right
    root.get_by_role("button", name=re.compile("side by side")).click()
    assert smallest_text(root) >= 7, smallest_text(root)
    assert not recorded.problems(), recorded.problems()
