"""The notation page (mha.pages.notation): every symbol named, the numbering rule."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from mha.heads import split_heads
from mha.pages import multi_head, notation
from tests.conftest import ROOT

REQUIRED = ("n", "d_{model}", "h", "h_{kv}", "d_k", "d_v", "W_Q^{(i)}", "W_O")


def symbol_rows() -> list[list[str]]:
    """The cells of each row of the page's table of symbols (below its header)."""
    lines = (ROOT / "docs" / "notation.md").read_text().splitlines()
    rows = [line for line in lines if line.startswith("| $")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def test_every_symbol_has_its_names_in_mha_and_pytorch() -> None:
    rows = symbol_rows()
    maths = [row[0].strip("$") for row in rows]
    for symbol in REQUIRED:
        assert any(m == symbol or m.startswith(symbol) for m in maths), symbol
    for row in rows:
        assert len(row) == 4 and all(row), row
    d_v = next(row for row in rows if row[0] == "$d_v$")
    assert "another width" in d_v[1]  # where d_v may differ from d_k


def test_the_functions_the_table_names_exist() -> None:
    named = re.findall(
        r"`(\w+)\([^`]*` of `mha\.pages\.multi_head`", str(symbol_rows())
    )
    assert sorted(named) == ["column_block", "head_outputs"]
    assert all(callable(getattr(multi_head, name)) for name in named)


def test_q_i_is_x_times_a_column_block_of_w_q() -> None:
    p = notation.page()
    layer, d_k = p.layer, p.layer.d_k
    view = split_heads(p.x @ layer.w_q, layer.n_heads)
    for i in range(layer.n_heads):
        block = layer.w_q[:, i * d_k : (i + 1) * d_k]  # W_Q^(i)
        assert np.allclose(p.x @ block, view[i])
    assert p.shapes["W_K"] == (layer.d_model, layer.n_kv_heads * d_k)
    assert p.shapes["Q_i"] == (len(p.x), d_k) and p.shapes["A"] == (4, 5, 5)


def test_page_lists_the_symbols_and_the_numbering_rule(built_site: Path) -> None:
    html = (built_site / "notation" / "index.html").read_text()
    h1 = re.search(r"<h1[^>]*>(.*?)</h1>", html, re.S).group(1)
    assert "Notation" in h1
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert text.count("<tr>") == 0 and html.count("<tr>") == len(symbol_rows()) + 1
    assert "numbered from zero" in text and "L7H9" in text
    assert "embed_dim" in text and "num_key_value_heads" in text
