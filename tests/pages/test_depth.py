"""Depth: the induction task, the built circuit, the trained models, SmolLM2's heads.

The reference test (``-m reference``) recomputes the head scores with transformers.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha.experiments import repeated_tokens
from mha.experiments.repeated_tokens import N_ABLATED
from mha.pages import depth
from mha.pages.depth import _EXAMPLE, induction
from mha.pages.depth.induction_training import _init_params, _loss_and_grads, _Shape
from mha.pretrained import smollm2
from tests.pages.drawn import assert_series, drawn
from tests.reference import reference_module


def brute_force(tokens: list[int]) -> tuple[list[int], list[int]]:
    """The token after the most recent earlier occurrence, and how far back that
    occurrence is, by a plain loop."""
    answers, offsets = [], []
    for t, token in enumerate(tokens):
        earlier = [j for j in range(t) if tokens[j] == token]
        answers.append(tokens[earlier[-1] + 1] if earlier else -1)
        offsets.append(t - earlier[-1] if earlier else -1)
    return answers, offsets


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=30))
def test_targets_are_the_token_after_the_most_recent_earlier_occurrence(tokens):
    answers, offsets = brute_force(tokens)
    assert induction.targets_of(np.array(tokens)).tolist() == answers
    assert induction._offsets_of(np.array(tokens)).tolist() == offsets


def test_the_exclusion_baseline_is_a_uniform_guess_among_the_other_tokens():
    """By construction the answer is never the current token nor the first one; a
    guess uniform over the remaining tokens is right 1 / (12 - 2) of the time, or
    1 / (12 - 1) where the current token is the first."""
    task = depth._task()
    batch = induction.sample(depth._N_TEST, np.random.default_rng([depth._SEED, 1]))
    odds = []
    for row, answers in zip(batch.tokens, batch.targets, strict=True):
        for t, answer in enumerate(answers):
            if answer >= 0:
                assert answer not in (row[t], row[0])
                odds.append(1 / (induction._VOCAB - len({row[t], row[0]})))
    assert task.exclusion == pytest.approx(np.mean(odds))
    assert task.exclusion == pytest.approx(0.099, abs=0.001)
    assert task.chance < task.exclusion and task.excluded_answers == 0
    facts = depth._facts(task, repeated_tokens.scan())
    assert facts["never_excluded"].holds and facts["one_near_exclusion"].holds
    leaky = depth._facts(
        dataclasses.replace(task, excluded_answers=1), repeated_tokens.scan()
    )
    assert not leaky["never_excluded"].holds
    better = dataclasses.replace(task.one, accuracy=task.one.accuracy + 0.05)
    far = depth._facts(dataclasses.replace(task, one=better), repeated_tokens.scan())
    assert not far["one_near_exclusion"].holds


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(2, 9), min_size=1, max_size=3, unique=True),
    st.integers(0, 2**32 - 1),
)
def test_one_layer_answers_exactly_at_the_offsets_it_has_heads_for(offsets, seed):
    """Sequences of the task's kind (two shuffles, cut): wherever the earlier
    occurrence lies at a covered offset, the answer; elsewhere no answer at all."""
    batch = induction.sample(20, np.random.default_rng(seed), vocab=6, length=10)
    circuit = induction._build_one_layer(tuple(offsets), vocab=6, length=10)
    assert circuit.layers[0].n_heads == len(offsets) + 1 and len(circuit.layers) == 1
    stream, _ = circuit.run(batch.tokens)
    logits = stream[-1] @ circuit.unembed
    where = np.isin(induction._offsets_of(batch.tokens), offsets)
    assert (logits.argmax(axis=-1)[where] == batch.targets[where]).all()
    assert (logits.max(axis=-1)[where] > 0.5).all()
    assert (logits.max(axis=-1)[~where] < 0.5).all()  # no answer


def test_one_layer_covers_more_offsets_only_with_more_heads():
    task = depth._task()
    rows = task.built_one
    assert [len(r.offsets) for r in rows] == [*depth._BUILT_HEADS, len(task.offsets)]
    assert [r.n_heads for r in rows] == [len(r.offsets) + 1 for r in rows]
    assert all(r.covered == 1.0 for r in rows) and rows[-1].overall == 1.0
    assert [r.share for r in rows] == sorted(r.share for r in rows)
    assert all(r.elsewhere == 0.0 and r.overall == r.share for r in rows[:-1])
    assert task.offsets == tuple(range(2, induction._LENGTH))  # offset 1 cannot occur
    scan = repeated_tokens.scan()
    facts = depth._facts(task, scan)
    assert facts["built_exact"].holds and facts["built_all"].holds
    miss = dataclasses.replace(rows[0], covered=0.99)
    wrong = depth._facts(dataclasses.replace(task, built_one=(miss, *rows[1:])), scan)
    assert not wrong["built_exact"].holds
    partial = dataclasses.replace(rows[-1], overall=0.99)
    short = depth._facts(
        dataclasses.replace(task, built_one=(*rows[:-1], partial)), scan
    )
    assert not short["built_all"].holds
    with pytest.raises(ValueError, match="offsets"):
        induction._build_one_layer((23,))


def test_sequences_are_two_shuffles_and_only_the_second_is_scored():
    batch = induction.sample(50, np.random.default_rng(0))
    v = induction._VOCAB
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
    batch = induction.sample(depth._N_TEST, np.random.default_rng(0))
    assert circuit.accuracy(batch) == 1.0
    _, weights = circuit.run(batch.tokens[:20])
    t = np.arange(1, induction._LENGTH)
    assert (weights[0][:, 0, t].argmax(axis=-1) == t - 1).all()  # previous-token head
    # without the previous-token head's write, the induction head's keys see nothing
    assert circuit.silenced().accuracy(batch) < 2 / induction._VOCAB


def test_the_circuit_refuses_a_length_its_recency_cannot_order():
    with pytest.raises(ValueError, match="length"):
        induction.build(vocab=40, length=80)


@pytest.mark.parametrize("shape", [_Shape(1, 2), _Shape(2, 1)], ids=lambda s: s.name)
def test_gradients_equal_finite_differences(shape):
    params = _init_params(shape, [0, 1], dtype=np.float64)
    batch = induction.sample(4, np.random.default_rng(1))
    tokens = np.stack([batch.tokens] * 2)
    targets = np.stack([batch.targets] * 2)
    loss, grads = _loss_and_grads(params, tokens, targets, shape)
    rng = np.random.default_rng(2)
    step = 1e-6
    for name, array in params.items():
        for _ in range(3):
            where = (1, *(int(rng.integers(0, s)) for s in array.shape[1:]))
            moved = {k: v.copy() for k, v in params.items()}
            moved[name][where] += step
            moved_loss, _ = _loss_and_grads(moved, tokens, targets, shape)
            numeric = (moved_loss[1] - loss[1]) / step
            assert numeric == pytest.approx(grads[name][where], rel=1e-3, abs=1e-7)


def test_the_two_shapes_have_the_same_attention_parameters():
    counts = []
    for shape in (_Shape(1, 2), _Shape(2, 1)):
        params = _init_params(shape, [0])
        counts.append(sum(a.size for k, a in params.items() if k.startswith("w_")))
        assert counts[-1] == shape.attention_params()
    assert counts[0] == counts[1]


def test_stacking_learns_the_task_and_one_layer_does_not():
    task, scan = depth._task(), repeated_tokens.scan()
    assert task.constructed == 1.0
    assert (task.one.accuracy < 2 * task.chance).all()
    assert (task.two.accuracy >= 0.9).all()
    assert task.count_guess < 2 * task.chance < task.uniform_guess
    facts = depth._facts(task, scan)
    # the one-layer models as good as the two-layer ones: the sentences go false
    equal = dataclasses.replace(task.one, accuracy=task.two.accuracy)
    worse = depth._facts(dataclasses.replace(task, one=equal), scan)
    assert facts["one_layer"].holds and not worse["one_layer"].holds
    assert facts["one_below_twice"].holds and not worse["one_below_twice"].holds
    guess = depth._facts(dataclasses.replace(task, uniform_guess=task.chance), scan)
    assert facts["count_guess"].holds and not guess["count_guess"].holds


def test_the_scan_facts_turn_false_with_other_values():
    scan = repeated_tokens.scan()
    facts = depth._facts(depth._task(), scan)
    assert facts["second_copy"].holds and facts["ablation"].holds
    assert facts["sinks"].holds and facts["below_even"].holds and facts["louder"].holds
    no_copy = dataclasses.replace(scan, loss_second=scan.loss_first)
    harmless = dataclasses.replace(scan, loss_top=scan.loss_random.max())
    no_sink = dataclasses.replace(scan, first_token=0 * scan.first_token)
    assert not depth._facts(depth._task(), no_copy)["second_copy"].holds
    assert not depth._facts(depth._task(), harmless)["ablation"].holds
    matched = scan.matched_losses.copy()
    matched[0, 1] = scan.top_losses[1]  # a matched set as costly as the heads
    as_matched = dataclasses.replace(scan, matched_losses=matched)
    assert not depth._facts(depth._task(), as_matched)["ablation"].holds
    # no effect on copying: the second copy's loss as it was unchanged
    top = np.stack([scan.top_losses[0], scan.losses[1]])
    assert facts["copy_specific"].holds
    no_effect = dataclasses.replace(scan, top_losses=top)
    assert not depth._facts(depth._task(), no_effect)["copy_specific"].holds
    top = np.stack([scan.top_losses[0] + 1, scan.top_losses[1]])  # general damage
    general = dataclasses.replace(scan, top_losses=top)
    assert not depth._facts(depth._task(), general)["copy_specific"].holds
    assert not depth._facts(depth._task(), no_sink)["sinks"].holds
    assert depth.page().louder == ["L0", "L29"]
    assert depth.page().below_even == ["L0", "L1", "L11"]


def test_the_reach_loudness_partner_and_even_spread_facts_turn_false():
    p = depth.page()

    def fails(name: str, task: depth._Task = p.task, scan=p.scan) -> bool:
        return not depth._facts(task, scan)[name].holds

    task, scan = p.task, p.scan
    # the weakest two-layer model only as good as the best one-layer model
    two = task.two.accuracy.copy()
    two[np.argmin(two)] = task.one.accuracy.max()
    weak = dataclasses.replace(task, two=dataclasses.replace(task.two, accuracy=two))
    assert fails("two_reach", task=weak)
    # every sublayer writing less than the stream it joins
    quieter = 0.5 * scan.stream_norm[:-1]
    quiet = dataclasses.replace(
        scan,
        attention_norm=np.minimum(scan.attention_norm, quieter),
        mlp_norm=np.minimum(scan.mlp_norm, quieter),
    )
    assert fails("louder", scan=quiet)
    # no previous-token head below the strongest induction head
    layer, _ = repeated_tokens.strongest(scan.induction, depth.N_ABLATED)[0]
    previous = scan.previous.copy()
    previous[:layer] = 0
    assert fails("partners", scan=dataclasses.replace(scan, previous=previous))
    # every layer putting more weight on the first token than an even spread
    sinks = np.maximum(scan.first_token, 2 * scan.uniform_first_token)
    assert fails("below_even", scan=dataclasses.replace(scan, first_token=sinks))


def test_the_sinks_sit_where_the_first_token_stands_out_not_by_how_far():
    scan = repeated_tokens.scan()
    ratio = scan.first_stream_norm / scan.stream_norm
    groups = depth.page().sinks
    quiet = np.flatnonzero(ratio[:-1] < depth._OUTSIZED)
    assert groups["quiet"]["span"] == "L0, L1, L10 and L11" == depth._span(quiet)
    assert groups["jump"] == "L11" and groups["jump_to"] == ratio[12] == ratio.max()
    assert groups["before"]["span"] == "L2–L9" and groups["after"]["span"] == "L12–L29"
    assert groups["quiet"]["share"][1] == scan.first_token[quiet].max()
    facts = depth._facts(depth._task(), scan)
    assert facts["massive"].holds and facts["co_occur"].holds
    assert facts["not_by_size"].holds
    # a sink in a layer whose first token does not stand out: no longer co-occurring
    share = scan.first_token.copy()
    share[quiet[0]] = 0.9
    lone = depth._facts(depth._task(), dataclasses.replace(scan, first_token=share))
    assert not lone["co_occur"].holds
    # sinks growing with the ratio: the later layers give the first token more
    share = scan.first_token.copy()
    share[12:] = 0.95
    growing = depth._facts(depth._task(), dataclasses.replace(scan, first_token=share))
    assert not growing["not_by_size"].holds
    flat = dataclasses.replace(scan, first_stream_norm=scan.stream_norm * 1.5)
    assert not depth._facts(depth._task(), flat)["massive"].holds


@pytest.mark.parametrize(
    "layers, span", [([2, 3, 4], "L2–L4"), ([0, 1], "L0 and L1"), ([5], "L5")]
)
def test_layer_spans_are_written_compactly(layers, span):
    assert depth._span(layers) == span


def test_scores_on_hand_made_patterns():
    half = 3
    n = 2 * half
    induction_pattern = np.zeros((n, n))
    induction_pattern[np.arange(half, n), np.arange(1, half + 1)] = 1
    assert repeated_tokens.induction_scores(induction_pattern, half) == 1
    assert repeated_tokens._previous_token_scores(induction_pattern) < 1
    assert repeated_tokens._previous_token_scores(np.eye(n, k=-1)) == 1
    with pytest.raises(ValueError, match="weights"):
        repeated_tokens.induction_scores(np.ones((3, 4)), 2)


def test_the_batched_ablation_equals_one_pass_per_sequence_with_a_head_mask(model):
    """``ablated_loss`` runs all sequences at once, and from the first changed layer
    when it is handed the unchanged streams; both equal ``logits(ids, head_mask)``."""
    ids = repeated_tokens.repeated_sequences(model)[:2]
    heads = [(17, 3), (18, 6)]
    keep = np.ones((30, 9))
    keep[17, 3] = keep[18, 6] = 0
    half = repeated_tokens.HALF
    expected = np.mean(
        [
            np.log(
                smollm2.perplexity_of(model.logits(row, keep)[half:-1], row[half + 1 :])
            )
            for row in ids
        ]
    )
    entering = np.stack([model.trace(row).stream for row in ids], axis=1)
    assert repeated_tokens._ablated_loss(model, ids, heads) == pytest.approx(
        expected, abs=1e-3
    )
    assert repeated_tokens._ablated_loss(model, ids, heads, entering) == pytest.approx(
        expected, abs=1e-3
    )
    first = [
        np.log(smollm2.perplexity_of(model.logits(row, keep)[: half - 1], row[1:half]))
        for row in ids
    ]
    losses = repeated_tokens._ablated_losses(model, ids, heads, entering)
    np.testing.assert_allclose(losses[0], first, atol=1e-3)


def test_matched_sets_take_other_heads_of_the_same_layers():
    top = [(18, 6), (17, 3), (17, 4)]
    sets = repeated_tokens._matched_sets(top, 9, np.random.default_rng(0))
    assert sets.shape == (repeated_tokens._N_MATCHED, 3, 2)
    for chosen in sets.tolist():
        assert [layer for layer, _ in chosen] == [18, 17, 17]
        assert not {tuple(h) for h in chosen} & set(top)
        assert len({tuple(h) for h in chosen}) == 3


def test_smollm2_has_induction_heads_and_they_carry_the_repeat():
    scan = repeated_tokens.scan()
    top = repeated_tokens.strongest(scan.induction, repeated_tokens.N_ABLATED)
    scores = [scan.induction[h] for h in top]
    assert scores == sorted(scores, reverse=True)
    assert scan.loss_second < scan.loss_first
    assert scan.loss_top > scan.loss_random.max()
    page = depth.page()
    worst = scan.random_sets[np.argmax(scan.loss_random)]
    assert page.worst_set == [f"L{layer}H{head}" for layer, head in worst]
    assert page.random == [
        np.median(scan.loss_random),
        scan.loss_random.min(),
        scan.loss_random.max(),
    ]
    assert page.ablation_ratio == scan.loss_top / scan.loss_second
    assert (
        len({tuple(map(tuple, s)) for s in scan.random_sets})
        == repeated_tokens._N_RANDOM_SETS
    )
    assert not set(map(tuple, scan.random_sets.reshape(-1, 2).tolist())) & set(top)
    assert np.all((scan.first_token >= 0) & (scan.first_token <= 1))


@pytest.fixture(scope="module")
def model() -> smollm2.SmolLM2:
    return smollm2.load()


@pytest.mark.reference
def test_head_scores_equal_the_reference(model, smollm2_reference, request):
    """The induction and previous-token scores, from transformers' attention weights:
    equal to 1e-3 on the page's sequences for all 270 heads; on 8 fresh sequences the
    reference's five strongest induction heads hold at least four of the page's five."""
    torch = reference_module("torch", request.config)
    reference_model = smollm2_reference  # the session's one load (tests/conftest.py)

    def reference_scores(sequences: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        induction, previous = [], []
        for ids in sequences:
            with torch.no_grad():
                out = reference_model(
                    torch.tensor([ids.tolist()]), output_attentions=True
                )
            weights = np.stack([a[0].numpy() for a in out.attentions]).astype(float)
            induction.append(repeated_tokens.induction_scores(weights))
            previous.append(repeated_tokens._previous_token_scores(weights))
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


# --- its figures --------------------------------------------------------------
# The depth figures draw the page's norms, the built circuit's weights, the trained
# models' accuracies and SmolLM2's head scores and sinks under their own names.


def test_residual_norms_draws_the_stream_and_each_sublayers_write():
    p, (panel,) = drawn("depth", "residual_norms")
    s = p.scan
    layers = np.arange(len(s.attention_norm))
    assert_series(
        panel.lines,
        {
            "residual stream x entering the layer": [
                np.arange(len(s.stream_norm)),
                s.stream_norm,
            ],
            "attention's write": [layers, s.attention_norm],
            "feed-forward's write": [layers, s.mlp_norm],
        },
    )
    assert panel.xlabel.endswith(f"after layer {len(s.stream_norm) - 2})")


def test_circuit_attention_shows_each_head_doing_what_its_title_names():
    p, panels = drawn("depth", "circuit_attention")
    weights, tokens = p.figures["circuit_attention"].data
    assert [panel.title for panel in panels] == [
        "L0H0: previous token",
        "L1H0: induction",
    ]
    for panel, w in zip(panels, weights, strict=True):
        assert len(panel.images) == 1 and np.array_equal(panel.images[0], w)
        assert panel.xticks == panel.yticks == [str(t) for t in _EXAMPLE]
    assert np.array_equal(tokens, _EXAMPLE)
    previous, induction = (panel.images[0] for panel in panels)
    rows = np.arange(1, len(_EXAMPLE))
    assert (previous[rows].argmax(axis=1) == rows - 1).all()
    for t, token in enumerate(_EXAMPLE):  # a repeat: after its first occurrence
        first = np.flatnonzero(_EXAMPLE[:t] == token)
        if first.size:
            assert induction[t].argmax() == first[0] + 1, t


def test_training_draws_every_seeds_accuracy_and_the_baselines():
    p, (panel,) = drawn("depth", "training")
    t = p.task
    bars = np.concatenate(list(panel.bars.values()))
    assert np.array_equal(bars, np.concatenate([t.one.accuracy, t.two.accuracy]))
    assert panel.xticks == [t.one.shape.name, t.two.shape.name]
    levels = {
        "chance": t.chance,
        "exclusion baseline": t.exclusion,
        "twice chance": 2 * t.chance,
    }
    assert_series(
        {k: v[1] for k, v in panel.lines.items()},
        {k: [level, level] for k, level in levels.items()},
    )


def test_head_scores_shows_both_grids_and_frames_the_strongest_induction_heads():
    p, panels = drawn("depth", "head_scores")
    s = p.scan
    assert [panel.title for panel in panels] == [
        "induction score",
        "previous-token score",
    ]
    assert np.array_equal(panels[0].images[0], s.induction)
    assert np.array_equal(panels[1].images[0], s.previous)
    n_layers, n_heads = s.induction.shape
    assert panels[0].yticks == [str(i) for i in range(n_layers)]
    assert panels[0].xticks == [str(h) for h in range(n_heads)]
    framed = {
        tuple(round(c) for c in outline[:4].mean(axis=0)[::-1])  # (layer, head)
        for outline in panels[0].patches.values()
    }
    brightest = np.sort(s.induction, axis=None)[-N_ABLATED:]
    assert len(framed) == N_ABLATED
    assert sorted(s.induction[layer, head] for layer, head in framed) == list(brightest)


def test_sinks_and_norms_draws_the_first_tokens_share_and_norm_ratio():
    p, (top, bottom) = drawn("depth", "sinks_and_norms")
    share, ratio, even, outsized = p.figures["sinks_and_norms"].data
    s = p.scan
    assert np.array_equal(share, s.first_token) and even == s.uniform_first_token
    assert outsized == p.outsized
    layers = np.arange(len(s.first_token))
    for panel, (name, series), (level, value) in (
        (top, ("first token's share", s.first_token), ("an even spread", even)),
        (bottom, ("first / others", ratio), (f"{p.outsized:.0f} times", outsized)),
    ):
        assert panel.lines.keys() == {name, level}
        assert np.array_equal(panel.lines[name], [layers, series])
        assert panel.lines[level][1].tolist() == [value, value]  # a level line


@pytest.mark.reference
def test_the_first_copy_losses_equal_the_reference(model, smollm2_reference, request):
    """Both copies' losses with two induction heads removed (their slices of o_proj's
    input zeroed), against ``ablated_losses`` on one sequence."""
    torch = reference_module("torch", request.config)
    ids = repeated_tokens.repeated_sequences(model)[:1]
    heads, half, d_k = [(17, 3), (18, 6)], repeated_tokens.HALF, 64
    layers = smollm2_reference.model.layers

    def zero(layer):
        def hook(module, args):
            x = args[0].clone()
            for at, h in heads:
                if at == layer:
                    x[..., h * d_k : (h + 1) * d_k] = 0
            return (x,)

        return hook

    handles = [
        layers[i].self_attn.o_proj.register_forward_pre_hook(zero(i)) for i in (17, 18)
    ]
    try:
        with torch.no_grad():
            logits = smollm2_reference(torch.tensor(ids.tolist())).logits[0].double()
    finally:
        for h in handles:
            h.remove()
    target = torch.tensor(ids[0])
    expected = [
        float(torch.nn.functional.cross_entropy(logits[q], target[q + 1]))
        for q in (torch.arange(half - 1), torch.arange(half, 2 * half - 1))
    ]
    mine = repeated_tokens._ablated_losses(model, ids, heads)[:, 0]
    np.testing.assert_allclose(mine, expected, atol=2e-3)
