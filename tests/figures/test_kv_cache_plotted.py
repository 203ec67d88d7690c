"""The KV-cache page's figures draw the page's values: the K/V head each query head
reads, each line's cache sizes under its own label, each model's two bar counts."""

from __future__ import annotations

import numpy as np

from mha.figures.plotted import plotted
from mha.pages.kv_cache import _CONTEXT_MODEL, _CONTEXTS, _FIT_MODELS, page
from tests.figures.from_page import draw


def test_head_sharing_joins_each_query_head_to_the_kv_head_it_reads():
    n_heads, panels = page().figures["head_sharing"].data
    drawn = plotted(draw(page(), "head_sharing"))
    assert len(drawn) == len(panels)
    for panel, (kind, h_kv, reads) in zip(drawn, panels, strict=True):
        assert panel.title.startswith(f"{kind}:")
        queries, kv = panel.points.values()  # circles, then squares
        assert queries[:, 0].tolist() == list(range(n_heads))
        assert len(kv) == h_kv
        ends = [line[0].tolist() for line in panel.lines.values()]  # x at Q, at KV
        assert ends == [[i, kv[j, 0]] for i, j in enumerate(reads)]
        names = [f"Q{i}" for i in range(n_heads)]
        names += ["latent c (+ position key)"] if kind == "MLA" else []
        assert panel.texts == names + [f"KV{j}" for j in range(h_kv) if kind != "MLA"]


def test_cache_vs_context_draws_each_sizes_line_under_its_own_label():
    p = page()
    (panel,) = plotted(draw(p, "cache_vs_context"))
    assert panel.title.startswith(_CONTEXT_MODEL)
    at = _CONTEXTS.index(p.context)
    by_kind = {label.split()[0]: line for label, line in panel.lines.items()}
    assert set(by_kind) == {"MHA", "MQA", p.models[_CONTEXT_MODEL].kind}
    assert all(line[0].tolist() == list(_CONTEXTS) for line in by_kind.values())
    assert np.isclose(by_kind["MHA"][1, at], p.gib["mha"])
    assert np.isclose(by_kind["MHA"][1, -1], p.gib["longest"])
    assert np.isclose(by_kind["MQA"][1, at], p.gib["mqa"])
    (published,) = (v for k, v in panel.lines.items() if k.endswith("as published"))
    assert np.isclose(published[1, at], p.gib["published"])


def test_fit_in_memory_draws_each_models_counts_as_published_and_with_full_mha():
    p = page()
    (panel,) = plotted(draw(p, "fit_in_memory"))
    published, full = (np.array([p.fits[n][k] for n in _FIT_MODELS]) for k in (0, 1))
    assert panel.bars["as published"].tolist() == published.tolist()
    assert panel.bars["with full MHA"].tolist() == full.tolist()
    assert [label.split(" (")[0] for label in panel.yticks] == list(_FIT_MODELS)
    assert panel.texts == [f"{n:,}" for n in [*published, *full]]
