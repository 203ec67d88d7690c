"""The every-head widgets in headless Chromium: all-MiniLM-L6-v2's 72 heads on the real
heads page and SmolLM2-135M-Instruct's 270 on the real-model page, at 1280 x 800 and
375 x 800, driven by mouse and keyboard.

What the maps show is compared with the core's models run afresh here (not read back
from the page's data): each weight is shown as round(255 w) / 255 to 2 decimals.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest
from playwright.sync_api import Locator, Page, expect

from mha.experiments import head_grid as hg
from mha.pages import real_gqa_model, real_heads
from mha.pretrained import minilm, smollm2
from mha.support.page import WIDGET_BYTES
from tests.browser.recording import RecordedPage

PAGES = {"real-heads/": "minilm", "real-gqa-model/": "smollm2"}
WIDTHS = (1280, 375)
HEIGHT = 800
SEEDED = 5  # heads per grid, drawn with a seeded generator
MIN_TEXT = {1280: 9, 375: 7}  # px


@pytest.fixture(scope="module")
def widgets() -> dict[str, hg.Widget]:
    return {
        "real-heads/": real_heads.page().every,
        "real-gqa-model/": real_gqa_model.page().every,
    }


@pytest.fixture(scope="module")
def core() -> Callable[[str, str], np.ndarray]:
    """``core(path, text)``: the model's weights ``(layers, heads, n, n)`` on text."""
    found: dict[tuple[str, str], np.ndarray] = {}

    def weights(path: str, text: str) -> np.ndarray:
        if (path, text) not in found:
            if PAGES[path] == "minilm":
                found[path, text] = minilm.load().attentions(text)[1]
            else:
                model = smollm2.load()
                found[path, text] = model.attentions(model.encode(text))
        return found[path, text]

    return weights


def open_widget(new_page: Callable[..., RecordedPage], path: str, width: int):
    recorded = new_page()
    recorded.page.set_viewport_size({"width": width, "height": HEIGHT})
    recorded.goto(path)
    grid(recorded.page).locator(".mhg-head").first.wait_for()
    return recorded


def grid(page: Page) -> Locator:
    return page.locator(".mha-heads")


def shown(weights: np.ndarray, causal: bool) -> list[list[str]]:
    """What a map's cells should read: each weight to 8 bits, printed to 2 decimals;
    nothing where a causal query cannot look."""
    n = weights.shape[-1]
    return [
        [
            "" if causal and k > q else f"{np.rint(weights[q, k] * 255) / 255:.2f}"
            for k in range(n)
        ]
        for q in range(n)
    ]


def map_cells(page: Page) -> list[list[str]]:
    return (
        grid(page)
        .locator("table.mhg-map tbody tr")
        .evaluate_all(
            "rows => rows.map(r => [...r.querySelectorAll('td')].map(td => td.textContent))"
        )
    )


def assert_head_shown(page: Page, widget: hg.Widget, core_weights, layer, head):
    data = widget.data
    button = grid(page).get_by_role(
        "button", name=f"layer {layer} head {head}", exact=True
    )
    expect(button).to_have_attribute("aria-pressed", "true")
    assert grid(page).locator('.mhg-head[aria-pressed="true"]').count() == 1
    kind = data["kindNames"][data["kinds"][layer][head]]
    panel = grid(page).get_by_role("region", name=re.compile(f"L{layer}H{head}:"))
    expect(panel).to_contain_text(f"Kind: {kind}.")
    cells = map_cells(page)
    w = core_weights[layer, head]
    assert cells == shown(w, data["causal"])
    values = np.array([[float(c) if c else np.nan for c in row] for row in cells])
    seen = ~np.isnan(values)
    assert np.abs(values[seen] - w[seen]).max() <= 0.005 + 1 / 510 + 1e-9


def assert_arcs(page: Page, widget: hg.Widget, core_weights, layer, head, query):
    lines = grid(page).locator(f'g.mhg-lines[data-query="{query}"] line')
    expect(lines.first).to_be_attached()
    weights = lines.evaluate_all("ls => ls.map(l => l.dataset.weight)")
    assert (
        weights
        == shown(core_weights[layer, head], widget.data["causal"])[query][
            : len(weights)
        ]
    )
    assert len(weights) == (query + 1 if widget.data["causal"] else len(weights))


def check_every_button(page: Page, widget: hg.Widget, width: int) -> None:
    """Every head's button: its accessible name, its kind and letter, in one pass."""
    data = widget.data
    snapshot = grid(page).locator(".mhg-grid").aria_snapshot()
    names = re.findall(r'button "([^"]+)"', snapshot)
    buttons = (
        grid(page)
        .locator(".mhg-head")
        .evaluate_all(
            "bs => bs.map(b => [+b.dataset.layer, +b.dataset.head, b.dataset.kind])"
        )
    )
    expected = {
        (layer, head, data["kindNames"][data["kinds"][layer][head]])
        for layer in range(data["layers"])
        for head in range(data["heads"])
    }
    assert len(buttons) == len(expected) == widget.n_heads
    assert {tuple(b) for b in buttons} == expected
    assert sorted(names) == sorted(f"layer {lr} head {h}" for lr, h, _ in buttons)
    smallest = grid(page).evaluate(
        """root => Math.min(...[...root.querySelectorAll('*')]
            .filter(e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
            .map(e => parseFloat(getComputedStyle(e).fontSize)))"""
    )
    assert smallest >= MIN_TEXT[width]


def check_seeded_heads(page: Page, widget: hg.Widget, core, path: str) -> None:
    """Five seeded heads chosen with the mouse on the first sentence, then with the
    keyboard (Enter or Space) on another, then a move with an arrow key."""
    data = widget.data
    rng = np.random.default_rng(17)
    heads = [
        (int(rng.integers(data["layers"])), int(rng.integers(data["heads"])))
        for _ in range(SEEDED)
    ]
    sentence = data["sentences"][0]["text"]
    for layer, head in heads:
        name = f"layer {layer} head {head}"
        grid(page).get_by_role("button", name=name, exact=True).click()
        assert_head_shown(page, widget, core(path, sentence), layer, head)
    other = data["sentences"][3]["text"]
    grid(page).get_by_label("Sentence").select_option(label=other)
    for layer, head in reversed(heads):
        name = f"layer {layer} head {head}"
        grid(page).get_by_role("button", name=name, exact=True).focus()
        page.keyboard.press("Enter" if layer % 2 else "Space")
        assert_head_shown(page, widget, core(path, other), layer, head)
    # arrow keys move between heads (along a row of MiniLM's grid, down a column of
    # SmolLM2's, whose columns are its layers); Enter chooses
    along = data["layers"] <= data["heads"]
    forward = head + 1 < data["heads"]
    keys = ("ArrowRight", "ArrowLeft") if along else ("ArrowDown", "ArrowUp")
    page.keyboard.press(keys[0] if forward else keys[1])
    page.keyboard.press("Enter")
    moved = head + 1 if forward else head - 1
    assert_head_shown(page, widget, core(path, other), layer, moved)


def check_arcs(page: Page, widget: hg.Widget, core, path: str) -> None:
    """A query's arcs appear when the mouse is over it, and when it has the focus."""
    layer, head = widget.data["layers"] - 1, widget.data["heads"] - 1
    name = f"layer {layer} head {head}"
    grid(page).get_by_role("button", name=name, exact=True).click()
    grid(page).get_by_label("Sentence").select_option(index=0)
    weights = core(path, widget.data["sentences"][0]["text"])
    queries = grid(page).locator(".mhg-query")
    assert grid(page).locator("g.mhg-lines line").count() == 0  # none before
    queries.nth(2).hover()  # the mouse
    assert_arcs(page, widget, weights, layer, head, 2)
    queries.nth(4).focus()  # the keyboard: Tab moves on to the next query
    assert_arcs(page, widget, weights, layer, head, 4)
    page.keyboard.press("Tab")
    assert_arcs(page, widget, weights, layer, head, 5)


def check_off_screen_cue(page: Page, widget: hg.Widget) -> bool:
    """A grid wider than the screen says, above it, which columns are out of view,
    follows the scrolling, and takes the keyboard's focus; a grid that fits says
    nothing. Whether the grid was wider than the screen."""
    wrap, hint = grid(page).locator(".mhg-gridwrap"), grid(page).locator(".mhg-hint")
    if not wrap.evaluate("e => e.scrollWidth > e.clientWidth + 1"):
        assert not hint.is_visible() and wrap.get_attribute("tabindex") is None
        return False
    assert wrap.get_attribute("tabindex") == "0"
    assert wrap.get_attribute("aria-describedby") == hint.get_attribute("id")
    data = widget.data
    unit, last = ("layers", data["layers"] - 1)
    if data["layers"] <= data["heads"]:  # a column per head
        unit, last = ("heads", data["heads"] - 1)
    wrap.evaluate("e => { e.scrollLeft = 0; }")
    first_hidden = wrap.evaluate(
        """(e) => [...e.querySelectorAll('.mhg-axis')].findIndex(
            (a) => a.getBoundingClientRect().right > e.getBoundingClientRect().right + 1)"""
    )
    expect(hint).to_have_text(
        f"{unit.capitalize()} {first_hidden} to {last} are off screen: "
        "scroll the grid sideways →"
    )
    wrap.evaluate("e => { e.scrollLeft = e.scrollWidth; }")  # to the last column
    expect(hint).to_have_text(
        re.compile(rf"^← {unit} 0 to \d+ are off screen to the left$")
    )
    return True


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", PAGES)
def test_drive_the_grid(new_page, widgets, core, path, width):
    recorded = open_widget(new_page, path, width)
    check_every_button(recorded.page, widgets[path], width)
    check_seeded_heads(recorded.page, widgets[path], core, path)
    check_arcs(recorded.page, widgets[path], core, path)
    wider = check_off_screen_cue(recorded.page, widgets[path])
    assert wider == (path == "real-gqa-model/" and width < 1280)  # 30 layers at 375
    assert not recorded.problems()


@pytest.mark.parametrize("path", PAGES)
def test_the_page_and_its_data_are_within_budget(built_site, widgets, path):
    html = (built_site / path / "index.html").read_text(encoding="utf-8")
    embedded = re.findall(r'class="mhg-data">(.*?)</script>', html, re.S)
    assert [len(e.encode()) for e in embedded] == [widgets[path].nbytes]
    assert widgets[path].nbytes <= WIDGET_BYTES
    assert len(html.encode()) <= 1_000_000


def test_it_works_from_a_file(browser, built_site) -> None:
    page = browser.new_page()
    try:
        page.goto((built_site / "real-gqa-model" / "index.html").as_uri())
        page.get_by_role("button", name="layer 29 head 8", exact=True).click()
        expect(page.locator(".mhg-title")).to_contain_text("L29H8")
    finally:
        page.close()
