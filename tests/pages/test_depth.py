"""Depth: the induction task, the built circuit, the trained models, SmolLM2's heads."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha.experiments import induction, repeated_tokens
from mha.experiments.induction_training import Shape, init_params, loss_and_grads
from mha.pages import depth
from mha.support.claims import check


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
    batch = depth.test_batch()
    assert circuit.accuracy(batch) == 1.0
    _, weights = circuit.run(batch.tokens[:20])
    t = np.arange(1, induction.LENGTH)
    assert (weights[0][:, 0, t].argmax(axis=-1) == t - 1).all()  # previous-token head
    # without the previous-token head's write, the induction head's keys see nothing
    assert depth.silenced(circuit).accuracy(batch) < 2 / induction.VOCAB


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
    task = depth.task()
    assert task.constructed == 1.0
    assert task.one_below_twice_chance and task.two_reach_ninety
    assert task.count_guess < 2 * task.chance < task.uniform_guess
    for name, claim in depth.claims().items():
        check(claim, f"tests/pages/test_depth.py ({name})")


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
