"""The evidence beside each guarded sentence, in headless Chromium.

Every page: its markers are exactly the facts its Markdown states as sentences, in
order (a sentence that picks its words by its own fact among them, its popover
saying whether the fact holds), and each popover holds its fact's ``says`` and
``values`` (read from the built HTML, as the browser decodes it). One page, in depth: the popover opens on keyboard
focus and on a tap, its link is reachable by Tab, Escape closes it and
``aria-expanded`` follows; the button is named and described; axe finds nothing
serious in it, open, in either scheme; opening it shifts no layout; it stays out of
print and out of the search index. A printed number, the same way: hovering or
tapping it shows the attribute it was read from, the function that computed it and,
for a study's value, its cache entry's content hash and sealed CPU seconds; it is no
tab stop, and the page's foot lists the same for the keyboard.
"""

from __future__ import annotations

import contextlib
import html.parser
import importlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from mha.support import progress
from mha.support.cache import cache_dir
from mha_site.facts import STATED, choosing
from tests.browser.accessibility import blocking_violations
from tests.browser.conftest import NEW_PAGE
from tests.browser.site_pages import nav_pages

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = [p for p in nav_pages() if (DOCS / f"{p.rstrip('/') or 'index'}.md").is_file()]
MARK = "button.mha-mark"


class _Popovers(html.parser.HTMLParser):
    """Each popover of a built page: its fact's name and the text of its parts."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict[str, str]] = []
        self.marks: list[str] = []
        self._part: str | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "button" and "mha-mark" in (a.get("class") or ""):
            self.marks.append(a["aria-controls"].removeprefix("mha-ev-"))
        if "mha-evidence" in (a.get("class") or ""):
            self.found.append({"name": a["data-fact"]})
        elif self.found and (a.get("class") or "").startswith("mha-"):
            self._part = a["class"]
            self.found[-1].setdefault(self._part, "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("span", "a"):
            self._part = None

    def handle_data(self, data: str) -> None:
        if self._part and self.found:
            self.found[-1][self._part] += data


def _facts(path: str):
    name = (path.rstrip("/") or "index").replace("-", "_")
    module = f"mha.pages.{name}"
    if importlib.util.find_spec(module) is None:
        return {}
    return importlib.import_module(module).page().facts


@pytest.mark.parametrize("path", PAGES, ids=[p.rstrip("/") or "index" for p in PAGES])
def test_the_markers_are_the_facts_stated_and_say_what_their_facts_say(
    built_site: Path, path: str
) -> None:
    markdown = (DOCS / f"{path.rstrip('/') or 'index'}.md").read_text(encoding="utf-8")
    # a sentence that picks its words by its own fact is stated too, true or false
    stated = [m[1] for m in STATED.finditer(markdown)]
    parsed = _Popovers()
    parsed.feed((built_site / path / "index.html").read_text(encoding="utf-8"))
    assert parsed.marks == [p["name"] for p in parsed.found] == stated
    facts, chosen = _facts(path), choosing(markdown)
    for popover in parsed.found:
        fact = facts[popover["name"]]
        assert popover["mha-says"].startswith(f"Checked at build: {fact.says}")
        verdict = f": {'true' if fact.holds else 'false'}, and the words follow it."
        assert (verdict in popover["mha-says"]) is (popover["name"] in chosen)
        assert popover["mha-values"] == f"Values: {' '.join(fact.values.split())}"
        assert popover["mha-code"].startswith(f"fact '{popover['name']}' in src/mha/")


def test_the_evidence_is_not_in_the_search_index(built_site: Path) -> None:
    index = json.loads((built_site / "search" / "search_index.json").read_text())
    # the evidence index lists every fact in its own words, to be found; the
    # markers, popovers and feet of the other pages are not
    text = " ".join(
        d["text"] for d in index["docs"] if not d["location"].startswith("evidence/")
    )
    assert "How this page is checked" not in text
    says = _facts("cricket/")["a_commits"].says
    assert "Checked at build" not in text and says not in text


def _watch_shifts(page) -> None:
    """Record every layout shift from now on, in ``window.mhaShifts``."""
    page.evaluate(
        """() => { window.mhaShifts = [];
        new PerformanceObserver((list) => { for (const e of list.getEntries())
          window.mhaShifts.push(e.value); }).observe({type: "layout-shift"}); }"""
    )


@contextlib.contextmanager
def _phone(browser, url: str) -> Iterator:
    """A page at ``url`` on a touch screen 375 px wide."""
    context = browser.new_context(
        viewport={"width": 375, "height": 700}, has_touch=True, is_mobile=True
    )
    try:
        page = context.new_page()
        page.goto(url)
        yield page
    finally:
        context.close()


def _tap_open_inside(page, target, popover: str) -> None:
    """Tap ``target``: ``popover`` (a selector) opens inside the screen's width."""
    target.scroll_into_view_if_needed()
    target.tap()
    box = page.locator(popover).bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 375


def _open(page) -> list[str]:
    return page.eval_on_selector_all(
        ".mha-evidence:popover-open", "els => els.map(e => e.dataset.fact)"
    )


def test_keyboard_focus_opens_it_tab_reaches_its_link_escape_closes_it(
    new_page: NEW_PAGE,
) -> None:
    recorded = new_page()
    recorded.goto("cricket/")
    page = recorded.page
    mark = page.locator(MARK).first
    name = mark.get_attribute("aria-controls")
    assert page.get_by_role("button", name="How this sentence is checked").count() > 1
    description = page.locator(f"#{mark.get_attribute('aria-describedby')}")
    assert "the single head's weights on Kohli" in description.inner_text()
    mark.focus()
    page.keyboard.press("Shift+Tab")
    page.wait_for_timeout(400)  # focus left: it closes (after a moment's grace)
    assert _open(page) == []
    page.keyboard.press("Tab")  # focused from the keyboard: it opens
    assert _open(page) == ["tie"] and mark.get_attribute("aria-expanded") == "true"
    page.keyboard.press("Tab")  # into the popover: its link, still open
    focused = page.evaluate("document.activeElement.closest('.mha-evidence')?.id")
    assert focused == name and _open(page) == ["tie"]
    page.keyboard.press("Escape")
    assert _open(page) == [] and mark.get_attribute("aria-expanded") == "false"
    mark.focus()
    page.keyboard.press("Enter")  # pinned open by Enter, closed by a second
    page.keyboard.press("Enter")
    assert _open(page) == []
    assert not recorded.problems()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_an_open_popover_is_axe_clean_and_shifts_no_layout(
    new_page: NEW_PAGE, scheme: str
) -> None:
    recorded = new_page(color_scheme=scheme)
    recorded.goto("cricket/")
    page = recorded.page
    _watch_shifts(page)
    mark = page.locator(MARK).nth(2)
    mark.scroll_into_view_if_needed()
    mark.hover()  # a pointer that hovers opens it, no click: no input to excuse a shift
    page.wait_for_timeout(200)
    assert len(_open(page)) == 1
    assert page.evaluate("window.mhaShifts") == []
    assert blocking_violations(page, within=".mha-evidence:popover-open") == []
    assert blocking_violations(page, within="article p:has(.mha-mark)") == []
    box = page.locator(".mha-evidence:popover-open").bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 1280
    page.mouse.move(0, 0)
    page.wait_for_timeout(500)
    assert _open(page) == []


def test_a_tap_opens_it_inside_a_phone_screen_and_print_leaves_it_out(
    browser, site_url: str
) -> None:
    with _phone(browser, site_url + "cricket/") as page:
        mark = page.locator(MARK).first
        _tap_open_inside(page, mark, ".mha-evidence:popover-open")
        assert _open(page) == ["tie"]
        mark.tap()
        assert _open(page) == []
        page.emulate_media(media="print")
        hidden = page.eval_on_selector_all(
            ".mha-mark, .mha-checked",
            "els => els.map(e => getComputedStyle(e).display)",
        )
        assert hidden and set(hidden) == {"none"}


def test_the_foot_of_a_page_counts_what_the_build_checked(built_site: Path) -> None:
    text = (built_site / "cricket" / "index.html").read_text(encoding="utf-8")
    foot = re.search(r'<aside class="mha-checked".*?</aside>', text, re.S)
    assert foot, "no foot"
    stated = len(STATED.findall((DOCS / "cricket.md").read_text(encoding="utf-8")))
    assert f"{stated} sentences guarded" in foot[0]
    assert re.search(
        r"\d+ numbers computed, \d+ sentences guarded, [1-9]\d* blocks "
        r"executed, [1-9]\d* figures drawn",
        foot[0],
    )
    assert "tests/pages/test&#95;cricket.py" in foot[0]


# A number of the real-heads page read from a cached study (the atlas of heads).
STUDIED = 'article p m-n[p="atlas.n_queries"]'


def _number_popover(page) -> str:
    return page.evaluate(
        """() => { const p = document.getElementById("mha-ev-number");
        return p && p.matches(":popover-open") ? p.innerText : ""; }"""
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_hovering_a_number_shows_its_attribute_function_and_study(
    new_page: NEW_PAGE, scheme: str
) -> None:
    recorded = new_page(color_scheme=scheme)
    recorded.goto("real-heads/")
    page = recorded.page
    _watch_shifts(page)
    number = page.locator(STUDIED).first
    number.scroll_into_view_if_needed()
    number.hover()
    page.wait_for_timeout(200)
    shown = _number_popover(page)
    assert "Read at build from page.atlas.n_queries" in shown
    assert "computed by mha.experiments.head_atlas.atlas" in shown
    entry = re.search(
        r"study mha\.experiments\.head_atlas\._compute, entry ([0-9a-f]{10})", shown
    )
    assert entry, shown
    assert list(cache_dir().glob(f"{entry[1]}*.pickle")), "no such cache entry"
    sealed = progress.sealed().get("mha.experiments.head_atlas._compute")
    if sealed:  # timed by the last `make bench`: its CPU seconds, and when
        assert f"{sealed['cpu']:.2f} CPU-s" in shown and "sealed them at" in shown
    else:  # a study the bench has not timed yet says so
        assert shown.endswith("not timed")
    link = page.locator("#mha-ev-number a").first.get_attribute("href")
    assert link and link.endswith(
        "/src/mha/experiments/head_atlas.py#L" + link.split("#L")[1]
    )
    assert page.evaluate("window.mhaShifts") == []
    assert blocking_violations(page, within="#mha-ev-number") == []
    assert blocking_violations(page, within="article p:has(m-n)") == []
    page.mouse.move(0, 0)
    page.wait_for_timeout(500)
    assert _number_popover(page) == ""
    assert not recorded.problems()


def test_a_number_is_no_tab_stop_and_the_foot_lists_its_source_for_the_keyboard(
    new_page: NEW_PAGE,
) -> None:
    recorded = new_page()
    recorded.goto("real-heads/")
    page = recorded.page
    assert page.evaluate("document.querySelector('m-n').tabIndex") == -1
    summary = page.locator(".mha-sources summary")
    summary.focus()
    assert page.evaluate("document.activeElement.tagName") == "SUMMARY"
    page.keyboard.press("Enter")
    item = page.locator('.mha-sources li[data-f~="atlas"]')
    assert item.is_visible()
    assert "computed by mha.experiments.head_atlas.atlas" in item.inner_text()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('.mha-sources') !== null")


def test_a_tap_on_a_number_opens_its_source_inside_a_phone_screen(
    browser, site_url: str
) -> None:
    with _phone(browser, site_url + "real-heads/") as page:
        number = page.locator(STUDIED).first
        _tap_open_inside(page, number, "#mha-ev-number")
        assert "page.atlas.n_queries" in _number_popover(page)
        number.tap()
        assert _number_popover(page) == ""
        page.emulate_media(media="print")
        assert number.evaluate("e => getComputedStyle(e).textDecorationLine") == "none"
