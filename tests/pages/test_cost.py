"""The cost page's numbers: parameters counted from layers, score cost, ranks, timings."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from mha import KVCache, MultiHeadAttention
from mha.accounting import (
    kv_cache_bytes,
    layer_multiply_adds,
    param_count,
    score_flops,
    score_multiply_adds,
)
from mha.data import vaswani2017
from mha.data.published import MODELS, VOITA_2019, model
from mha.figures import to_svg
from mha.figures.cost import head_timings, layer_split
from mha.figures.cost import score_ranks as rank_figure
from mha.pages import cost as cost_page
from mha.pages.cost import (
    _HEADS,
    _facts,
    _figures,
    _HeadCount,
    _layer_costs,
    _published_costs,
    _score_ranks,
    _ScoreRank,
    _sweep,
    _timings,
    page,
)
from mha.support import formatting, measured
from mha_site.bench import seal
from tests.conftest import ROOT
from tests.docs.rendering import render
from tests.pages.drawn import assert_series, drawn
from tests.pages.sealed import PLANTS, assert_printed, plant


def test_every_head_count_holds_4d_squared_parameters():
    rows = _sweep(d_model=64, heads=(1, 2, 4, 8, 16, 32, 64), n=10)
    assert {r.params for r in rows} == {4 * 64**2}
    assert {r.params_bias for r in rows} == {4 * 64**2 + 4 * 64}
    assert [r.d_k for r in rows] == [64, 32, 16, 8, 4, 2, 1]


def test_the_count_comes_from_the_arrays_not_the_formula():
    layer = MultiHeadAttention(64, 4, n_kv_heads=2, bias=True)
    assert layer.w_k.shape == (64, 32)  # 2 K/V heads of d_k = 16
    arrays = ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")
    assert layer.param_count == sum(getattr(layer, a).size for a in arrays)
    assert layer.param_count == param_count(64, 4, n_kv_heads=2, bias=True)


def test_the_formula_is_written_independently():
    assert page().formula == (1_048_576, 1_048_576 + 2_048)
    assert page().d_model == 512 and page().n == 100


def test_the_seed_score_cost_and_its_flops():
    rows = _sweep(d_model=512, heads=_HEADS, n=100)
    assert {r.multiply_adds for r in rows} == {5_120_000}
    assert {r.flops for r in rows} == {10_240_000}
    assert rows[3].per_head_multiply_adds == 640_000  # 8 heads of d_k = 64
    assert [r.scores for r in rows] == [h * 100 * 100 for h in _HEADS]
    assert score_flops(100, 512, 8) == 2 * score_multiply_adds(100, 512, 8)


def test_kv_cache_bytes_matches_a_filled_cache():
    layer = MultiHeadAttention(16, 4, n_kv_heads=2)
    cache = KVCache(batch=3, n_kv_heads=2, d_k=4, max_len=8, dtype=np.float32)
    layer.step(np.zeros((3, 5, 16), dtype=np.float32), cache)
    assert cache.nbytes == kv_cache_bytes(3, 2, 4, 5, 4)
    with pytest.raises(ValueError, match="n_kv_heads"):
        kv_cache_bytes(1, 0, 4, 5, 4)


def test_published_shapes_carry_a_source_and_known_counts():
    for shape in MODELS:
        assert shape.d_model % shape.n_heads == 0
        assert shape.source.url.startswith("https://") and shape.source.where
    assert (model("Transformer base").d_model, model("Transformer base").n_heads) == (
        512,
        8,
    )
    assert (model("BERT-large").d_model, model("BERT-large").n_heads) == (1024, 16)
    costs = {c.shape.name: c for c in _published_costs()}
    assert costs["BERT-base"].params == 2_359_296 == costs["GPT-2 small"].params
    assert costs["BERT-large"].all_layers == 24 * (4 * 1024**2 + 4 * 1024)
    assert model(VOITA_2019.model).n_heads * model(VOITA_2019.model).n_layers == 48
    with pytest.raises(ValueError, match="name"):
        model("GPT-5")


@pytest.fixture(scope="module")
def ranks():
    return _score_ranks()


def test_each_head_reaches_exactly_its_rank_bound(ranks):
    for row in ranks:
        assert row.ranks.shape == (row.n_heads,)
        assert (row.ranks == row.bound).all()
        assert row.bound == min(row.n, row.d_k)
    assert ranks[-1].d_k == 1


def test_the_rank_bound_is_n_when_there_are_fewer_tokens_than_dimensions():
    (row,) = _score_ranks(d_model=32, heads=(1,), n=5)
    assert row.bound == 5 and row.ranks.tolist() == [5]


# The committed benchmark must back what docs/cost.md says about it.


def test_the_committed_timings_cover_every_head_count():
    t = _timings()
    assert [r.n_heads for r in t.rows] == list(_HEADS)
    assert all(r.d_k * r.n_heads == t.d_model for r in t.rows)
    assert t.repeats >= 5 and t.machine["cpu_count"] >= 1 and t.machine["numpy"]
    assert t.threads == 1 and t.burst >= 1  # the page says "one core's work"
    for r in t.rows:
        assert 0 < r.layer_q1_ms <= r.layer_ms <= r.layer_q3_ms
        assert 0 < r.attention_q1_ms <= r.attention_ms <= r.attention_q3_ms


def test_the_reading_on_the_page_holds_for_the_committed_timings():
    t = _timings()
    most = _HEADS[-1]
    assert t.slowest.n_heads == most  # "the layer with the most heads is slowest"
    assert t.ratio(most, t.fastest.n_heads) > 2
    assert t.ratio(most, 1, "attention") > 2  # the growth is in the attention core ...
    growth = t.rows[-1].layer_ms - t.rows[0].layer_ms
    core_growth = t.rows[-1].attention_ms - t.rows[0].attention_ms
    assert core_growth > 0.5 * growth  # ... which carries most of it
    low, high = t.projection_range  # "the rest ... with no steady trend of that size"
    assert high - low < core_growth
    with pytest.raises(ValueError, match="n_heads"):
        t.ratio(3, 1)


def test_cost_figures_are_deterministic(ranks):
    for draw, data in ((head_timings, _timings()), (rank_figure, ranks)):
        assert to_svg(draw(data), "alt") == to_svg(draw(data), "alt")


def test_the_base_transformer_has_18_attention_sublayers():
    """Vaswani et al. section 3.1: 6 encoder layers (self-attention) and 6 decoder
    layers (masked self-attention and encoder-decoder attention)."""
    kinds = dict(page().sublayers)
    assert kinds == {
        "encoder self-attention": 6,
        "masked decoder self-attention": 6,
        "encoder-decoder attention": 6,
    }
    cost = next(c for c in _published_costs() if c.shape.name == "Transformer base")
    assert cost.sublayers == 18
    assert cost.all_layers == 18 * 1_050_624 == 18_911_232  # with biases
    assert 18 * cost.params == 18_874_368  # without
    assert page().sublayers[0] == ("encoder self-attention", 6)
    one_stack = {c.shape.name: c.sublayers for c in _published_costs()}
    assert one_stack["BERT-base"] == 12 and one_stack["GPT-2 small"] == 12


def test_the_cost_pages_facts_hold_and_turn_false_on_other_values():
    p = page()
    assert all(f.holds for f in p.facts.values()), {
        k: f.values for k, f in p.facts.items() if not f.holds
    }
    bleu = [24.9, 25.5, 25.8, 25.8, 25.4]  # Vaswani et al. Table 3 (A)
    assert not fails("vaswani_heads", bleu=bleu)
    assert fails("vaswani_heads", bleu=sorted(bleu))
    capped = _score_ranks(d_model=16, heads=(1, 16), n=8)  # 8 tokens: rank 8 < d_k = 16
    assert not fails("on_bound", ranks=capped)
    lying = [_ScoreRank(r.n_heads, r.d_k, r.n, r.ranks - 1, r.bound) for r in capped]
    assert fails("on_bound", ranks=lying)
    assert "sits exactly on" in _figures(p.timings, capped, p.layers)["score_ranks"].alt
    assert "fall below" in _figures(p.timings, lying, p.layers)["score_ranks"].alt
    assert "on the dashed bound line" in p.figures["score_ranks"].alt
    shrinking = replace(p.timings, rows=p.timings.rows[::-1])  # the core gets faster
    assert fails("growth_in_core", t=shrinking) and fails("rest_flat", t=shrinking)
    assert set(p.figures) == {"head_timings", "score_ranks", "layer_split"}


def fails(name: str, **changed) -> bool:
    """Whether the page's fact ``name`` is false once ``changed`` replaces some of
    the values ``facts`` reads (``rows``, ``costs``, ``t``, ``ranks``, ``bleu``,
    ``whole``, ``layers``)."""
    p = page()
    values = dict(rows=p.rows, costs=p.costs, t=p.timings, ranks=p.ranks)
    values |= dict(whole=p.whole, layers=p.layers)
    values["bleu"] = [row.bleu for row in vaswani2017.ROW_A]
    return not _facts(**{**values, **changed})[name].holds


def _whole_width(row: _HeadCount) -> _HeadCount:
    """``row``'s heads each as wide as the model (d_k = d_model, not d_model / h):
    h times the projections' columns and the score multiply-adds."""
    h, d = row.n_heads, row.d_k * row.n_heads
    return replace(
        row,
        d_k=d,
        params=h * row.params,
        params_bias=h * (row.params_bias - d) + d,  # one output bias, h of the others
        per_head_multiply_adds=row.multiply_adds,
        multiply_adds=h * row.multiply_adds,
        flops=h * row.flops,
    )


def test_the_count_facts_turn_false_when_heads_keep_the_whole_width():
    rows = page().rows
    assert _whole_width(rows[0]) == rows[0]  # one head is whole already
    wide = tuple(_whole_width(r) for r in rows)
    assert fails("flat", rows=wide)  # more heads, more parameters
    assert fails("both_cost", rows=wide)  # eight heads cost eight times one
    assert fails("either_way", rows=wide)
    assert fails("scores_grow", rows=wide)  # not the only column that grows
    # one softmax over one n × n matrix whatever h: the last column flat too
    shared = tuple(replace(r, scores=rows[0].scores) for r in rows)
    assert fails("scores_grow", rows=shared)


def test_the_shape_and_load_facts_turn_false_on_other_values():
    p = page()
    # GPT-2 small with 16 heads: the same width and count, not the same shape
    costs = tuple(
        replace(c, shape=replace(c.shape, n_heads=16))
        if c.shape.name == "GPT-2 small"
        else c
        for c in p.costs
    )
    assert fails("shared_shape", costs=costs)
    # a run started with more jobs than cores: not quiet
    machine = {
        **p.timings.machine,
        "load_average_1min": p.timings.machine["cpu_count"] + 1,
    }
    assert fails("quiet", t=replace(p.timings, machine=machine))


def test_the_page_reads_the_shares_and_mismatches_of_the_totals():
    p = page()
    low, high = p.share_range
    assert low.attention_share <= high.attention_share
    shares = sorted(q.attention_share for q in p.parts)
    assert (low.attention_share, high.attention_share) == (shares[0], shares[-1])
    base, reason = p.mismatches[0]
    assert base.name == "Transformer base" and base.total_m < base.stated_m and reason
    assert p.bert_one_head == 4 * 768**2


def test_the_rank_table_prints_what_the_module_computes():
    for r in _score_ranks(d_model=16, heads=(1, 4, 16), n=20):
        assert r.ranks_text == str(r.bound)  # every head on its bound: one number


def test_a_run_above_the_cores_shows_quartiles_and_headlines_no_ratio(
    tmp_path, monkeypatch
):
    data = measured.load("heads")
    cores = data["machine"]["cpu_count"]
    for load, loaded in ((cores, False), (cores + 20.06, True)):  # the planted record
        planted = {**data, "machine": {**data["machine"], "load_average_1min": load}}
        (tmp_path / "heads.json").write_text(json.dumps(seal(planted)))
        monkeypatch.setattr(measured, "DATA_DIR", tmp_path)
        p = cost_page.page.__wrapped__()  # the page of the planted record
        assert p.timings.load == load and p.facts["quiet"].holds is not loaded
        text = render(ROOT / "docs" / "cost.md", p)
        slow = p.timings.slowest
        layer_range = (
            f"{formatting.decimals(slow.layer_q1_ms, 1)} to "
            f"{formatting.decimals(slow.layer_q3_ms, 1)} ms"
        )
        assert ("times as long" in text) is not loaded
        assert (layer_range in text) is loaded
        assert ("rest of the layer (ms) |" in text) is not loaded
        assert ("states no ratio" in text) is loaded


@pytest.mark.parametrize("sealed_at, uncommitted", PLANTS)
def test_the_timings_say_when_at_which_commit_and_load_they_were_sealed(
    tmp_path, monkeypatch, sealed_at, uncommitted
):
    commit, load = "c0ffee1" + "0" * 33, 3.7
    sealed = plant("heads", tmp_path, monkeypatch, sealed_at, uncommitted, commit, load)
    p = cost_page.page.__wrapped__()  # the page of the planted record
    assert p.timings.seal == sealed and sealed.commit == commit
    assert sealed.date == (sealed_at[:10] if sealed_at else None)
    assert_printed(render(ROOT / "docs" / "cost.md", p), sealed)


# the whole layer: projections, scores, weighted sum


def test_the_whole_layer_at_the_count_tables_shape():
    cost = layer_multiply_adds(100, 512, 8)
    assert (cost.projections, cost.scores) == (104_857_600, 5_120_000)
    assert cost.weighted_sum == cost.scores and cost.total == 104_857_600 + 10_240_000
    timed = layer_multiply_adds(512, 512, 1)  # the timing table's n
    assert (timed.projections, timed.scores) == (536_870_912, 134_217_728)
    assert page().whole == cost and page().facts["projections_dominate"].holds


def test_the_projections_are_counted_from_a_real_layers_products():
    layer = MultiHeadAttention(48, 6, n_kv_heads=2)
    n = 10
    x = np.zeros((n, 48))
    products = [(x, layer.w_q), (x, layer.w_k), (x, layer.w_v), (x, layer.w_o)]
    counted = sum(a.shape[0] * w.size for a, w in products)  # rows × (in × out)
    cost = layer_multiply_adds(n, 48, 6, n_kv_heads=2)
    assert cost.projections == counted
    assert cost.scores == 6 * n * n * 8  # 6 heads, n × n dots of d_k = 8


@pytest.mark.parametrize(
    "d_model, n_heads, n_kv_heads, expected",
    [(512, 8, None, 1024), (768, 12, 12, 1536), (8192, 64, 8, 9216), (64, 4, 1, 80)],
)
def test_the_crossover_is_2d_for_mha_and_earlier_with_shared_kv_heads(
    d_model, n_heads, n_kv_heads, expected
):
    at = layer_multiply_adds(expected, d_model, n_heads, n_kv_heads=n_kv_heads)
    assert at.crossover == expected and at.projections == at.attention
    before = layer_multiply_adds(expected - 1, d_model, n_heads, n_kv_heads)
    assert before.projections > before.attention


def test_a_head_width_apart_from_d_model_is_counted_as_given():
    palm = layer_multiply_adds(2048, 18432, 48, n_kv_heads=1, d_k=256)
    assert palm.projections == 2048 * 18432 * (2 * 48 * 256 + 2 * 256)
    assert palm.scores == 48 * 2048**2 * 256


@pytest.mark.parametrize(
    "args, kwargs, name",
    [
        ((0, 512, 8), {}, "n"),
        ((10, 512, 7), {}, "d_model"),
        ((10, 512, 8), {"n_kv_heads": 3}, "n_kv_heads"),
        ((10, 512, 8), {"d_k": 0}, "d_k"),
        ((10, 512, 8), {"n_kv_heads": 3, "d_k": 64}, "n_kv_heads"),
    ],
)
def test_layer_multiply_adds_names_a_bad_argument(args, kwargs, name):
    with pytest.raises(ValueError, match=name):
        layer_multiply_adds(*args, **kwargs)


def test_every_published_context_is_in_the_layer_table_except_a_window():
    names = {r.name for r in _layer_costs()}
    assert {"BERT-base", "GPT-2 small", "Llama-2 7B", "Qwen2.5 7B"} <= names
    assert "Mistral 7B v0.1" not in names and "Transformer base" not in names
    bert = {r.name: r for r in _layer_costs()}["BERT-base"]
    assert bert.cost == layer_multiply_adds(512, 768, 12)
    assert bert.weights == 12 * 512 * 512 and bert.weights_gb == 12 * 512**2 * 2 / 1e9
    shares = [r.share for r in _layer_costs()]
    assert shares == sorted(shares) and 0 < shares[0] < shares[-1] < 1


def test_the_whole_layer_facts_turn_false():
    layers, names = (
        _layer_costs(),
        ("projections_dominate", "crossover_2d", "most_below"),
    )
    assert not any(fails(n, whole=layer_multiply_adds(100, 512, 8)) for n in names)
    long = layer_multiply_adds(4096, 512, 8)  # past the crossover
    assert fails("projections_dominate", whole=long)
    bert = next(r for r in layers if r.name == "BERT-base")  # an MHA model
    shared = replace(bert, cost=layer_multiply_adds(512, 768, 12, n_kv_heads=4))
    assert fails("crossover_2d", whole=long, layers=(shared, *layers))
    longer = tuple(  # every context 100 times longer: past every crossover
        replace(
            r,
            context=100 * r.context,
            cost=layer_multiply_adds(
                100 * r.context, r.d_model, r.n_heads, r.n_kv_heads, r.d_k
            ),
        )
        for r in layers
    )
    assert fails("most_below", whole=long, layers=longer)


def test_the_layer_split_figure_draws_two_parts_a_model():
    layers = _layer_costs()
    fig = layer_split(layers)
    assert len(fig.axes[0].patches) == 2 * len(layers)
    p = page()
    assert "Qwen2.5 7B" in _figures(p.timings, p.ranks, layers)["layer_split"].alt


def test_the_layer_tables_units_are_the_counts_scaled():
    r = {c.name: c for c in _layer_costs()}["GPT-2 small"]
    assert r.billions == (r.cost.projections / 1e9, r.cost.attention / 1e9)
    assert r.weights_millions == 12 * 1024**2 / 1e6


# --- its figures --------------------------------------------------------------
# The cost figures draw the page's timings, score ranks and layer shares under the
# names of what they measure.


def test_head_timings_draws_each_parts_median_and_quartile_band():
    p, (panel,) = drawn("cost", "head_timings")
    rows = p.timings.rows
    heads = [r.n_heads for r in rows]
    parts = {
        "whole layer": "layer",
        "attention core (scores, softmax, weighted sum)": "attention",
    }
    assert_series(
        panel.lines,
        {
            label: [heads, [getattr(r, f"{part}_ms") for r in rows]]
            for label, part in parts.items()
        },
    )
    assert len(panel.bands) == len(parts)
    for band, part in zip(panel.bands.values(), parts.values(), strict=True):
        quartiles = {
            (r.n_heads, getattr(r, f"{part}_{q}_ms"))
            for r in rows
            for q in ("q1", "q3")
        }
        assert {tuple(point) for point in band} == quartiles
    assert panel.xticks == [str(h) for h in heads]
    assert f"d_model = {p.timings.d_model}" in panel.xlabel


def test_score_ranks_draws_every_heads_rank_and_the_bound():
    p, (panel,) = drawn("cost", "score_ranks")
    d_k = [r.d_k for r in p.ranks]
    assert_series(
        panel.lines,
        {
            "min(n, d_k)": [d_k, [r.bound for r in p.ranks]],
            "rank of each head's score matrix": [
                [r.d_k for r in p.ranks for _ in r.ranks],
                np.concatenate([r.ranks for r in p.ranks]),
            ],
        },
    )
    assert panel.xticks == [str(d) for d in d_k]
    assert f"n = {p.ranks[0].n} tokens" in panel.xlabel


def test_layer_split_draws_each_models_shares_and_prints_them():
    p, (panel,) = drawn("cost", "layer_split")
    shares = np.array([r.share for r in p.layers])
    assert_series(
        panel.bars,
        {
            "projections (4·n·d² for MHA)": 1 - shares,
            "scores and weighted sum (2·n²·d)": shares,
        },
    )
    assert panel.yticks == [f"{r.name}, n = {r.context:,}" for r in p.layers]
    printed = [
        text
        for share in shares  # each part's share, where the part has room for it
        for text, room in (
            (f"{1 - share:.0%}", share < 0.85),
            (f"{share:.0%}", share > 0.15),
        )
        if room
    ]
    assert panel.texts == printed
