"""The evidence beside each guarded sentence, in headless Chromium.

Every page: its markers are exactly the facts its Markdown states as sentences, in
order (a sentence that picks its words by its own fact among them, its popover
saying whether the fact holds), and each popover holds its fact's ``says`` and
``values`` (read from the page's evidence file, as the browser decodes it). One page,
in depth: the popover opens on keyboard focus and on a tap, its link is reachable by
Tab, Escape closes it and ``aria-expanded`` follows; the button is named and
described; axe finds nothing serious in it, open, in either scheme; opening it
shifts no layout; it stays out of print and out of the search index; the evidence
file is fetched on the first use, not with the page, the popover says it is loading
while it comes and says so if it cannot come. A printed number, the same way:
hovering or tapping it shows the attribute it was read from, the function that
computed it and, for a study's value, its cache entry's content hash and sealed CPU
seconds; it is no tab stop, and the page's foot lists the same for the keyboard.
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
from tests.docs.test_evidence_file import read

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = [p for p in nav_pages() if (DOCS / f"{p.rstrip('/') or 'index'}.md").is_file()]
MARK = "button.mha-mark"


class _Parts(html.parser.HTMLParser):
    """The text of each part of one popover (``mha-says``, ``mha-values``,
    ``mha-code``), as the browser decodes it."""

    def __init__(self, inside: str) -> None:
        super().__init__()
        self.parts: dict[str, str] = {}
        self._part: str | None = None
        self.feed(inside)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in ("span", "a"):
            self._part = dict(attrs).get("class")
            self.parts.setdefault(self._part, "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("span", "a"):
            self._part = None

    def handle_data(self, data: str) -> None:
        if self._part:
            self.parts[self._part] += data


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
    keys, data = read(built_site, path.rstrip("/") or ".")
    assert keys.marks == list(data.get("f", {})) == stated
    facts, chosen = _facts(path), choosing(markdown)
    for name, inside in data.get("f", {}).items():
        fact, popover = facts[name], _Parts(inside).parts
        assert popover["mha-says"].startswith(f"Checked at build: {fact.says}")
        verdict = f": {'true' if fact.holds else 'false'}, and the words follow it."
        assert (verdict in popover["mha-says"]) is (name in chosen)
        assert popover["mha-values"] == f"Values: {' '.join(fact.values.split())}"
        assert popover["mha-code"].startswith(f"fact '{name}' in src/mha/")


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


OPEN = ".mha-evidence:popover-open"


@pytest.fixture(scope="module")
def phone(browser) -> Iterator:
    """A touch screen 375 px wide, shared by this file's tap tests."""
    context = browser.new_context(
        viewport={"width": 375, "height": 700}, has_touch=True, is_mobile=True
    )
    yield context
    context.close()


@contextlib.contextmanager
def _phone(context, url: str) -> Iterator:
    """A page at ``url`` on the phone, closed after."""
    page = context.new_page()
    try:
        page.goto(url)
        yield page
    finally:
        page.close()


def _tap_open_inside(page, target, popover: str) -> None:
    """Tap ``target``: ``popover`` (a selector) opens inside the screen's width."""
    target.scroll_into_view_if_needed()
    target.tap()
    page.wait_for_selector(popover)  # the first opens once the evidence is read
    box = page.locator(popover).bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 375


def _open(page) -> list[str]:
    return page.eval_on_selector_all(OPEN, "els => els.map(e => e.dataset.fact)")


def _hovered(new_page: NEW_PAGE, path: str, target: str, nth: int = 0, **options):
    """``path`` opened (in ``options``' scheme), every layout shift from then on
    recorded in ``window.mhaShifts``, and the pointer on the ``nth`` ``target``,
    its popover open: the recorded page and the target."""
    recorded = new_page(**options)
    recorded.goto(path)
    page = recorded.page
    page.evaluate(
        """() => { window.mhaShifts = [];
        new PerformanceObserver((list) => { for (const e of list.getEntries())
          window.mhaShifts.push(e.value); }).observe({type: "layout-shift"}); }"""
    )
    at = page.locator(target).nth(nth)
    at.scroll_into_view_if_needed()
    at.hover()  # a pointer that hovers opens it, no click: no input to excuse a shift
    page.wait_for_selector(OPEN)
    return recorded, at


def _closes(page) -> None:
    """The open popover closes, after its moment's grace (0.25 s), within 2 s."""
    page.wait_for_selector(OPEN, state="detached", timeout=2000)


def _leaves_and_closes(page) -> None:
    page.mouse.move(0, 0)
    _closes(page)


def test_keyboard_focus_opens_it_tab_reaches_its_link_escape_closes_it(
    new_page: NEW_PAGE,
) -> None:
    recorded = new_page()
    recorded.goto("cricket/")
    page = recorded.page
    mark = page.locator(MARK).first
    assert page.get_by_role("button", name="How this sentence is checked").count() > 1
    mark.focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")  # focused from the keyboard: it opens
    page.wait_for_selector(OPEN)  # once the page's evidence is read
    assert _open(page) == ["tie"] and mark.get_attribute("aria-expanded") == "true"
    name = mark.get_attribute("aria-controls")
    assert mark.get_attribute("aria-describedby") == name
    description = page.locator(f"#{name}")
    assert "the single head's weights on Kohli" in description.inner_text()
    page.keyboard.press("Shift+Tab")  # focus left: it closes, after a moment's grace
    _closes(page)
    assert mark.get_attribute("aria-expanded") == "false"
    page.keyboard.press("Tab")
    page.wait_for_selector(OPEN)
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
    recorded, _ = _hovered(new_page, "cricket/", MARK, 2, color_scheme=scheme)
    page = recorded.page
    assert len(_open(page)) == 1
    assert page.evaluate("window.mhaShifts") == []
    assert blocking_violations(page, within=OPEN) == []
    assert blocking_violations(page, within="article p:has(.mha-mark)") == []
    box = page.locator(OPEN).bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 1280
    _leaves_and_closes(page)


def test_the_evidence_is_read_on_first_use_and_says_while_loading_or_failing(
    new_page: NEW_PAGE,
) -> None:
    recorded = new_page()
    held: list = []
    recorded.page.route("**/evidence.json", lambda route: held.append(route))
    recorded.goto("cricket/")
    page = recorded.page
    page.wait_for_timeout(100)
    assert not held, "the evidence was fetched with the page"
    mark = page.locator(MARK).first
    mark.scroll_into_view_if_needed()
    mark.hover()
    page.wait_for_selector(OPEN)  # held back: after a moment, open, saying so
    assert len(held) == 1 and _open(page) == ["tie"]
    assert held[0].request.url == recorded.base_url + "cricket/evidence.json"
    assert page.locator(OPEN).inner_text() == "Loading the evidence…"
    held[0].fulfill(status=404)  # the others read it whole
    failed = "Could not load this page's evidence (HTTP 404): evidence.json."
    page.wait_for_function(
        "said => document.querySelector('.mha-evidence:popover-open')"
        "?.innerText === said",
        arg=failed,
    )
    assert page.locator(f"{OPEN} a").get_attribute("href") == "evidence.json"


def test_a_tap_opens_it_inside_a_phone_screen_and_print_leaves_it_out(
    phone, site_url: str
) -> None:
    with _phone(phone, site_url + "cricket/") as page:
        mark = page.locator(MARK).first
        _tap_open_inside(page, mark, OPEN)
        assert _open(page) == ["tie"]
        mark.tap()
        assert _open(page) == []
        page.emulate_media(media="print")
        hidden = page.eval_on_selector_all(
            ".mha-mark, .mha-checked, .mha-evidence",
            "els => els.map(e => getComputedStyle(e).display)",
        )
        assert len(hidden) > 2 and set(hidden) == {"none"}


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
    # without a script, the list of sources is the evidence file, linked
    assert '<a href="evidence.json">' in foot[0]


def _studied(built_site: Path) -> str:
    """A number of the real-heads page read from a cached study (the atlas of
    heads), first printed in a paragraph: the entry it reads is the next one."""
    key = read(built_site, "real-heads")[1]["n"].index("atlas.n_queries")
    return f"m-n:not([p]) >> nth={key}"


def _number_popover(page) -> str:
    return page.evaluate(
        """() => { const p = document.getElementById("mha-ev-number");
        return p && p.matches(":popover-open") ? p.innerText : ""; }"""
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_hovering_a_number_shows_its_attribute_function_and_study(
    new_page: NEW_PAGE, built_site: Path, scheme: str
) -> None:
    recorded, number = _hovered(
        new_page, "real-heads/", _studied(built_site), color_scheme=scheme
    )
    page = recorded.page
    assert number.evaluate("e => !!e.closest('article p')")
    # the browser reads the numbers in the order the build wrote them: as many
    # without a key as the file has entries
    keys, data = read(built_site, "real-heads")
    counted = "s => [...s].map(s => document.querySelectorAll(s).length)"
    assert page.evaluate(counted, ["m-n:not([p])", "m-n"]) == [
        len(data["n"]),
        len(keys.numbers),
    ]
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
    _leaves_and_closes(page)
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
    item.wait_for()  # read from the evidence file when the list is opened
    assert "computed by mha.experiments.head_atlas.atlas" in item.inner_text()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('.mha-sources') !== null")
    assert not recorded.problems()


def test_a_tap_on_a_number_opens_its_source_inside_a_phone_screen(
    phone, site_url: str, built_site: Path
) -> None:
    with _phone(phone, site_url + "real-heads/") as page:
        number = page.locator(_studied(built_site))
        _tap_open_inside(page, number, "#mha-ev-number")
        assert "page.atlas.n_queries" in _number_popover(page)
        number.tap()
        assert _number_popover(page) == ""
        page.emulate_media(media="print")
        assert number.evaluate("e => getComputedStyle(e).textDecorationLine") == "none"
