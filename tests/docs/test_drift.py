"""The drift guard (mha_site.drift): no page holds a number typed by hand.

The build runs it on every page it builds (docs/_glue/drift.py); these tests plant
each kind of hand-typed number and check it is refused with its line, in-process and,
for a few, by `mkdocs build` end to end.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mha_site.drift import (
    Entry,
    call_literals,
    check,
    docstring_numbers,
    docstring_outputs,
    figure_texts,
    html_links,
    load_allowlist,
    nav_titles,
    notebook_markdown,
    numbers,
    published_modules,
    report,
    resolve,
    scan,
    sources,
)

ROOT = Path(__file__).resolve().parents[2]


def texts(markdown: str) -> list[str]:
    return [f.text for f in numbers(markdown)]


def test_no_page_holds_a_hand_typed_number():
    findings = scan(ROOT / "docs", load_allowlist())
    assert not findings, report(findings)


@pytest.mark.parametrize(
    "planted, number",
    [
        ("Head A puts 0.768 of its weight on Kohli.", "0.768"),  # a decimal
        ("Head A puts 76.8% of its weight on Kohli.", "76.8%"),  # a percentage
        ("The score matrix costs 5,120,000 multiply-adds.", "5,120,000"),
        ("| head A | 3 |", "3"),  # a table cell
        ("!!! note\n    The weight is 0.45 here.", "0.45"),  # an admonition
        ("A cost of -2 is impossible.", "-2"),  # a signed number
        ("Costs $5120000$ multiply-adds.", "5120000"),  # a multi-digit number in math
        ("The cache takes 12 GB at that length.", "12"),  # a unit after a space
        ("Grouped queries make it 10x smaller.", "10x"),  # a unit glued on
        ("A step takes 3ms and 2.5s in all.", "3ms"),
        ("The weights fill 12GB.", "12GB"),
        ("The weights hold 7.24B parameters.", "7.24B"),  # a decimal size
        ("A learning rate of 1e-4 works.", "1e-4"),  # scientific notation
        ("Scores of 2.5E+3 overflow.", "2.5E+3"),
        ("Here eight heads would be needed.", "eight"),  # in words
        ("It runs ten times faster.", "ten"),
        ("It is twice as fast.", "twice"),
        ("The width is split into three heads.", "three"),  # any count, any noun
        ("eight scores and seven rows, in twelve columns", "twelve"),
        ("The heads are two.", "two"),  # a count with no noun after it
        ("It is twenty-four.", "twenty-four"),
        ("It puts a quarter of its weight on Kohli.", "a quarter"),  # fractions
        ("The score falls below a tenth of its peak.", "a tenth"),
        ("Head A puts half its weight on Kohli.", "half"),
        ("About half of the heads matter.", "half"),
        ('See <abbr title="0.768">it</abbr>.', "0.768"),  # a text attribute
        ('<meter value="0.9" min="0" max="1"></meter>', "0.9"),  # any attribute
        ('<div data-weight="0.768"></div>', "0.768"),
        ("<meter value=0.9>", "0.9"),  # unquoted
        ('<span style="width: 76.8%">bar</span>', "76.8%"),
        ('<input min="2" step="1">', "2"),  # a bound other than 0 or 1
        ("A 128k context.", "128k"),  # units the guard did not list
        ("A 4K window.", "4K"),
        ("It takes ¾ of the weight.", "¾"),  # a vulgar fraction
        ("Each head has $d_k = 3$.", "3"),  # the value a relation gives
        ("```python\nw = f()  # Kohli gets 0.768\n```", "0.768"),  # a comment
    ],
)
def test_the_guard_catches_a_planted_number(planted, number):
    assert number in texts("# Page\n\nSome prose.\n\n" + planted + "\n")


@pytest.mark.parametrize(
    "clean",
    [
        "GPT-2 and Llama-2 70B use d_k and W_O.",
        "SmolLM2-135M and Qwen2.5 7B are names.",
        "See arXiv 1706.03762 and [the paper](https://arxiv.org/abs/1706.03762).",
        "The weight is {{ cricket.head_a.weights[0] | dec }}.",
        "The weight is {{ rows[3].weights | dec(2) }} and {{ x | pct(1) }}.",
        "{{ head_table(cricket.head_a) | indent(4) }}",
        "Run `layer(x, n_heads=8)` first.",
        "```python\nx = 0.768\n```",
        '```python exec="on" result="text"\nprint(0.768)\n```',
        "1. First step\n2. Second step",
        "The formula $4 d^2 + 4 d$ and $\\sqrt{d_k}$.",
        "reached his century in the 47th over",
        "Vaswani et al.'s Table 3, row A; see §3.2 and section 3.5.",
        "one head, the first half and the middle half of the rounds",
        "a third party, the fifth layer, the half-split pairing",  # ordinals, names
        '<input id="kv-2" type="number" min="1" step="1" value="{{ page.n }}">',
        '<td colspan="2" class="w-3">x</td>',
        "the last ones barely move over thousands of tokens",  # not a count
        '{% call fact("big") %}more than ten times the scores{% endcall %}',
        "$\\text{bytes} = 2 \\cdot L$ and $\\sum_j a_{ij} = 1$",
        "```python\nx = np.ones((8, 64))  # (8 tokens, 64), scale 0.5\ny = x * 0.5\n```",
        '<figure class="mha"><svg width="386pt"></svg></figure>',
    ],
)
def test_the_guard_leaves_identifiers_code_and_macros_alone(clean):
    assert numbers(clean) == []


@pytest.mark.parametrize(
    "template, literal",
    [
        ("{{ accounting.param_count(4, 1) | thousands }}", ["4", "1"]),
        ("{{ figure('cost.x', alt, data, 3) }}", ["3"]),
        ("{% set two = sweep.result(n=2) %}", ["2"]),
        ("{{ f(g(0.5)) }}", ["0.5"]),
        ("{{ x | round(2) }}", ["2"]),  # not a formatting filter of the site
        ("{{ 0.768 | pct }}", ["0.768"]),  # a literal through a format filter
        ("{% set w = 0.45 %}", ["0.45"]),
        ('{{ "76.8%" }}', ["76.8%"]),  # a string literal
        ("{% if w > 0.5 %}x{% endif %}", ["0.5"]),
    ],
)
def test_a_literal_passed_to_a_call_is_hand_typed(template, literal):
    assert [text for _, text in call_literals(template)] == literal
    assert texts(template) == literal


def test_a_literal_in_a_call_is_found_on_its_line_with_its_fix():
    page = "# Cricket\n\nprose\n\n{{ accounting.param_count(4, 1) }} parameters\n"
    found = numbers(page, "cricket.md")
    assert [(f.line, f.text) for f in found] == [(5, "4"), (5, "1")]
    assert "mha.pages.cricket" in found[0].fix
    assert str(found[0]).startswith("docs/cricket.md:5: '4': ")


def test_hand_typed_output_in_a_text_block_is_refused():
    page = "Prose.\n\n```text\ntensor([0.768, 0.232])\n```\n\n```\n12 GB\n```\n"
    assert [(f.line, f.text) for f in numbers(page)] == [
        (4, "0.768"),
        (4, "0.232"),
        (8, "12"),
    ]
    assert "exec" in numbers(page)[0].fix


def test_line_numbers_point_at_the_number():
    found = numbers("```python\n1.5\n```\nprose\n\nweight 0.5 here")
    assert [(f.line, f.text) for f in found] == [(6, "0.5")]


YEAR = Entry("a.md", "2017", "Vaswani et al. (2017)", "the year of a citation")


def test_an_entry_excuses_its_number_only_where_its_fragment_stands():
    page = "Vaswani et al. (2017) used\ndropout.\n\nIn 2017 the cost was 0.1.\n"
    assert [(f.line, f.text) for f in check(page, "a.md", [YEAR])] == [
        (4, "2017"),
        (4, "0.1"),
    ]


def test_a_fragment_may_wrap_across_lines():
    page = "as Vaswani et\nal. (2017) found\n"
    assert check(page, "a.md", [YEAR]) == []


def test_an_entry_whose_fragment_is_gone_fails():
    found = check("Nothing cited here.\n", "a.md", [YEAR])
    assert [(f.line, f.text) for f in found] == [(0, "2017")]
    assert "no longer occurs" in found[0].fix


def test_an_entry_that_excuses_nothing_fails():
    entry = Entry("a.md", "2018", "Vaswani et al. (2017)", "a wrong year")
    found = check("Vaswani et al. (2017) wrote.\n", "a.md", [YEAR, entry])
    assert [f.text for f in found] == ["2018"] and "excuses no number" in found[0].fix


@pytest.mark.parametrize("missing", ["page", "text", "fragment", "reason"])
def test_an_allowlist_entry_needs_every_field(tmp_path, missing):
    fields = {"page": "a.md", "text": "2017", "fragment": "(2017)", "reason": "year"}
    fields[missing] = ""
    allow = tmp_path / "allow.toml"
    allow.write_text(
        "[[allow]]\n" + "".join(f'{k} = "{v}"\n' for k, v in fields.items())
    )
    with pytest.raises(ValueError, match=f"no {missing}"):
        load_allowlist(allow)


def test_notebook_markdown_cells_are_prose():
    source = "# %% [markdown]\n# The weight is 0.768.\n\n# %%\nx = 0.5\n"
    assert texts(notebook_markdown(source)) == ["0.768"]


def _build_with_the_hook(tmp_path: Path, page: str) -> subprocess.CompletedProcess:
    """Build a one-page site (page ``planted.md``) with the drift hook only."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "planted.md").write_text(page)
    config = {
        "site_name": "planted",
        "docs_dir": str(tmp_path / "docs"),
        "site_dir": str(tmp_path / "site"),
        "hooks": [str(ROOT / "docs" / "_glue" / "drift.py")],
    }
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-q"]
    return subprocess.run(
        [*command, "-f", str(tmp_path / "mkdocs.yml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def test_the_build_refuses_hand_typed_numbers_naming_file_line_and_fix(tmp_path):
    page = (
        "# Planted\n\nThe cache takes 12 GB.\n\nGrouped queries make it 10x smaller.\n"
        "\n{{ accounting.param_count(4, 1) }}\n"
    )
    result = _build_with_the_hook(tmp_path, page)
    assert result.returncode != 0
    for where in ("planted.md:3: '12'", "planted.md:5: '10x'", "planted.md:7: '4'"):
        assert f"docs/{where}" in result.stderr, result.stderr[-2000:]
    assert "compute it in mha.pages.planted" in result.stderr
    assert not (tmp_path / "site" / "planted" / "index.html").exists()


def test_an_entry_excuses_its_fragment_not_the_rest_of_its_line():
    page = "Vaswani et al. (2017) used 2017 tokens and 2.0 times the width.\n"
    assert [f.text for f in check(page, "a.md", [YEAR])] == ["2017", "2.0"]


def test_a_nav_title_with_a_number_is_refused_at_its_line():
    config = "site_name: x\nnav:\n  - Home: index.md\n  - 'Eight heads, 0.9': a.md\n"
    found = nav_titles(config)
    assert [(f.line, f.text) for f in found] == [(4, "Eight"), (4, "0.9")]
    why = Entry("mkdocs.yml", "Eight", "Eight heads", "the example's structure")
    assert [f.text for f in nav_titles(config, entries=[why])] == ["0.9"]


def test_a_page_module_figure_text_with_a_number_is_refused():
    code = (
        'F = Figure("c.b", (w,), alt=f"head A puts {w:.1%} on Kohli", '
        'caption="ties Kohli and his at 0.6 each, columns 2 and 3")\n'
    )
    assert [f.text for f in figure_texts(code, "p.py")] == ["0.6"]


def test_a_claimed_output_in_a_docstring_is_refused():
    code = 'def f():\n    """Doc.\n\n    x = f()  # -> 0.768\n    """\n'
    assert [(f.line, f.text) for f in docstring_outputs(code, "m.py")] == [(4, "# ->")]


def test_nothing_published_from_outside_docs_holds_a_number():
    found = sources(ROOT, load_allowlist())
    assert not found, "\n".join(map(str, found))


def test_a_value_in_docstring_prose_is_refused_and_an_entry_excuses_only_its_own():
    doc = "Head A puts 76.8% on Kohli, 0.6 on his; shape (4, 8); `x = 0.5`."
    code = "def f():\n    " + '"' * 3 + doc + '"' * 3 + "\n"
    found = docstring_numbers(code, "src/mha/m.py")
    assert [f.text for f in found] == ["76.8%", "0.6", "4", "8"]  # integers too
    why = Entry("src/mha/m.py", "76.8%", "puts 76.8% on", "an input")
    excused = docstring_numbers(code, "src/mha/m.py", [why])
    assert [f.text for f in excused] == ["0.6", "4", "8"]


@pytest.mark.parametrize(
    "doc, found",
    [
        ("The layer splits into 3 heads.", ["3"]),  # an integer
        ("The layer splits into three heads.", ["three"]),  # a count in words
        ("It costs 4·d_model² (+ 4·d_model with biases).", []),  # a formula's constant
        ("Weights sum to 1; a masked key gets 0.", []),  # the constants 0 and 1
        ("As Ainslie et al. (2023) and Milakov & Gimelshein 2018 show.", []),
        ("A 12-head encoder, as Ainslie et al. (2023) say.", ["12"]),
    ],
)
def test_integers_and_counts_in_published_docstrings_are_refused(doc, found):
    code = '"""' + doc + '"""\n\n\nclass C:\n    """' + doc + '"""\n'
    assert [f.text for f in docstring_numbers(code, "m.py")] == found * 2


def test_a_private_name_s_docstring_is_not_published_so_not_read():
    code = 'def _f():\n    """Split into 3 heads."""\n\n\nX = 1\n"""Of 3 heads."""\n'
    assert [f.text for f in docstring_numbers(code, "m.py")] == ["3"]  # X's


def test_the_published_modules_are_those_the_reference_renders(tmp_path):
    (tmp_path / "docs" / "reference").mkdir(parents=True)
    (tmp_path / "docs" / "reference" / "a.md").write_text(
        "# A\n\n::: pkg.core\n\n::: pkg.models\n    options:\n"
        "      show_submodules: true\n"
    )
    package = tmp_path / "src" / "pkg"
    (package / "models").mkdir(parents=True)
    for name in ("core.py", "hidden.py", "models/__init__.py", "models/bert.py"):
        (package / name).write_text('"""Split into 3 heads."""\n')
    (package / "models" / "_private.py").write_text('"""Of 3 heads."""\n')
    names = [p.as_posix() for p in published_modules(tmp_path)]
    assert names == [
        "src/pkg/core.py",
        "src/pkg/models/__init__.py",
        "src/pkg/models/bert.py",
    ]


def test_an_entry_may_list_fragments_each_excusing_its_numbers(tmp_path):
    allow = tmp_path / "allow.toml"
    allow.write_text(
        '[[allow]]\npage = "a.md"\nfragments = ["the two heads of two columns", '
        '"three tokens"]\nreason = "the example\'s structure"\n'
    )
    entries = load_allowlist(allow)
    assert [(e.text, e.fragment) for e in entries] == [
        ("two", "the two heads of two columns"),
        ("three", "three tokens"),
    ]
    page = "We take three tokens and the two heads of two columns, then two more.\n"
    assert [(f.text) for f in check(page, "a.md", entries)] == ["two"]


def test_a_docstring_entry_whose_fragment_is_gone_fails(tmp_path):
    (tmp_path / "src" / "mha").mkdir(parents=True)
    (tmp_path / "src" / "mha" / "m.py").write_text("x = 1\n")
    gone = Entry("src/mha/m.py", "six tokens", "on six tokens", "an example's size")
    assert [f.line for f in sources(tmp_path, [gone])] == [0]


def test_raw_html_links_are_found_and_resolved():
    page = (
        '<a href="cost.md#x">a</a> <img src="img/a.png">\n```\n<a href="no.md">\n```\n'
    )
    assert html_links(page) == [(1, "cost.md#x"), (1, "img/a.png")]
    assert resolve("index.md", "cost/") == (["cost.md", "cost/index.md"], "")
    assert resolve("reference/core.md", "../../cost/") == (
        ["cost.md", "cost/index.md"],
        "",
    )
