"""The KV-cache calculator on the page "MQA, GQA and the KV cache", in Chromium.

What it shows must be what the core computes (`mha.pages.kv_cache.calculator_text`), for
the build-time figure, for changes of every input, and across a sliding window.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mha.data.published import decoder
from mha.pages import kv_cache as kv_memory
from tests.browser.accessibility import COLOUR_RULES, blocking_violations

PAGE = "kv-cache/"

# (model, context, batch, dtype id): MHA, GQA, MQA, a window, every dtype, a batch
CASES = [
    ("Llama-2 7B", 4096, 1, "fp16"),
    ("Llama-2 70B", 32768, 8, "fp16"),
    ("Falcon-7B", 2048, 64, "fp32"),
    ("Mistral 7B", 32768, 2, "int8"),
    ("PaLM 540B", 1, 1, "fp32"),
    ("SmolLM2-135M", 8192, 16, "fp16"),
]


def fill(page, model: str, context: int, batch: int, dtype: str) -> str:
    """Set the form's inputs as a reader would; return the text of its output."""
    page.get_by_label("Model", exact=True).select_option(model)
    page.get_by_label("Context length (tokens per sequence)", exact=True).fill(
        str(context)
    )
    page.get_by_label("Batch (sequences)", exact=True).fill(str(batch))
    page.get_by_label("Cache type", exact=True).select_option(dtype)
    return page.locator("#kv-result").inner_text()


def test_the_site_carries_the_cores_per_token_figures(built_site: Path) -> None:
    written = json.loads((built_site / kv_memory.SITE_PATH).read_text())
    assert written == kv_memory.payload()


def test_calculator_shows_what_the_core_computes(new_page) -> None:
    seen = new_page()
    seen.goto(PAGE)
    page = seen.page
    page.wait_for_selector("form.kv-calculator[data-ready='true']")
    initial = page.locator("#kv-result").inner_text()
    model = page.get_by_label("Model", exact=True).input_value()
    context = int(
        page.get_by_label(
            "Context length (tokens per sequence)", exact=True
        ).input_value()
    )
    batch = int(page.get_by_label("Batch (sequences)", exact=True).input_value())
    dtype = page.get_by_label("Cache type", exact=True).input_value()
    assert initial == kv_memory.calculator_text(model, context, batch, dtype)

    for case in CASES:
        assert fill(page, *case) == kv_memory.calculator_text(*case), case
        expected = kv_memory.cache_bytes(
            decoder(case[0]),
            case[1],
            case[2],
            next(d.bytes for d in kv_memory.DTYPES if d.id == case[3]),
        )
        assert page.locator("#kv-result").get_attribute("data-bytes") == str(expected)
    assert not seen.problems(), seen.problems()


def test_calculator_refuses_what_is_not_a_count(new_page) -> None:
    seen = new_page()
    seen.goto(PAGE)
    page = seen.page
    page.wait_for_selector("form.kv-calculator[data-ready='true']")
    for context in ("0", "-5", "2.5", ""):
        page.get_by_label("Context length (tokens per sequence)", exact=True).fill(
            context
        )
        assert "whole number" in page.locator("#kv-result").inner_text(), context
    assert not seen.problems(), seen.problems()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_calculator_is_accessible(new_page, scheme: str) -> None:
    seen = new_page(color_scheme=scheme)
    seen.goto(PAGE)
    page = seen.page
    page.wait_for_selector("form.kv-calculator[data-ready='true']")
    fill(page, *CASES[3])  # the longest output, with the window note
    rules = None if scheme == "light" else COLOUR_RULES
    assert not blocking_violations(page, rules)
    # every control has a visible label that names it
    for control in page.locator(
        "form.kv-calculator select, form.kv-calculator input"
    ).all():
        label = page.locator(f"label[for='{control.get_attribute('id')}']")
        assert label.count() == 1 and label.inner_text().strip()
