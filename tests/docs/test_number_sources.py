"""Each printed number names its source (issue 46, part 2): the page object traced as a
template reads it, its numbers marked and placed in the HTML as ``<m-n>`` where
they sit in text (their paths in the page's evidence file), unmarked in math, code and attributes (``mha_site.traced``); the
function that computed each value, read from ``page()`` (``mha_site.origins``); and the
built pages, whose printed numbers in prose and tables each carry a source.
"""

from __future__ import annotations

import html.parser
import re
from dataclasses import dataclass
from pathlib import Path

import jinja2
import markdown
import pytest

from mha.support import cache
from mha.support.formatting import decimals
from mha_site import origins
from mha_site.traced import CLOSE, OPEN, Sources, Traced, fields, strip, tracing
from tests.docs.test_evidence_file import read, unmatched

DOCS = Path(__file__).resolve().parents[2] / "docs"


@dataclass
class _Head:
    weights: list[float]
    name: str = "head A"


@dataclass
class _Example:
    head_a: _Head
    by_token: dict[str, float]
    rows: list[tuple[str, float]]


class _Page:
    """The page object as the glue hands it to a template (docs/_glue/macros.py's
    ``_Template``): each of its values traced from its own name."""

    def __init__(self, values: object) -> None:
        self._values = values

    def __getattr__(self, name: str) -> Traced:
        return Traced(getattr(self._values, name), name)


def _page() -> _Page:
    example = _Example(
        _Head([0.76812, 0.187, 0.045]),
        {"Kohli": 0.768, "his": 0.187},
        [("Kohli", 0.768), ("his", 0.187)],
    )
    return _Page(example)


def _render(template: str) -> tuple[str, Sources]:
    """``template`` rendered as the build renders a page: the page object traced,
    each printed value through ``Sources.mark``, the filters through ``tracing``."""
    sources = Sources()
    env = jinja2.Environment(finalize=sources.mark, undefined=jinja2.StrictUndefined)
    env.filters = {k: tracing(f) for k, f in env.filters.items()}
    env.filters["dec"] = tracing(decimals)
    return env.from_string(template).render(page=_page()), sources


def test_a_traced_value_remembers_its_path_through_attributes_items_and_loops() -> None:
    text, sources = _render(
        "{{ page.head_a.weights[0] | dec }} {{ page.by_token['his'] }} "
        "{% for name, w in page.rows %}{{ w }} {% endfor %}"
        "{% set a, b, c = page.head_a.weights %}{{ c }}"
        "{% if page.head_a.weights[0] > 0.5 %} big{% endif %}"
        " {{ page.head_a.name }} {{ page.rows | length }}"
    )
    assert strip(text) == "0.768 0.187 0.768 0.187 0.045 big head A 2"
    assert sources.paths == [
        "head_a.weights[0]",
        "by_token['his']",
        "rows[0][1]",
        "rows[1][1]",
        "head_a.weights[2]",
        "rows",  # the count of its rows
    ]
    assert text.count(OPEN) == text.count(CLOSE) == 6  # "head A" holds no digit
    assert fields(sources.paths) == ["head_a", "by_token", "rows"]


def test_a_value_not_read_from_the_page_object_is_printed_unmarked() -> None:
    text, sources = _render("{{ 3 }} {{ 'https://x.org/1706.03762' }}")
    assert text == "3 https://x.org/1706.03762" and sources.paths == []
    sources = Sources()
    assert sources.mark(Traced("https://arxiv.org/abs/1706.03762", "cited")) == (
        "https://arxiv.org/abs/1706.03762"
    )  # an address: Markdown must read it whole
    assert sources.mark(Traced("<b>1</b>", "markup")) == "<b>1</b>"
    assert sources.paths == []


def _html(template: str) -> tuple[str, Sources]:
    """``template`` rendered, then turned into HTML as MkDocs does (tables, math as
    pymdownx.arithmatex writes it, code), then placed."""
    text, sources = _render(template)
    converted = markdown.markdown(
        text,
        extensions=["tables", "pymdownx.arithmatex", "pymdownx.superfences"],
        extension_configs={"pymdownx.arithmatex": {"generic": True}},
    )
    return sources.place(converted), sources


def test_a_number_in_text_or_a_table_cell_becomes_an_element_keying_its_path() -> None:
    page, sources = _html(
        "Head A gives {{ page.by_token['Kohli'] }} to Kohli.\n\n"
        "| token | weight | again |\n|---|---|---|\n"
        "{% for name, w in page.rows %}| {{ name }} | {{ w | dec }} | {{ w }} |\n"
        "{% endfor %}"
    )
    assert "<p>Head A gives <m-n>0.768</m-n> to Kohli.</p>" in page
    # a path printed again keys its entry; a first print is the next entry
    assert "<td><m-n>0.187</m-n></td>\n<td><m-n p=2>0.187</m-n></td>" in page
    assert sources.placed == ["by_token['Kohli']", "rows[0][1]", "rows[1][1]"]
    assert OPEN not in page and CLOSE not in page


def test_a_number_in_math_code_or_an_attribute_loses_its_marks_only() -> None:
    page, sources = _html(
        "With $w = {{ page.head_a.weights[0] | dec }}$ and\n\n"
        "$$\nw_2 = {{ page.head_a.weights[1] | dec }}\n$$\n\n"
        "`weights[0] == {{ page.head_a.weights[0] | dec(4) }}` and "
        '<abbr title="{{ page.head_a.weights[2] }}">w</abbr>, '
        "then {{ page.head_a.weights[2] | dec }} in text.\n\n"
        "```python\nw = {{ page.by_token['his'] }}\n```"
    )
    assert r"\(w = 0.768\)" in page  # KaTeX reads the math as it was
    assert r"w_2 = 0.187" in page and "<m-n" not in page.split("then")[0]
    assert "<code>weights[0] == 0.7681</code>" in page
    assert 'title="0.045"' in page
    assert '<span class="mf">0.187</span>' in page  # highlighted in its code block
    assert "<m-n>0.045</m-n> in text" in page
    assert sources.placed == ["head_a.weights[2]"]
    assert OPEN not in page and CLOSE not in page


def test_the_function_that_computed_each_value_is_read_from_page() -> None:
    cost = origins.fields("mha.pages.cost")
    assert cost["rows"].name == "mha.pages.cost._sweep"  # rows = cached(_sweep)
    assert cost["d_model"].kind == "constant"
    assert cost["d_model"].name == "mha.pages.cost._D_MODEL"
    source = cost["rows"].path.read_text(encoding="utf-8").splitlines()
    assert source[cost["rows"].line - 1].startswith("def _sweep(")
    cricket = origins.fields("mha.pages.cricket")
    assert cricket["example"].name == "mha.worked.cricket.solve"  # example = solve()
    assert cricket["cost"].name == "mha.pages.cricket._cost"


def test_a_value_beside_a_label_names_its_study_not_the_label_helper() -> None:
    # copying=[(_name(h), float(s.weights.copying[i]), ...)] with s = _studies():
    # the scores come from the study, not from the helper that names the heads
    circuits = origins.fields("mha.pages.circuits")
    assert circuits["copying"].name == "mha.pages.circuits._studies"
    depth = origins.fields("mha.pages.depth")  # massive=_norm_ratio(scan)
    assert origins.studies(depth["massive"].name) or origins._asks(
        depth["massive"].name
    )
    # a library function that reads data stays the origin (speed reads the bench)
    gqa = origins.fields("mha.pages.real_gqa_model")
    assert gqa["speed"].name == "mha.support.measured.load"


def test_a_study_names_the_key_its_result_is_cached_under(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    sweep = origins.fields("mha.pages.cost")["rows"].name
    module = __import__("mha.pages.cost", fromlist=["_sweep"])
    cache.cached(module._sweep)
    found = origins.studies(sweep)
    assert [s.name for s in found] == ["mha.pages.cost._sweep"]
    assert found[0].key == cache.cache_key(module._sweep)
    assert (tmp_path / f"{found[0].key}.pickle").is_file()
    assert found[0].cpu is not None  # sealed by make bench, as mha.pages.cost.sweep


class _Prose(html.parser.HTMLParser):
    """The article's text outside code, math, figures, drawings, the evidence and
    the numbers' own elements; and how many numbers' elements it holds."""

    SKIP = frozenset(
        {"code", "pre", "script", "style", "svg", "figure", "aside", "button"}
    )
    VOID = frozenset({"br", "hr", "img", "input", "wbr", "meta", "link", "source"})

    def __init__(self) -> None:
        super().__init__()
        self.inside, self.skipping, self.text, self.numbers = 0, [], [], 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "article":
            self.inside += 1
        if tag in self.VOID or not self.inside:
            return
        classes = (a.get("class") or "").split()
        skip = (
            self.skipping
            or tag in self.SKIP
            or tag == "m-n"
            or {"arithmatex", "mha-evidence", "headerlink", "footnote-ref"}
            & set(classes)
        )
        if skip:
            self.skipping.append(tag)
        if tag == "m-n" and len(self.skipping) == 1:
            self.numbers += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "article":
            self.inside -= 1
        elif self.skipping and tag not in self.VOID:
            self.skipping.pop()

    def handle_data(self, data: str) -> None:
        if self.inside and not self.skipping:
            self.text.append(data)


@pytest.mark.parametrize("page", ["cricket", "cost", "real-heads", "circuits"])
def test_every_number_printed_in_the_prose_and_tables_carries_its_source(
    built_site: Path, page: str
) -> None:
    parsed = _Prose()
    parsed.feed((built_site / page / "index.html").read_text(encoding="utf-8"))
    source = (DOCS / f"{page}.md").read_text(encoding="utf-8")
    typed = re.sub(r"\{\{.*?\}\}|\{%.*?%\}", " ", source, flags=re.S)
    # a number left in the text without a source must be typed in the Markdown
    # (the drift guard allows those: years, citations, section numbers, ...)
    bare = [
        n
        for n in re.findall(r"\d[\d,.]*\d|\d", " ".join(parsed.text))
        if n not in typed
    ]
    assert bare == [], f"numbers printed without a source on {page}: {bare[:10]}"
    assert parsed.numbers > 20
    # each has its path in the page's evidence file, listed with its source
    keys, data = read(built_site, page)
    assert len(keys.numbers) >= parsed.numbers and unmatched(keys, data) == []


def test_a_value_lists_the_same_studies_whether_they_were_computed_or_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # position's real() asks for one study, which, computed, asks for two more
    # (the atlas and the scan): a cold build asks for those inside it, a warm one
    # reads the study and asks for nothing else; both list the study alone
    real, inner = "mha.pages.position._real", "mha.experiments.head_atlas._compute"
    assert origins._asks("mha.pages.position.real") == {real}
    cold = [(real, "b" * 64, real), (inner, "a" * 64, inner), (real, "b" * 64, real)]
    warm = [(real, "b" * 64, real)]
    listed = []
    for asks in (cold, warm):
        monkeypatch.setattr(cache, "_ASKED", asks)
        listed.append(origins.studies("mha.pages.position.real"))
    assert listed[0] == listed[1] and [s.key for s in listed[0]] == ["b" * 64]
    # a helper that hands several functions to the cache lists each, by name
    assert origins._asks("mha.pages.circuits._studies") >= {
        "mha.pages.circuits._weights",
        "mha.experiments.repeated_tokens._scan",
    }
