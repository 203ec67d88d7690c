"""The notation page (mha.pages.notation): every symbol named, the numbering rule."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from mha.heads import split_heads
from mha.pages import notation

REQUIRED = ("n", "d_{model}", "h", "h_{kv}", "d_k", "d_v", "W_Q^{(i)}", "W_O")


def test_every_symbol_has_its_names_in_mha_and_pytorch() -> None:
    maths = [s.math for s in notation.SYMBOLS]
    for symbol in REQUIRED:
        assert any(m == symbol or m.startswith(symbol) for m in maths), symbol
    for s in notation.SYMBOLS:
        assert s.meaning and s.mha and s.torch, s.math
    d_v = next(s for s in notation.SYMBOLS if s.math == "d_v")
    assert "another width" in d_v.meaning  # where d_v may differ from d_k


def test_q_i_is_x_times_a_column_block_of_w_q() -> None:
    ex = notation.example()
    layer, d_k = ex.layer, ex.layer.d_k
    assert ex.q_i_is_the_reshape_view
    view = split_heads(ex.x @ layer.w_q, layer.n_heads)
    block = layer.w_q[:, 2 * d_k : 3 * d_k]  # W_Q^(2)
    assert np.allclose(ex.x @ block, view[2])
    assert ex.shapes["W_K"] == (layer.d_model, layer.n_kv_heads * d_k)


def test_page_lists_the_symbols_and_the_numbering_rule(built_site: Path) -> None:
    html = (built_site / "notation" / "index.html").read_text()
    h1 = re.search(r"<h1[^>]*>(.*?)</h1>", html, re.S).group(1)
    assert "Notation" in h1
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert text.count("<tr>") == 0 and html.count("<tr>") == len(notation.SYMBOLS) + 1
    assert "numbered from zero" in text and "L7H9" in text
    assert "embed_dim" in text and "num_key_value_heads" in text
