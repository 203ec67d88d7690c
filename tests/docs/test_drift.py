"""The drift guard: no page holds a number typed by hand (see tests/docs/drift.py)."""

from pathlib import Path

import pytest

from tests.docs.drift import load_allowlist, notebook_markdown, numbers, scan

ROOT = Path(__file__).resolve().parents[2]
ALLOWLIST = Path(__file__).with_name("drift_allowlist.toml")


def test_no_page_holds_a_hand_typed_number():
    findings = scan(ROOT / "docs", load_allowlist(ALLOWLIST))
    assert not findings, (
        "hand-typed numbers (use a macro, or allowlist with a reason):\n"
        + "\n".join(f"  docs/{f.page}:{f.line}: {f.text}" for f in findings)
    )


@pytest.mark.parametrize(
    "planted",
    [
        "Head A puts 0.768 of its weight on Kohli.",  # a decimal
        "Head A puts 76.8% of its weight on Kohli.",  # a percentage
        "The score matrix costs 5,120,000 multiply-adds.",  # a comma integer
        "| head A | 3 |",  # a table cell
        "!!! note\n    The weight is 0.45 here.",  # an admonition
        "A cost of -2 is impossible.",  # a signed number
        "Costs $5120000$ multiply-adds.",  # a multi-digit number in math
    ],
)
def test_the_guard_catches_a_planted_number(planted):
    assert numbers("# Page\n\nSome prose.\n\n" + planted + "\n")


@pytest.mark.parametrize(
    "clean",
    [
        "GPT-2 and Llama-2 70B use d_k and W_O.",
        "See arXiv 1706.03762 and [the paper](https://arxiv.org/abs/1706.03762).",
        "The weight is {{ cricket.head_a.weights[0] | dec }}.",
        "Run `layer(x, n_heads=8)` first.",
        "```python\nx = 0.768\n```",
        "1. First step\n2. Second step",
        "The formula $4 d^2 + 4 d$ and $\\sqrt{d_k}$.",
        "reached his century in the 47th over",
        '<figure class="mha"><svg width="386pt"></svg></figure>',
        "{% set n = 100 %}",
    ],
)
def test_the_guard_leaves_identifiers_code_and_macros_alone(clean):
    assert numbers(clean) == []


def test_line_numbers_point_at_the_number():
    assert numbers("```\n1.5\n```\nprose\n\nweight 0.5 here") == [(6, "0.5")]


def test_the_allowlist_excuses_exact_strings_on_its_page(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Vaswani et al. (2017) used 0.1 dropout.\n")
    allow = tmp_path / "allow.toml"
    allow.write_text('[[allow]]\npage = "a.md"\ntext = "2017"\nreason = "year"\n')
    assert [f.text for f in scan(docs, load_allowlist(allow))] == ["0.1"]


def test_an_allowlist_entry_needs_a_reason(tmp_path):
    allow = tmp_path / "allow.toml"
    allow.write_text('[[allow]]\npage = "a.md"\ntext = "2017"\nreason = ""\n')
    with pytest.raises(ValueError, match="no reason"):
        load_allowlist(allow)


def test_notebook_markdown_cells_are_prose():
    source = "# %% [markdown]\n# The weight is 0.768.\n\n# %%\nx = 0.5\n"
    assert [n for _, n in numbers(notebook_markdown(source))] == ["0.768"]
