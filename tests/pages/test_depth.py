"""Depth: the induction task, the built circuit, the trained models, SmolLM2's heads.

The reference test (``-m reference``) recomputes the head scores with transformers.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha.pages import depth
from mha.pages.depth import induction, repeated_tokens
from mha.pages.depth.induction_training import Shape, init_params, loss_and_grads
from mha.pretrained import smollm2
from tests.reference import reference_module


def brute_force_targets(tokens: list[int]) -> list[int]:
    """The token after the most recent earlier occurrence, by a plain loop."""
    answers = []
    for t, token in enumerate(tokens):
        earlier = [j for j in range(t) if tokens[j] == token]
        answers.append(tokens[earlier[-1] + 1] if earlier else -1)
    return answers


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=30))
def test_targets_are_the_token_after_the_most_recent_earlier_occurrence(tokens):
    assert induction.targets_of(np.array(tokens)).tolist() == brute_force_targets(
        tokens
    )


def test_sequences_are_two_shuffles_and_only_the_second_is_scored():
    batch = induction.sample(50, np.random.default_rng(0))
    v = induction.VOCAB
    assert (np.sort(batch.tokens[:, :v], axis=1) == np.arange(v)).all()
    second = batch.tokens[:, v:]
    assert all(len(set(row)) == len(row) for row in second.tolist())
    assert not (second == batch.tokens[:, v - 1 : v]).any()  # the first's last
    assert not batch.scored[:, :v].any() and batch.scored[:, v:].all()
    with pytest.raises(ValueError, match="length"):
        induction.sample(2, vocab=8, length=16)
    with pytest.raises(ValueError, match="tokens"):
        induction.targets_of(np.array([0.5, 1.5]))


def test_the_built_circuit_solves_the_task_and_needs_its_first_layer():
    circuit = induction.build()
    batch = induction.sample(depth.N_TEST, np.random.default_rng(0))
    assert circuit.accuracy(batch) == 1.0
    _, weights = circuit.run(batch.tokens[:20])
    t = np.arange(1, induction.LENGTH)
    assert (weights[0][:, 0, t].argmax(axis=-1) == t - 1).all()  # previous-token head
    # without the previous-token head's write, the induction head's keys see nothing
    assert circuit.silenced().accuracy(batch) < 2 / induction.VOCAB


def test_the_circuit_refuses_a_length_its_recency_cannot_order():
    with pytest.raises(ValueError, match="length"):
        induction.build(vocab=40, length=80)


@pytest.mark.parametrize("shape", [Shape(1, 2), Shape(2, 1)], ids=lambda s: s.name)
def test_gradients_equal_finite_differences(shape):
    params = init_params(shape, [0, 1], dtype=np.float64)
    batch = induction.sample(4, np.random.default_rng(1))
    tokens = np.stack([batch.tokens] * 2)
    targets = np.stack([batch.targets] * 2)
    loss, grads = loss_and_grads(params, tokens, targets, shape)
    rng = np.random.default_rng(2)
    step = 1e-6
    for name, array in params.items():
        for _ in range(3):
            where = (1, *(int(rng.integers(0, s)) for s in array.shape[1:]))
            moved = {k: v.copy() for k, v in params.items()}
            moved[name][where] += step
            moved_loss, _ = loss_and_grads(moved, tokens, targets, shape)
            numeric = (moved_loss[1] - loss[1]) / step
            assert numeric == pytest.approx(grads[name][where], rel=1e-3, abs=1e-7)


def test_the_two_shapes_have_the_same_attention_parameters():
    counts = []
    for shape in (Shape(1, 2), Shape(2, 1)):
        params = init_params(shape, [0])
        counts.append(sum(a.size for k, a in params.items() if k.startswith("w_")))
        assert counts[-1] == shape.attention_params()
    assert counts[0] == counts[1]


def test_stacking_learns_the_task_and_one_layer_does_not():
    task, scan = depth.task(), repeated_tokens.scan()
    assert task.constructed == 1.0
    assert (task.one.accuracy < 2 * task.chance).all()
    assert (task.two.accuracy >= 0.9).all()
    assert task.count_guess < 2 * task.chance < task.uniform_guess
    facts = depth.facts(task, scan)
    # the one-layer models as good as the two-layer ones: the sentences go false
    equal = dataclasses.replace(task.one, accuracy=task.two.accuracy)
    worse = depth.facts(dataclasses.replace(task, one=equal), scan)
    assert facts["one_layer"].holds and not worse["one_layer"].holds
    assert facts["one_below_twice"].holds and not worse["one_below_twice"].holds
    guess = depth.facts(dataclasses.replace(task, uniform_guess=task.chance), scan)
    assert facts["count_guess"].holds and not guess["count_guess"].holds


def test_the_scan_facts_turn_false_with_other_values():
    scan = repeated_tokens.scan()
    facts = depth.facts(depth.task(), scan)
    assert facts["second_copy"].holds and facts["ablation"].holds
    assert facts["sinks"].holds and facts["below_even"].holds and facts["louder"].holds
    no_copy = dataclasses.replace(scan, loss_second=scan.loss_first)
    harmless = dataclasses.replace(scan, loss_top=scan.loss_clean)
    no_sink = dataclasses.replace(scan, first_token=0 * scan.first_token)
    assert not depth.facts(depth.task(), no_copy)["second_copy"].holds
    assert not depth.facts(depth.task(), harmless)["ablation"].holds
    assert not depth.facts(depth.task(), no_sink)["sinks"].holds
    assert depth.page().louder == ["L0", "L29"]
    assert depth.page().below_even == ["L0", "L1", "L11"]


def test_scores_on_hand_made_patterns():
    half = 3
    n = 2 * half
    induction_pattern = np.zeros((n, n))
    induction_pattern[np.arange(half, n), np.arange(1, half + 1)] = 1
    assert repeated_tokens.induction_scores(induction_pattern, half) == 1
    assert repeated_tokens.previous_token_scores(induction_pattern) < 1
    assert repeated_tokens.previous_token_scores(np.eye(n, k=-1)) == 1
    with pytest.raises(ValueError, match="weights"):
        repeated_tokens.induction_scores(np.ones((3, 4)), 2)


def test_smollm2_has_induction_heads_and_they_carry_the_repeat():
    scan = repeated_tokens.scan()
    top = repeated_tokens.strongest(scan.induction, repeated_tokens.N_ABLATED)
    scores = [scan.induction[h] for h in top]
    assert scores == sorted(scores, reverse=True)
    assert scan.loss_second < scan.loss_first
    assert scan.loss_top > scan.loss_random.max()
    assert (
        len({tuple(map(tuple, s)) for s in scan.random_sets})
        == repeated_tokens.N_RANDOM_SETS
    )
    assert not set(map(tuple, scan.random_sets.reshape(-1, 2).tolist())) & set(top)
    assert np.all((scan.first_token >= 0) & (scan.first_token <= 1))


@pytest.fixture(scope="module")
def model() -> smollm2.SmolLM2:
    return smollm2.load()


@pytest.mark.reference
def test_head_scores_equal_the_reference(model, request):
    """The induction and previous-token scores, from transformers' attention weights:
    equal to 1e-3 on the page's sequences for all 270 heads; on 8 fresh sequences the
    reference's five strongest induction heads hold at least four of the page's five."""
    torch = reference_module("torch", request.config)
    transformers = reference_module("transformers", request.config)
    reference_module("accelerate", request.config)  # to load a GGUF model
    path = smollm2.gguf_path()
    reference_model = transformers.AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32
    ).eval()
    reference_model.config._attn_implementation = "eager"  # weights come back

    def reference_scores(sequences: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        induction, previous = [], []
        for ids in sequences:
            with torch.no_grad():
                out = reference_model(
                    torch.tensor([ids.tolist()]), output_attentions=True
                )
            weights = np.stack([a[0].numpy() for a in out.attentions]).astype(float)
            induction.append(repeated_tokens.induction_scores(weights))
            previous.append(repeated_tokens.previous_token_scores(weights))
        return np.mean(induction, axis=0), np.mean(previous, axis=0)

    scan = repeated_tokens.scan()
    induction, previous = reference_scores(repeated_tokens.repeated_sequences(model))
    np.testing.assert_allclose(induction, scan.induction, atol=1e-3, rtol=0)
    np.testing.assert_allclose(previous, scan.previous, atol=1e-3, rtol=0)

    fresh = repeated_tokens.repeated_sequences(model, np.random.default_rng(2026))
    fresh_induction, _ = reference_scores(fresh)
    n = repeated_tokens.N_ABLATED
    site = set(repeated_tokens.strongest(scan.induction, n))
    reference = set(repeated_tokens.strongest(fresh_induction, n))
    assert len(site & reference) >= n - 1
