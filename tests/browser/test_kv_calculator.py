"""The KV calculator on the page "MQA, GQA and the KV cache", in Chromium.

Its one arithmetic is a JavaScript port of `mha.accounting.kv_cache_bytes` and of
`mha.pages.kv_cache._what_fits` (and of `size_text`): the port is compared with the core
on generated shapes and on every published model, then the widget is driven with the
mouse and the keyboard at a desktop and a phone width, and what it shows is compared
with `mha.pages.kv_cache._calculator_view`.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from mha.accounting import kv_cache_bytes
from mha.data.published import DECODERS, decoder
from mha.pages.kv_cache import (
    _calculator_models,
    _calculator_view,
    _Shape,
    _size_text,
)
from mha.support.page import WIDGET_BYTES
from tests.browser.accessibility import COLOUR_RULES, blocking_violations

PAGE = "kv-cache/"
SIZES = [(1280, 800), (375, 800)]
LABELS = {  # input name -> accessible name, as the issue lists them
    "layers": "layers",
    "query_heads": "query heads",
    "kv_heads": "K/V heads",
    "head_dim": "head dim",
    "context": "context",
    "batch": "batch",
    "itemsize": "bytes per value",
    "params": "parameters",
    "memory_gib": "memory (GiB)",
    "latent": "latent width",
    "window": "window",
    "windowed_layers": "windowed layers",
}
OUTPUTS = [
    f"kv-{row}-{column}"
    for row in ("heads", "cache", "context", "batch")
    for column in ("given", "mha", "mqa")
] + ["kv-kind", "kv-weights", "kv-warning"]


def generated_shapes(count: int = 240) -> list[_Shape]:
    """Random shapes over many orders of magnitude, seeded (so every run is the same)."""
    rng = np.random.default_rng(17)
    shapes = []
    for _ in range(count):
        kv_heads = int(rng.choice([1, 2, 3, 4, 8, 16]))
        layers = int(rng.integers(1, 160))
        window = int(rng.choice([0, 0, 512, 4096, 2**17]))
        shapes.append(
            _Shape(
                layers=layers,
                query_heads=kv_heads * int(rng.integers(1, 16)),
                kv_heads=kv_heads,
                head_dim=int(rng.choice([32, 64, 80, 96, 128, 256])),
                context=int(rng.integers(1, 2**21)),
                batch=int(rng.integers(1, 300)),
                itemsize=int(rng.choice([1, 2, 4])),
                params=int(rng.integers(10**6, 10**12)),
                memory_gib=float(rng.choice([0.5, 8, 24, 40, 80, 141, 640])),
                latent=int(rng.choice([0, 0, 576, 1000])),
                window=window,
                windowed_layers=int(rng.integers(0, layers + 1)) if window else 0,
            )
        )
    return shapes


def published_shapes() -> list[_Shape]:
    names = _calculator_models()
    return [_Shape.of(name, context=n) for name in names for n in (1, 4096, 10**6)]


def port(page, shapes: list[_Shape], kv_heads_of=lambda s: s.kv_heads) -> list[dict]:
    """The port's `whatFits` and `sizeText` on ``shapes``, as strings of integers."""
    args = [
        [
            str(s.layers),
            str(kv_heads_of(s)),
            str(s.head_dim),
            str(s.context),
            str(s.batch),
            str(s.itemsize),
            str(s.params),
            str(s.memory),
            str(s.latent),
            str(s.window),
            str(s.windowed_layers),
        ]
        for s in shapes
    ]
    return page.evaluate(
        """(all) => all.map((a) => {
            const f = window.mhaKvCalculator.whatFits(...a.map(BigInt));
            return {cache: String(f.cache), weights: String(f.weights),
                    longest: String(f.longestContext), batch: String(f.largestBatch),
                    size: window.mhaKvCalculator.sizeText(f.cache),
                    layer: String(window.mhaKvCalculator.kvCacheBytes(
                        BigInt(a[4]), BigInt(a[1]), BigInt(a[2]), BigInt(a[3]),
                        BigInt(a[5])))};
        })""",
        args,
    )


def core(shape: _Shape, kv_heads: int) -> dict:
    fit = shape.fits(kv_heads)
    return {
        "cache": str(fit.cache),
        "weights": str(fit.weights),
        "longest": "null" if fit.longest_context is None else str(fit.longest_context),
        "batch": str(fit.largest_batch),
        "size": _size_text(fit.cache),
        "layer": str(
            kv_cache_bytes(
                shape.batch, kv_heads, shape.head_dim, shape.context, shape.itemsize
            )
        ),
    }


def open_calculator(new_page, size=(1280, 800), scheme: str = "light"):
    seen = new_page(color_scheme=scheme)
    seen.page.set_viewport_size({"width": size[0], "height": size[1]})
    seen.goto(PAGE)
    seen.page.wait_for_selector("form.kv-calculator[data-ready='true']")
    return seen


# Each output's text as the reader sees it (innerText), all in one call to the page.
_SHOWN = "(ids) => ids.map((id) => document.getElementById(id).innerText.trim())"


def shown(page) -> dict[str, str]:
    return dict(zip(OUTPUTS, page.evaluate(_SHOWN, OUTPUTS), strict=True))


def expected(shape: _Shape) -> dict[str, str]:
    return {k: v.strip() for k, v in _calculator_view(shape).items()}


def test_port_equals_the_core_on_generated_and_published_shapes(new_page) -> None:
    page = open_calculator(new_page).page
    shapes = generated_shapes() + published_shapes()
    assert len(shapes) >= 200 + len(DECODERS)
    # ties of the rounding (1.125 GiB), unit boundaries and thousands of EiB are
    # among them
    edge = _Shape(1, 1, 1, 1, 1, 1, 1, 1, 1.0)
    edges = [(9, 2**26, 1), (1000, 1, 1), (1023, 1, 1), (512, 1, 1)]
    edges += [(10**12, 10**12, 10**6), (409 * 10**6, 2**59, 1)]
    shapes += [replace(edge, head_dim=h, context=n, batch=b) for h, n, b in edges]
    for kv_heads_of in (lambda s: s.kv_heads, lambda s: s.query_heads, lambda s: 1):
        js = port(page, shapes, kv_heads_of)
        py = [core(s, kv_heads_of(s)) for s in shapes]
        mismatches = [
            (s, a, b) for s, a, b in zip(shapes, js, py, strict=True) if a != b
        ]
        assert not mismatches, mismatches[:3]
    sizes = [size["size"] for size in port(page, shapes[-2:])]
    assert sizes == ["1,730,000,000,000 EiB", "409,000,000 EiB"]  # separated


def test_the_port_refuses_what_the_core_refuses(new_page) -> None:
    page = open_calculator(new_page).page
    message = page.evaluate(
        """() => { try { window.mhaKvCalculator.kvCacheBytes(1n, 0n, 4n, 5n, 4n); }
                   catch (e) { return e.message; } }"""
    )
    with pytest.raises(ValueError, match="n_kv_heads: expected a positive integer"):
        kv_cache_bytes(1, 0, 4, 5, 4)
    assert message.startswith("n_kv_heads: expected a positive integer")


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_published_model_fills_the_form_and_shows_the_core(new_page, size):
    seen = open_calculator(new_page, size)
    page = seen.page
    form = page.locator("form.kv-calculator")
    # before any input: the build-time view of the model the page opens with
    model = page.get_by_label("model", exact=True).input_value()
    assert shown(page) == expected(_Shape.of(model))
    for name in _calculator_models():  # chosen with the mouse, as a reader would
        page.get_by_label("model", exact=True).select_option(name)
        for field_name, label in LABELS.items():
            field = form.get_by_label(label, exact=True)
            assert field.get_attribute("name") == field_name
        assert shown(page) == expected(_Shape.of(name)), name
    assert not seen.problems(), seen.problems()


def test_llama_2_70b_reads_as_the_issue_says(new_page) -> None:
    seen = open_calculator(new_page)
    page = seen.page
    page.get_by_label("model", exact=True).select_option("Llama-2 70B")
    page.get_by_label("context", exact=True).fill("4096")
    assert page.locator("#kv-cache-given").inner_text() == "1.25 GiB"
    assert page.locator("#kv-cache-mha").inner_text() == "10 GiB"
    assert page.locator("#kv-cache-mqa").inner_text() == "160 MiB"
    assert page.locator("#kv-warning").inner_text() == ""
    page.get_by_label("memory (GiB)", exact=True).fill("160")  # two accelerators
    view = expected(replace(_Shape.of("Llama-2 70B"), memory_gib=160))
    assert shown(page) == view
    assert view["kv-batch-given"] == "25 sequences"  # 128.48 GiB of counted weights
    page.get_by_label("context", exact=True).fill("4097")  # past its published context
    warning = page.locator("#kv-warning")
    assert warning.is_visible() and "4,096 tokens Llama-2 70B" in warning.inner_text()
    assert not seen.problems(), seen.problems()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_driven_by_the_keyboard(new_page, size) -> None:
    seen = open_calculator(new_page, size)
    page = seen.page
    select = page.get_by_label("model", exact=True)
    select.focus()
    page.keyboard.press("End")  # the last model, with the keyboard
    last = list(_calculator_models())[-1]
    assert select.input_value() == last
    shape = _Shape.of(last)
    assert shown(page) == expected(shape)
    for name, value in [("kv_heads", "1"), ("batch", "8"), ("context", "20000")]:
        field = page.get_by_label(LABELS[name], exact=True)
        field.focus()
        page.keyboard.press("Control+A")
        page.keyboard.type(value)
        shape = replace(shape, **{name: int(value)})
        assert shown(page) == expected(shape), name
    assert "past the" in shown(page)["kv-warning"]  # 20,000 > 8,192 tokens
    # ArrowUp steps a number input, as a reader may do
    batch = page.get_by_label("batch", exact=True)
    batch.focus()
    page.keyboard.press("ArrowUp")
    assert shown(page) == expected(replace(shape, batch=9))
    # Tab order follows the form: from "layers" to "query heads"
    page.get_by_label("layers", exact=True).focus()
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.name")
    assert focused == "query_heads"
    assert not seen.problems(), seen.problems()


INVALID = [  # (field, value typed, what the message must name)
    ("layers", "0", "layers"),
    ("query heads", "-3", "query heads"),
    ("K/V heads", "3", "K/V heads"),  # does not divide the 32 query heads
    ("head dim", "2.5", "head dim"),
    ("context", "", "context"),
    ("batch", "0", "batch"),
    ("bytes per value", "0", "bytes per value"),
    ("parameters", "1e9", "parameters"),
    ("memory (GiB)", "0", "memory (GiB)"),
    ("memory (GiB)", "9" * 400, "memory (GiB)"),  # beyond a double: no crash
]


def test_invalid_input_gets_a_message_naming_the_field(new_page) -> None:
    seen = open_calculator(new_page)
    page = seen.page
    page.get_by_label("model", exact=True).select_option("Llama-3 8B")
    error, warning = page.locator("#kv-error"), page.locator("#kv-warning")
    context = page.get_by_label("context", exact=True)
    context.fill("100000")  # past Llama-3 8B's context: a warning
    assert "past the" in warning.inner_text()
    page.get_by_label("layers", exact=True).fill("0")  # invalid: no stale warning
    assert warning.inner_text() == "" and error.is_visible()
    page.get_by_label("layers", exact=True).fill("32")
    context.fill("4096")
    for label, value, named in INVALID:
        field = page.get_by_label(label, exact=True)
        valid = field.input_value()
        field.fill(value)
        assert error.is_visible() and error.inner_text().startswith(f"{named}:"), label
        assert field.get_attribute("aria-invalid") == "true", label
        assert page.locator("#kv-cache-given").inner_text() == "–", label
        field.fill(valid)  # a valid value again: the message goes, the figures return
        assert not error.is_visible() and field.get_attribute("aria-invalid") is None
        assert shown(page) == expected(_Shape.of("Llama-3 8B")), label
    assert not seen.problems(), seen.problems()


def test_the_data_is_in_the_page_and_no_request_leaves_the_site(new_page) -> None:
    seen = open_calculator(new_page)
    data = seen.page.locator("#kv-calculator-data").inner_text()
    assert len(data.encode()) <= WIDGET_BYTES
    # nothing fetched for it (Material's search index is the page's only JSON)
    fetched = [url for url in seen.requests if re.search(r"kv-cache[^/]*\.json", url)]
    assert not fetched, fetched
    assert not seen.problems(), seen.problems()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_calculator_is_accessible(new_page, scheme: str) -> None:
    seen = open_calculator(new_page, SIZES[0], scheme)
    page = seen.page
    page.get_by_label("context", exact=True).fill("100000")  # shows the warning
    rules = None if scheme == "light" else COLOUR_RULES
    # the calculator's own elements (the page as a whole is audited by test_pages.py)
    found = blocking_violations(page, rules, within="form.kv-calculator")
    assert not found, found
    assert decoder("Llama-3 8B").max_context < 100000


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_calculator_fits_the_screen(new_page, size) -> None:
    seen = open_calculator(new_page, size)
    page = seen.page
    page.get_by_label("context", exact=True).fill("100000")  # the longest texts
    for label in ["model", *LABELS.values()]:
        box = page.get_by_label(label, exact=True).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= size[0], label
    results = page.locator(".kv-calculator__results")
    overflow = results.evaluate("(e) => e.scrollWidth - e.clientWidth")
    assert overflow == 0  # every column of the results in view, at 375 px too
    assert page.evaluate("document.documentElement.scrollWidth") <= size[0]
    if size[0] == 1280:  # and no code block of the page scrolls (the GQA one did)
        cut = page.evaluate(
            """() => [...document.querySelectorAll('.md-typeset pre > code')]
                .filter((e) => e.scrollWidth > e.clientWidth + 1)
                .map((e) => e.textContent.slice(0, 60))"""
        )
        assert not cut, cut
    assert not seen.problems(), seen.problems()


def test_it_works_from_a_file(browser, built_site) -> None:
    """The data is in the page: opened from the disk, the calculator still computes."""
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto((built_site / "kv-cache" / "index.html").resolve().as_uri())
        page.wait_for_selector("form.kv-calculator[data-ready='true']")
        page.get_by_label("model", exact=True).select_option("Llama-2 70B")
        assert page.locator("#kv-cache-given").inner_text() == "1.25 GiB"
        assert shown(page) == expected(_Shape.of("Llama-2 70B"))
        assert not errors, errors
    finally:
        page.close()


def test_deepseek_v2_caches_its_latent_and_position_key_per_token(new_page) -> None:
    """(d_c + d_h^R) · layers · bytes per value: 512 + 64 values a layer, 60 layers."""
    seen = open_calculator(new_page)
    page = seen.page
    page.get_by_label("model", exact=True).select_option("DeepSeek-V2")
    page.get_by_label("context", exact=True).fill("1")
    formula = (512 + 64) * 60 * 2
    assert page.locator("#kv-cache-given").inner_text() == _size_text(formula)
    assert page.locator("#kv-kind").inner_text() == "MLA"
    js = page.evaluate(
        "() => String(window.mhaKvCalculator.whatFits(60n, 128n, 128n, 1n, 1n, 2n, "
        "236000000000n, 687194767360n, 576n).cache)"
    )
    assert int(js) == formula
    # a window over every layer caps the cache: Mistral 7B past its 4,096 tokens
    page.get_by_label("model", exact=True).select_option("Mistral 7B v0.1")
    page.get_by_label("context", exact=True).fill("1000000")
    assert shown(page) == expected(_Shape.of("Mistral 7B v0.1", context=10**6))
    assert page.locator("#kv-context-given").inner_text().startswith("no limit")
    assert not seen.problems(), seen.problems()
