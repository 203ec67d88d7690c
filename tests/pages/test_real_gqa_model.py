"""The real-model page: SmolLM2's cache, its K/V heads repeated and mean-pooled, and
what the page states about them and about the benchmark.

The study runs once per code and model file (cached); each fact is also made false
by a changed result.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

from mha import MultiHeadAttention, causal_mask
from mha.figures.plotted import plotted
from mha.pages import real_gqa_model as gqa
from mha.pages.real_gqa_model import _swap_rope_pairing
from mha.pretrained import smollm2
from mha.rope import RotaryEmbedding
from mha_site.facts import choosing, stated
from tests.conftest import ROOT
from tests.docs.rendering import render
from tests.pages.drawn import draw
from tests.pages.sealed import PLANTS, assert_printed, plant


@pytest.fixture(scope="module")
def page():
    return gqa.page()


def test_the_cache_holds_what_the_formula_says(page):
    r = page.study
    assert r.gqa.nbytes == r.gqa.formula and r.mha.nbytes == r.mha.formula
    assert r.gqa.lengths == tuple(range(r.gqa.lengths[0], r.gqa.lengths[-1] + 1))
    assert r.gqa.bytes_per_token == 30 * 2 * 3 * 64 * 4
    assert (
        r.mha.bytes_per_token
        == 3 * r.gqa.bytes_per_token
        == page.cache_ratio * (r.gqa.bytes_per_token)
    )
    assert r.mqa.bytes_per_token * 3 == r.gqa.bytes_per_token
    assert (r.gqa.n_kv_heads, r.mha.n_kv_heads, r.mqa.n_kv_heads) == (3, 9, 1)


def test_nine_kv_heads_give_the_same_model_and_one_breaks_it(page):
    r = page.study
    assert "Paris" in r.gqa.answer and r.mha.answer == r.gqa.answer
    assert r.mha_max_logit_diff < 1e-4 * r.logit_scale
    assert r.mha_perplexity == pytest.approx(r.perplexity, rel=1e-3)
    assert r.mqa_perplexity > 10 * max(r.mqa_layer_perplexity)
    assert len(r.mqa_layer_perplexity) == 30
    assert r.mqa_layer_perplexity[r.worst_layer] == max(r.mqa_layer_perplexity)
    assert r.mqa_layer_perplexity[r.best_layer] == min(r.mqa_layer_perplexity)
    # the per-token losses are the perplexities', token by token
    assert r.mqa_layer_loss.shape == (30, r.n_tokens - 1)
    np.testing.assert_allclose(
        np.exp(r.mqa_layer_loss.mean(axis=1)), r.mqa_layer_perplexity, rtol=1e-12
    )
    assert np.exp(r.token_loss.mean()) == pytest.approx(r.perplexity, rel=1e-9)


def test_one_paragraph_cannot_rank_the_kindest_layers(page):
    """The paired standard error of a layer's per-token loss change is larger than the
    change of the kindest layers: they tie within noise; the worst does not."""
    r, rank = page.study, page.ranking
    assert (
        rank["best"]["layer"] == r.best_layer
        and rank["worst"]["layer"] == r.worst_layer
    )
    difference = r.mqa_layer_loss[r.best_layer] - r.token_loss
    error = difference.std(ddof=1) / np.sqrt(len(difference))
    assert rank["best"]["change"] == pytest.approx(np.expm1(difference.mean()))
    assert rank["best"]["error"] == pytest.approx(np.expm1(error))
    assert abs(rank["best"]["change"]) < rank["best"]["error"]
    assert (
        rank["tied"][:3]
        == sorted(range(30), key=lambda i: r.mqa_layer_perplexity[i])[:3]
    )
    assert r.worst_layer not in rank["tied"] and len(rank["tied"]) > 2
    assert page.facts["best_is_noise"].holds and page.facts["worst_is_not"].holds
    # a paragraph on which the best layer is clearly kinder, token by token: no tie
    kinder = r.mqa_layer_loss.copy()
    kinder[r.best_layer] = r.token_loss - 0.5
    clear = dataclasses.replace(r, mqa_layer_loss=kinder)
    stale = gqa._facts(clear, page.bench, page.every.counts, page.paper)
    assert not stale["best_is_noise"].holds
    # the worst layer as noisy as its change: no longer outside the noise
    noisy = r.mqa_layer_loss.copy()
    shift = noisy[r.worst_layer].mean() - r.token_loss.mean()  # the same change
    noise = np.resize([-10.0, 10.0], len(r.token_loss))
    noisy[r.worst_layer] = r.token_loss + shift + noise
    blurred = dataclasses.replace(r, mqa_layer_loss=noisy)
    assert not gqa._facts(blurred, page.bench, page.every.counts, page.paper)[
        "worst_is_not"
    ].holds


def test_the_stacked_variants_lose_what_each_variant_alone_loses():
    # each layer converted alone, run as its own model on a short text (the first 4
    # blocks, to be quick): the study's one unchanged pass and stacked variants give
    # the same per-token losses
    full = smollm2.load()
    model = dataclasses.replace(full, blocks=full.blocks[:4])
    ids = model.encode("The cat sat on the warm mat, and then it slept.")
    tokens, targets = ids[:-1], ids[1:]
    alone = [
        smollm2.token_losses(
            model.map_attention(gqa._to_mqa, layers=[layer]).logits(tokens), targets
        )
        for layer in range(4)
    ]
    entering = [x[:, :-1] for x in gqa._streams(model, ids)[:-1]]
    stacked = gqa._one_layer_at_a_time(model, gqa._to_mqa, entering, targets)
    assert stacked.shape == (4, len(targets))
    assert np.allclose(stacked, alone, rtol=0, atol=1e-5)
    assert np.ptp(stacked.mean(axis=1)) > 1e-3  # the layers differ: not one copied


def test_expand_kv_heads_keeps_a_biased_layers_outputs():
    rng = np.random.default_rng(1)
    gqa_layer = MultiHeadAttention(d_model=12, n_heads=6, n_kv_heads=2, bias=True)
    gqa_layer.b_k = rng.normal(size=gqa_layer.b_k.shape)
    gqa_layer.b_v = rng.normal(size=gqa_layer.b_v.shape)
    full = gqa.expand_kv_heads(gqa_layer)
    x = rng.normal(size=(1, 4, 12))
    assert full.n_kv_heads == 6 and gqa_layer.n_kv_heads == 2
    assert full.b_k.shape == (12,) and np.allclose(full.b_k[:2], gqa_layer.b_k[:2])
    assert np.allclose(full(x, causal_mask(4))[0], gqa_layer(x, causal_mask(4))[0])


def test_the_wrong_rope_pairing_scrambles_positions(page):
    """Read from the study: ``swap_rope_pairing`` shares the loaded model's RoPE
    tables (a shallow copy), so it is not run again on the model here."""
    assert page.study.swapped_rope_perplexity >= 5 * page.study.perplexity


def test_the_speed_values_are_the_benchmarks(page):
    bench, speed = page.bench, page.speed
    assert speed["bound_ms"] == pytest.approx(1000 / bench["bound_tokens_per_s"])
    assert speed["n_products"] == 4 * 30 + 1 and speed["read_gib"] > 0
    assert speed["qkv_mb"] == pytest.approx(576 * (9 + 2 * 3) * 64 * 4 / 1e6)
    assert speed["w_o_mb"] == pytest.approx(576 * 9 * 64 * 4 / 1e6)
    assert page.group == 3 and page.paper["MQA-XXL"].model == "MQA-XXL"


def test_every_fact_of_the_page_holds(page):
    # a sentence that picks its words by its own fact (whether the bench reached its
    # target, whether the machine was busy) may be false: the page says so either
    # way, and its marker says which; every other sentence the page states must hold
    text = (ROOT / "docs" / "real-gqa-model.md").read_text()
    sentences, either_way = stated(text), choosing(text)
    stale = {
        name: f.values
        for name, f in page.facts.items()
        if not f.holds and name in sentences - either_way
    }
    assert not stale and {"target", "busy"} <= either_way
    assert set(page.figures) == {"mqa_by_layer"}
    assert page.figures["mqa_by_layer"].data == (
        page.study.mqa_layer_perplexity,
        page.study.perplexity,
        page.study.mqa_perplexity,
    )


def test_the_study_facts_turn_false_on_other_results(page):
    r = page.study
    other = dataclasses.replace(
        r,
        mha=dataclasses.replace(r.mha, answer=r.mqa.answer),
        mqa=dataclasses.replace(r.mqa, answer=r.gqa.answer),
        mha_max_logit_diff=r.logit_scale,
        mha_perplexity=2 * r.perplexity,
        mqa_layer_perplexity=(r.perplexity,) * 30,  # even, and all close
    )
    stale = gqa._facts(other, page.bench, page.every.counts, page.paper)
    for name in (
        "same_answer",
        "mha_logits",
        "logits_exact",
        "same_perplexity",
        "no_longer_answers",
        "uneven",
        "bars",
    ):
        assert not stale[name].holds, name
    assert stale["rows_agree"].holds and stale["mqa_breaks"].holds


def test_the_cache_conversion_and_paper_facts_turn_false_on_other_results(page):
    r, paper = page.study, page.paper

    def stated(study=r, paper=paper) -> dict:
        return gqa._facts(study, page.bench, page.every.counts, paper)

    # the answer's last token fed back: the cache one token past the formula's
    fed = r.gqa.nbytes[-1] + r.gqa.bytes_per_token
    longer = dataclasses.replace(r.gqa, nbytes=(*r.gqa.nbytes[:-1], fed))
    assert not stated(dataclasses.replace(r, gqa=longer))["rows_agree"].holds
    # every layer converted at once doing no worse than the worst layer alone
    mild = dataclasses.replace(r, mqa_perplexity=max(r.mqa_layer_perplexity))
    assert not stated(mild)["mqa_breaks"].holds
    # the uptrained MQA model scoring no better than the smaller MHA-Large
    large = paper["MHA-Large"].average_score
    far = dataclasses.replace(paper["MQA-XXL"], average_score=large)
    assert not stated(paper={**paper, "MQA-XXL": far})["uptrained_close"].holds


def test_the_benchmark_and_widget_facts_turn_false_on_other_results(page):
    slow = {
        **page.bench,
        "products_gb_per_s": 2 * page.bench["read_bandwidth_gb_per_s"],
        "prefill_tokens_per_s": page.bench["decode_tokens_per_s"],
        "decode_bound_ratio": page.bench["budget_decode_bound_ratio"] / 2,
    }
    stale = gqa._facts(page.study, slow, {"first token": 1, "mixed": 269}, page.paper)
    for name in ("products_slower", "prefill_faster", "target", "sink_heads"):
        assert not stale[name].holds, name


def test_the_swapped_pairing_is_a_fresh_rotation_and_leaves_the_original_alone():
    """The wrong-pairing model must equal a rotation built from scratch with the other
    pairing, and running it first must not change the original's outputs (a shallow
    copy shared its cached cos/sin tables: the published perplexity was a hybrid)."""
    layer = MultiHeadAttention(d_model=16, n_heads=4, n_kv_heads=2)
    layer.rope = RotaryEmbedding(4, base=500.0, interleaved=True)
    x = np.random.default_rng(0).normal(size=(1, 9, 16))
    before, _ = layer(x)
    swapped = _swap_rope_pairing(layer)
    from_scratch = copy.copy(layer)
    from_scratch.rope = RotaryEmbedding(4, base=500.0, interleaved=False)
    np.testing.assert_array_equal(swapped(x)[0], from_scratch(x)[0])
    assert not np.allclose(swapped(x)[0], before)
    np.testing.assert_array_equal(layer(x)[0], before)


def test_the_predicted_step_bytes_are_the_benchmarked_models_own(page):
    """The page predicts from the configuration; the bench counted the arrays of the
    model and of its expansion: the two must agree to the byte."""
    for row in page.decoding["grouped"]:
        measured = row["predicted_bytes"]
        assert row["gqa_bytes"] == measured["gqa"]
        assert row["mha_bytes"] == measured["mha"]
    assert page.decoding["cache_per_token"] == 30 * 2 * 3 * 64 * 4 == 46_080


def test_the_decoding_facts_turn_false_on_other_results(page):
    d = page.decoding
    slow = [
        {**r, "cached_tokens_per_s": {**r["cached_tokens_per_s"], "q1": 0.0}}
        for r in d["recompute"]
    ]
    flat = [{**r, "speedup": {**r["speedup"], "median": 2.0}} for r in d["recompute"]]
    level = [{**r, "predicted_ratio": 1.1} for r in d["grouped"]]
    assert not gqa._decoding_facts({**d, "recompute": slow})["cache_always"].holds
    assert not gqa._decoding_facts({**d, "recompute": flat})["gap_grows"].holds
    assert not gqa._decoding_facts({**d, "grouped": level})["predicted_grows"].holds
    assert gqa._decoding_facts({**d, "busy": True})["busy"].holds
    assert not gqa._decoding_facts({**d, "busy": False})["busy"].holds


# --- its figures --------------------------------------------------------------
# The real grouped-query model's figure draws the study's perplexities under their
# own labels: a bar per layer, the published model and every layer converted.


def test_mqa_by_layer_draws_each_layers_perplexity_and_the_two_references():
    study = gqa.page().study
    (panel,) = plotted(draw(gqa.page(), "mqa_by_layer"))
    assert panel.bars["MQA in this layer only"].tolist() == list(
        study.mqa_layer_perplexity
    )
    every = panel.lines["MQA in every layer at once"][1]
    published = panel.lines["as published (3 K/V heads)"][1]
    assert every.tolist() == [study.mqa_perplexity] * 2
    assert published.tolist() == [study.perplexity] * 2
    assert panel.xticks == [str(i) for i in range(len(study.mqa_layer_perplexity))][::3]


def test_a_step_at_its_bound_breaks_the_far_from_bound_fact(page):
    """Steps that ran at their bound: the byte ratio would predict their times, and
    the sentence that says they ran far from it goes false."""
    d = page.decoding  # as measured: either way, the sentence chooses its words by it
    far = [{**row, "bound_fraction": 0.1} for row in d["grouped"]]
    assert gqa._decoding_facts({**d, "grouped": far})["far_from_bound"].holds
    assert d["fractions"] == (
        min(r["bound_fraction"] for r in d["grouped"]),
        max(r["bound_fraction"] for r in d["grouped"]),
    )
    at_bound = [{**row, "bound_fraction": 1.0} for row in d["grouped"]]
    assert not gqa._decoding_facts({**d, "grouped": at_bound})["far_from_bound"].holds
    for row in d["grouped"]:  # at the bound the two predictions agree
        full = gqa._decoding(
            page.decode_bench,
            page.study.config,
            page.bench["weight_bytes_per_token"],
            row["gqa_bytes"] / (row["ms"]["gqa"]["median"] / 1000),
        )
        (same,) = [r for r in full["grouped"] if r["context"] == row["context"]]
        assert same["at_fraction_ratio"] == pytest.approx(same["predicted_ratio"])


def test_every_decode_speed_is_a_recorded_one_with_its_threads_and_load(page):
    bench, decoded = page.bench, page.decoding
    rows = page.speeds
    recorded = {r["context"]: r for r in decoded["recompute"]}
    cached_rows = [r for r in rows if r["what"] == "decode with the KV cache"]
    assert cached_rows[0]["tokens_per_s"] == bench["decode_tokens_per_s"]
    assert cached_rows[0]["threads"] == bench["machine"]["cpu_count"]
    for row in cached_rows[1:]:
        expected = recorded[row["context"]]["cached_tokens_per_s"]["median"]
        assert row["tokens_per_s"] == expected and row["threads"] == 1
        assert row["load"] == decoded["load"]
    # the GGUF file as stored: Q4_1 and Q8_0 blocks, about 5.6 times fewer bytes
    assert 5 < page.stored_ratio < 6.4
    assert page.stored_bound == pytest.approx(
        bench["bound_tokens_per_s"] * page.stored_ratio, rel=1e-2
    )


@pytest.mark.parametrize("sealed_at, uncommitted", PLANTS)
def test_each_bench_result_says_when_at_which_commit_and_load_it_was_sealed(
    tmp_path, monkeypatch, sealed_at, uncommitted
):
    model = plant(  # the model's speeds: its own table, and the table of every speed
        "smollm2", tmp_path, monkeypatch, sealed_at, uncommitted, "a" * 40, 6.1
    )
    steps = plant(  # the decoding steps: their section's intro, note, and that table
        "decode", tmp_path, monkeypatch, sealed_at, uncommitted, "b" * 40, 7.3
    )
    p = gqa.page.__wrapped__()  # the page of the planted records
    assert p.seal == model and p.decoding["seal"] == steps
    text = render(ROOT / "docs" / "real-gqa-model.md", p)
    assert_printed(text, model, times=2)
    assert_printed(text, steps, times=3)
