"""The answers to the seven active-recall questions, as the page shows them, and the
exercises' place in the reading order."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from mha.accounting import layer_multiply_adds, param_count
from mha.pages.exercises import _facts as facts
from mha.pages.exercises import _recall_facts as recall_facts
from mha.pages.exercises import page
from mha.worked.cricket import V_TRIPLED, V, solve


def test_four_heads_of_one_dimension():
    ans = page().four_heads
    assert (ans["d_model"], ans["n_heads"], ans["d_k"], ans["scale"]) == (4, 4, 1, 1.0)
    assert abs(ans["two_head_scale"] - np.sqrt(2)) < 1e-12
    assert np.allclose(ans["weights"][2], 1 / 3)  # q(his) is zero in dimension 3
    assert ans["weights"][0].argmax() == 0  # dimension 1 points at "Kohli"


def test_bert_base_holds_2_359_296_parameters():
    ans = page().bert
    assert ans["d_k"] == 64 and ans["d_squared"] == 768**2
    assert ans["params"] == ans["params_from_arrays"] == ans["four_d_squared"]
    assert ans["params"] == 2_359_296


def test_tripling_a_value_moves_outputs_not_weights():
    before, after = solve(), solve(v=V_TRIPLED)
    for run in ("full", "head_a", "head_b"):
        assert np.allclose(getattr(before, run).weights, getattr(after, run).weights)
    assert np.allclose(after.head_a.output, before.head_a.output)
    assert np.allclose(after.head_b.output, 3 * before.head_b.output)
    assert abs(after.head_b.output[0] - 0.852) < 5e-4
    assert page().moved.tolist() == [2]  # "only the third coordinate (index 2)"


def test_the_scaled_variance_does_not_depend_on_the_head_count():
    for row in page().variance:
        assert abs(row["raw"] / row["theory_raw"] - 1) < 0.1
        assert abs(row["scaled"] - 1) < 0.1


def test_what_pruning_removes_in_parameters():
    ans = page().pruning
    assert ans["per_head"] == 4 * 512 * 64 == 131_072
    assert ans["pruned"] == 38 * 131_072 == 4_980_736
    assert ans["total"] == 6 * 4 * 512**2 == 6_291_456
    assert ans["kept_heads"] == 10 and abs(ans["pruned_share"] - 38 / 48) < 1e-12


def test_the_seed_flops_comparison():
    ans = page().cost
    assert (ans["n"], ans["d_model"], ans["n_heads"], ans["d_k"]) == (100, 512, 8, 64)
    assert ans["one_head"] == ans["many_heads"] == 5_120_000
    assert ans["per_head"] == 640_000 and ans["many_heads_flops"] == 10_240_000


def test_the_flat_head_is_named_from_0_and_its_fact_holds():
    p = page()
    assert p.facts["flat_head"].holds and p.flat == [2]  # 0-based: the third head
    assert np.allclose(p.four_heads["weights"][2], 1 / 3)


PAGE = Path(__file__).parents[2] / "docs" / "exercises.md"


def test_exercises_needing_gqa_or_the_cache_come_after_it_or_link_it_first():
    """Issue: an exercise on GQA or the KV cache must not come before its lesson."""
    nav = (Path(__file__).parents[2] / "mkdocs.yml").read_text()
    after = nav.index("exercises.md") > nav.index("kv-cache.md")
    text = PAGE.read_text()
    sections = re.split(r"\n### ", text.split("## Exercises", 1)[1])[1:]
    needing = [s for s in sections if re.search(r"grouped-query|K/V|KV cache", s)]
    assert len(needing) == 3  # the GQA count, the K/V heads, the decode step
    for section in needing:
        first_code = section.index("```")
        assert after or "(kv-cache.md)" in section[:first_code], section[:60]


def test_the_recall_says_encoder_heads_and_a_per_layer_cache():
    text = PAGE.read_text()
    question = text.split('"Question: pruning against parameter counts"')[1]
    assert "pruned most encoder heads" in question.split("??? success")[0]
    assert "one layer's cache" in text and "per layer" in text


def test_the_recall_answers_facts_hold_and_turn_false_on_other_values():
    p = page()
    assert all(f.holds for f in p.facts.values()), {
        k: f.values for k, f in p.facts.items() if not f.holds
    }
    args = (p.four_heads["weights"], p.bert, p.cost)
    even = np.full((4, 3), 1 / 3)  # every head flat: no single head to name
    assert not facts(even, *args[1:], p.example, p.tripled)["flat_head"].holds
    found = facts(*args, p.example, p.example)  # nothing tripled: nothing moves
    assert found["no_weight_changes"].holds and not found["single_moves"].holds
    assert not found["head_b_triples"].holds
    bigger = {**p.cost, "many_heads": p.cost["many_heads"] + 1}
    assert not facts(args[0], p.bert, bigger, p.example, p.tripled)["flops_same"].holds


def test_the_bert_and_tripling_answers_turn_false_on_other_values():
    p = page()
    args = (p.four_heads["weights"], p.bert, p.cost, p.example, p.tripled)
    # a count read from a layer with biases: no longer the same as 4·d_model²
    biased = param_count(p.bert["d_model"], p.bert["n_heads"], bias=True)
    bert = {**p.bert, "params_from_arrays": biased}
    assert not facts(args[0], bert, *args[2:])["bert_same"].holds
    # a query for "his" leaning to "Kohli" after the tripling: the weights move
    moved = solve(q=np.array([2.0, 1.0, 0.0, 1.0]), v=V_TRIPLED)
    assert not facts(*args[:4], moved)["no_weight_changes"].holds
    # v(Kohli) tripled instead of v(century): head A's output moves
    kohli = solve(v=np.array(V) * [[3.0], [1.0], [1.0]])
    assert not facts(*args[:4], kohli)["head_a_still"].holds


def test_the_answers_on_masks_cross_attention_the_ffn_depth_and_the_cache():
    p = page()
    assert (p.masks["kept"], p.masks["scores"]) == (10, 16)  # 4·5/2 of 4²
    assert np.allclose(p.masks["first"], p.masks["v_first"])
    assert p.cross["weights"].shape == (4, 3, 5)
    assert np.allclose(p.cross["weights"].sum(axis=-1), 1)
    assert p.hull["within"] == p.hull["checks"] == 6 * 4
    assert (p.depth["n_layers"], p.depth["n_heads"]) == (30, 9)
    assert p.depth["pairs"] == 81 * sum(range(30))  # h² heads below, for each layer
    big, small = p.kv["big"], p.kv["small"]
    assert big["bytes"] == 2 * 32 * 32 * 128 * 4096 * 2  # K and V, layers, heads, ...
    assert small["bytes"] == 2 * 80 * 8 * 128 * 4096 * 2
    assert p.whole.projections == 104_857_600 and p.whole.attention == 10_240_000
    assert p.whole.crossover == 1024


def test_the_new_recall_facts_turn_false_on_other_values():
    p = page()
    args = {k: getattr(p, k) for k in ("masks", "cross", "hull", "kv", "whole")}
    assert all(f.holds for f in recall_facts(**args).values())
    moved = {**p.masks, "first": p.masks["first"] + 1}
    assert not recall_facts(**args | {"masks": moved})["first_copies"].holds
    flat = {**p.cross, "weights": p.cross["weights"] * 2}
    assert not recall_facts(**args | {"cross": flat})["rows_over_memory"].holds
    outside = {**p.hull, "within": p.hull["checks"] - 1}
    assert not recall_facts(**args | {"hull": outside})["all_within"].holds
    swapped = {**p.kv, "big": p.kv["small"], "small": p.kv["big"]}
    assert not recall_facts(**args | {"kv": swapped})["gqa_smaller"].holds
    long = layer_multiply_adds(4096, 512, 8)
    assert not recall_facts(**args | {"whole": long})["projections_more"].holds


def test_the_scores_that_tiled_attention_never_holds():
    ans = page().online
    assert ans["scores_bytes"] == ans["n"] ** 2 * 8 == 2048 * 2048 * 8
    assert ans["block_bytes"] == 128 * 128 * 8 and ans["blocks"] == 16 * 16
    assert ans["naive_mb"] * 1e6 >= ans["dense_arrays"] * ans["scores_bytes"]
    assert ans["tiled_mb"] < ans["naive_mb"] / 8


def test_the_keys_question_prints_the_circuits_pages_patching():
    keys = page().keys
    assert keys["sender"] == "L16H0" and keys["receiver"] == "L18H6"
    assert keys["patched"] < keys["clean"] / 10 < keys["control"] / 5
