"""The heads explorer in headless Chromium: toggles, row arithmetic, keyboard, a11y.

The numbers the widget shows are compared with the core's, computed here from
`mha.worked.cat_mat` and `mha.worked.cricket` (not read back from the JSON).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest
from playwright.sync_api import Locator, Page, expect

from mha import split_heads
from mha.worked import cat_mat, cricket
from tests.browser.accessibility import COLOUR_RULES, blocking_violations
from tests.browser.recording import RecordedPage

PAGE = "heads-explorer/"
CRICKET_PAGE = "cricket/"
TOGGLES = {"1 head": 1, "2 heads": 2, "4 heads": 4}


def open_widget(new_page: Callable[..., RecordedPage], path: str = PAGE, **options):
    """A recorded page on ``path`` once its widget has drawn its heatmaps."""
    recorded = new_page(**options)
    recorded.goto(path)
    widget(recorded.page).locator("svg").first.wait_for()
    return recorded


def widget(page: Page) -> Locator:
    return page.locator(".mha-explorer").first


def arithmetic_numbers(page: Page) -> np.ndarray:
    """The arithmetic table's body: one row per key, columns q·k, score, exp, weight."""
    heading = widget(page).get_by_role("heading", name=re.compile("softmax"))
    expect(heading).to_be_visible()
    cells = page.locator(".mha-explorer table tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(td => td.textContent))"
    )
    return np.array(cells, dtype=float)


def core_row(n_heads: int, head: int, query: int) -> np.ndarray:
    """The core's (dots, scores, exps, weights) for one row, shape (4, n_keys)."""
    layer = cat_mat.layer(n_heads)
    x = cat_mat.features()
    _, weights = layer(x)
    q = split_heads(x @ layer.w_q, n_heads)[head, query]
    k = split_heads(x @ layer.w_k, n_heads)[head]
    dots = k @ q
    scores = dots / np.sqrt(layer.d_k)
    return np.array([dots, scores, np.exp(scores), weights[head, query]])


def assert_matches_core(shown: np.ndarray, expected: np.ndarray) -> None:
    dots, scores, exps, weights = shown.T
    assert np.allclose(dots, expected[0], atol=5e-5)
    assert np.allclose(scores, expected[1], atol=5e-5)
    assert np.allclose(exps, expected[2], rtol=1e-4, atol=5e-5)
    assert np.allclose(weights, expected[3], atol=5e-5)


def test_toggles_change_the_number_of_heatmaps(new_page) -> None:
    recorded = open_widget(new_page)
    page, root = recorded.page, widget(recorded.page)
    expect(page.get_by_role("button", name="4 heads")).to_have_attribute(
        "aria-pressed", "true"
    )
    for label in ["1 head", "2 heads", "4 heads", "1 head"]:
        page.get_by_role("button", name=label, exact=True).click()
        expect(root.locator("svg")).to_have_count(TOGGLES[label])
        for other in TOGGLES:
            pressed = "true" if other == label else "false"
            expect(
                page.get_by_role("button", name=other, exact=True)
            ).to_have_attribute("aria-pressed", pressed)
    assert any(url.endswith("/heads-explorer.json") for url in recorded.requests)
    hosts = {re.match(r"\w+://([^/:]+)", url).group(1) for url in recorded.requests}
    assert hosts == {"127.0.0.1"}, hosts
    assert not recorded.problems(), recorded.problems()


def test_click_and_enter_show_the_cores_softmax_arithmetic(new_page) -> None:
    recorded = open_widget(new_page)
    page = recorded.page
    # Click: "cat" (position 2) in the sink head of four.
    page.get_by_role("button", name="cat, position 2, head 4").click()
    heading = widget(page).get_by_role("heading", name=re.compile("softmax"))
    expect(heading).to_contain_text("“cat” (position 2)")
    assert_matches_core(arithmetic_numbers(page), core_row(4, 3, 1))
    # Enter: the second "the" (position 5) under one head; the two "the" differ.
    page.get_by_role("button", name="1 head", exact=True).click()
    row = page.get_by_role("button", name="the, position 5, head 1")
    expect(
        page.get_by_role("button", name=re.compile(r"^the, position"))
    ).to_have_count(2)
    row.focus()
    page.keyboard.press("Enter")
    expect(heading).to_contain_text("“the” (position 5)")
    assert_matches_core(arithmetic_numbers(page), core_row(1, 0, 4))
    scale = page.locator(".mha-explorer section p").first
    expect(scale).to_contain_text(f"{np.sqrt(cat_mat.D_MODEL):.4f}")
    output = page.locator(".mhx-output")
    expect(output).to_contain_text("32 numbers")
    assert not recorded.problems(), recorded.problems()


def test_keyboard_only(new_page) -> None:
    """Tab to the toggles, press one, Tab into a heatmap, arrow down, press Enter."""
    recorded = open_widget(new_page)
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
    page.keyboard.press("Tab")  # the first heatmap's current row
    assert page.evaluate(f"{focused}.getAttribute('aria-label')") == (
        "the, position 1, head 1"
    )
    assert page.evaluate(f"{focused}.matches(':focus-visible')")
    frame_stroke = page.evaluate(
        f"getComputedStyle({focused}.querySelector('.mhx-frame')).stroke"
    )
    assert frame_stroke != "none"  # the focus ring is drawn
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")  # same row, second head
    assert page.evaluate(f"{focused}.getAttribute('aria-label')") == (
        "on, position 4, head 2"
    )
    page.keyboard.press("Enter")
    heading = widget(page).get_by_role("heading", name=re.compile("softmax"))
    expect(heading).to_contain_text("“on” (position 4) in head 2 of 2")
    assert_matches_core(arithmetic_numbers(page), core_row(2, 1, 3))
    assert not recorded.problems(), recorded.problems()


def test_the_cricket_widget_shows_his_over_three_keys(new_page) -> None:
    recorded = open_widget(new_page, CRICKET_PAGE)
    page, root = recorded.page, widget(recorded.page)
    expect(root.get_by_role("button", name="2 heads")).to_have_attribute(
        "aria-pressed", "true"
    )
    expect(root.locator("svg")).to_have_count(2)
    root.get_by_role("button", name="his, position 2, head 1").click()
    shown = arithmetic_numbers(page)
    head_a = cricket.solve().head_a
    assert np.allclose(shown[:, 0], head_a.dots, atol=5e-5)
    assert np.allclose(shown[:, 3], head_a.weights, atol=5e-5)
    root.get_by_role("button", name="1 head", exact=True).click()
    expect(root.locator("svg")).to_have_count(1)
    expect(root.get_by_role("button", name="1 head", exact=True)).to_have_attribute(
        "aria-pressed", "true"
    )
    full = cricket.solve().full  # the selected row follows the toggle
    assert np.allclose(arithmetic_numbers(page)[:, 3], full.weights, atol=5e-5)
    assert not recorded.problems(), recorded.problems()


@pytest.mark.parametrize("path", [PAGE, CRICKET_PAGE])
def test_no_serious_accessibility_violation_while_in_use(new_page, path: str) -> None:
    """axe with the arithmetic shown: every rule in light mode, colours in dark."""
    recorded = open_widget(new_page, path)
    page = recorded.page
    widget(page).get_by_role("button", name=re.compile(", head 1$")).first.click()
    expect(
        widget(page).get_by_role("heading", name=re.compile("softmax"))
    ).to_be_visible()
    assert blocking_violations(page) == []
    # Material's dark palette is this attribute (what its palette toggle sets).
    page.evaluate("document.body.setAttribute('data-md-color-scheme', 'slate')")
    page.wait_for_timeout(600)  # the theme fades colours over 250 ms: let them settle
    label = widget(page).locator("text").first
    assert label.evaluate("t => getComputedStyle(t).fill") != "rgba(0, 0, 0, 0.87)"
    assert blocking_violations(page, COLOUR_RULES) == []


@pytest.mark.parametrize("path", [PAGE, CRICKET_PAGE])
def test_no_layout_break_at_375_pixels(new_page, path: str) -> None:
    recorded = new_page()
    page = recorded.page
    page.set_viewport_size({"width": 375, "height": 740})
    recorded.goto(path)
    root = widget(page)
    root.locator("svg").first.wait_for()
    root.get_by_role("button", name="1 head", exact=True).click()
    root.get_by_role("button", name=re.compile(", head 1$")).last.click()
    expect(
        widget(page).get_by_role("heading", name=re.compile("softmax"))
    ).to_be_visible()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, f"the page scrolls sideways: {width}px wide"
    for box in root.locator("svg, button, h3").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().right)"
    ):
        assert box <= 375, box
    assert not recorded.problems(), recorded.problems()
