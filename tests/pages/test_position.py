"""The position page: the sinusoidal encodings in the core, RoPE's properties against
independent computations, SmolLM2's shift, each fact turned false, and the RoPE
exercise's checker refusing the wrong answers a relative-position test would pass."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mha import MultiHeadAttention
from mha.checkers import check_rope
from mha.figures.plotted import plotted
from mha.pages.exercises import _rope_facts as rope_facts
from mha.pages.exercises import page as exercises_page
from mha.pages.position import (
    _NOPE_TOKENS,
    TOLERANCE,
    _diagonal_means,
    _facts,
    _minilm_offsets,
    page,
    real,
)
from mha.positions import sinusoidal
from mha.pretrained import minilm, smollm2
from mha.rope import RotaryEmbedding
from tests.pages.drawn import draw


@pytest.fixture(scope="module")
def p():
    return page()


# --- the core: sinusoidal encodings --------------------------------------------------


def test_sinusoids_follow_vaswani_et_al():
    p = sinusoidal(7, 6)
    t, i = 5, 1  # position 5, pair 1: dims 2 and 3
    omega = 10_000 ** (-2 * i / 6)
    assert np.isclose(p[t, 2], np.sin(t * omega)) and np.isclose(
        p[t, 3], np.cos(t * omega)
    )
    assert p.dtype == np.float64 and sinusoidal(0, 4).shape == (0, 4)


@pytest.mark.parametrize(("n", "d_model"), [(-1, 4), (3, 5), (3, 0), (2.5, 4)])
def test_sinusoids_refuse_bad_shapes(n, d_model):
    with pytest.raises((ValueError, TypeError), match=r"n|d_model"):
        sinusoidal(n, d_model)


def test_the_multi_head_layer_still_adds_the_same_encodings():
    from mha.worked.base_layer import whole_layer

    w = whole_layer()
    n, d = w.x.shape
    reference = np.zeros((n, d))
    angles = np.arange(n)[:, None] / 10000 ** (np.arange(0, d, 2) / d)
    reference[:, 0::2], reference[:, 1::2] = np.sin(angles), np.cos(angles)
    assert np.array_equal(sinusoidal(n, d), reference)


# --- the page's numbers --------------------------------------------------------------


def test_absolute_positions_break_the_tie_of_the_two_the(p):
    a = p.absolute
    assert [a.tokens[i] for i in a.the] == ["the", "the"]
    assert np.array_equal(a.without[:, 0], a.without[:, 1])
    assert np.allclose(np.diag(a.sinusoidal), 1) and np.allclose(np.diag(a.learned), 1)


def test_rope_scores_depend_on_the_distance_only(p):
    r = p.rope
    assert np.ptp(r.rope_scores) < 1e-12 and np.ptp(r.added_scores) > 0.1
    # the wavelengths are 2π / θ_j with θ_j = base**(-2j / d_k)
    theta = r.base ** (-np.arange(0, r.d_k, 2) / r.d_k)
    assert np.allclose(r.wavelengths, 2 * np.pi / theta)


def test_the_decay_curves_against_their_definitions(p):
    r = p.rope
    assert r.bound[0] == (r.d_k // 2 + 1) / 2  # |S_i| = i at distance 0
    assert r.ones[0] == r.d_k  # q = k = all ones: |q|²
    theta = r.base ** (-np.arange(0, r.d_k, 2) / r.d_k)
    # each pair of all-ones contributes (1, 1)·R(dθ)(1, 1) = 2 cos(dθ)
    expected = 2 * np.cos(r.distances[:, None] * theta).sum(-1)
    assert np.allclose(r.ones, expected)


def test_the_pairings_are_one_rotation_reordered():
    rng = np.random.default_rng(0)
    x, positions = rng.normal(size=(5, 8)), np.array([0, 3, 4, 9, 100])
    half, inter = RotaryEmbedding(8), RotaryEmbedding(8, interleaved=True)
    perm = np.array([0, 2, 4, 6, 1, 3, 5, 7])
    assert np.array_equal(half(x[:, perm], positions), inter(x, positions)[:, perm])
    assert page().rope.pairing_equal == 0


def test_the_wrong_pairing_perplexity_is_the_real_model_pages():
    from mha.pages.real_gqa_model import _results

    assert page().rope.swapped_perplexity == _results().swapped_rope_perplexity


def test_the_previous_token_heads(p):
    h = p.real
    assert h.minilm_offsets.shape == (2 * p.offsets - 1,)
    assert h.smollm2_offsets.shape == (p.offsets,)
    assert np.all(h.smollm2_offsets <= 1) and h.smollm2_offsets.sum() <= 1 + 1e-6


def test_minilm_offsets_from_the_atlas_pass_are_each_sentence_alone():
    # sentences of three lengths in one padded pass (minilm_corpus.runs): the offsets
    # equal those of each sentence run alone, to float32 rounding
    texts = ("The cat sat down.", "A dog ran across the wide green field.", "Hi, you.")
    model, back = minilm.load(), range(3, -4, -1)
    alone = []
    for text in texts:
        forward = model.forward(model.batch([text]))
        w = forward.weights[0][0, 2, 1:-1, 1:-1].astype(np.float64)
        alone.append(_diagonal_means(w, back))
    offsets = _minilm_offsets(texts, 0, 2, back)
    assert np.allclose(offsets, np.mean(alone, axis=0), rtol=0, atol=1e-7)
    assert offsets.max() > 0.1  # not all zero


def test_smollm2_shifted_by_100_positions_attends_the_same():
    difference = real().max_difference
    assert 0 < difference < TOLERANCE  # not 0: the rotation did see other positions


def test_a_start_position_reaches_the_rotation():
    seen = []

    class Spy(RotaryEmbedding):  # the layer rotates by the unchecked form
        def _from_position(self, x, start):
            seen.append(start)
            return super()._from_position(x, start)

    layer = MultiHeadAttention(8, 2)
    layer.rope = Spy(4)
    x = np.random.default_rng(0).normal(size=(1, 3, 8))
    _, weights = layer(x, start=7)
    assert seen == [7, 7]  # queries and keys
    assert np.allclose(weights, layer(x)[1])  # self-attention: only the distance counts
    model = smollm2.load()
    ids = model.encode("One two three")
    with pytest.raises(ValueError, match="start"):
        model.trace(ids, start=-1)
    with pytest.raises(TypeError, match="start"):
        model.attentions(ids, start=1.5)
    with pytest.raises(ValueError, match="start"):
        layer(x, start=-2)


def test_alternatives(p):
    alt = p.alt
    assert np.allclose(alt.slopes, [2.0**-k for k in range(1, 9)])
    assert np.allclose(alt.alibi_weights.sum(-1), 1)
    assert np.allclose(alt.nope_weights, 1 / np.arange(1, _NOPE_TOKENS + 1))
    assert np.isclose(alt.slowest_extended, 4 * alt.slowest_angle)
    assert alt.fastest_angle == 1.0


# --- every fact can be turned false ---------------------------------------------------


def test_every_fact_holds(p):
    assert all(fact.holds for fact in p.facts.values())


def _replaced(obj, **changes):
    return dataclasses.replace(obj, **changes)


@pytest.mark.parametrize(
    ("name", "part", "changes"),
    [
        ("tie", "a", {"without": np.array([[0.1, 0.2]])}),
        ("tie_broken", "a", {"with_positions": np.array([[0.1, 0.1], [0.1, 0.3]])}),
        ("sin_relative", "a", {"sinusoidal_spread": 0.1}),
        ("learned_near", "a", {"learned_near": np.array([1.0, 0.5, 0.6])}),
        ("learned_near", "a", {"learned_spread": 0.0}),
        ("rope_relative", "r", {"rope_scores": np.array([1.0, 1.1])}),
        ("added_moves", "r", {"added_scores": np.array([1.0, 1.0])}),
        ("slowest_short", "r", {"slowest_turns": 1.5}),
        ("bound_decays", "r", {"bound": np.array([1.0, 0.9])}),
        ("bound_decays", "r", {"ones": np.array([1.0, 0.9])}),
        ("random_flat", "r", {"random_mean": np.array([1.0, 0.5])}),
        ("pairing_permutation", "r", {"pairing_equal": 1e-16}),
        ("pairing_differs", "r", {"pairing_scores": (1.0, 1.0)}),
        ("wrong_pairing_worse", "r", {"swapped_perplexity": 20.0}),
        ("minilm_previous", "h", {"minilm_offsets": np.eye(11)[5]}),
        ("smollm2_previous", "h", {"smollm2_offsets": np.eye(6)[0]}),
        # no effect: the head without its rotation as it is with it
        ("rope_removed", "h", {"smollm2_no_rope": np.array([0.1, 0.8, 0.1, 0, 0, 0])}),
        ("shift_invariant", "h", {"max_difference": 2 * TOLERANCE}),
        ("alibi_local", "alt", {"alibi_weights": np.full((8, 16), 1 / 16)}),
        ("alibi_even", "alt", {"alibi_weights": np.eye(16)[[15] * 8]}),
        ("nope_recovers", "alt", {"nope_positions": np.arange(8) + 0.5}),
        ("unseen_angle", "alt", {"slowest_angle": 7.0}),
        ("scaled_back", "alt", {"scaled_angle": 1.0}),
    ],
)
def test_each_fact_can_turn_false(name, part, changes):
    base = page()
    parts = {"a": base.absolute, "r": base.rope, "h": base.real, "alt": base.alt}
    parts[part] = _replaced(parts[part], **changes)
    assert not _facts(parts["a"], parts["r"], parts["h"], parts["alt"])[name].holds


# --- the exercise and the recall answer ------------------------------------------------


def _rope(x, positions, base, interleaved=False):
    """A reader's correct answer, written from the definition."""
    d_k = x.shape[-1]
    angles = positions[:, None] * base ** (-np.arange(0, d_k, 2) / d_k)
    cos, sin = np.cos(angles), np.sin(angles)
    a, b = (x[..., 0::2], x[..., 1::2]) if interleaved else np.split(x, 2, axis=-1)
    first, second = a * cos - b * sin, a * sin + b * cos
    if not interleaved:
        return np.concatenate([first, second], axis=-1)
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = first, second
    return out


def _interleaved(x, positions, base):
    return _rope(x, positions, base, interleaved=True)


def test_the_checker_passes_both_pairings():
    assert check_rope(_rope)
    assert check_rope(_interleaved, pairing="interleaved")


@pytest.mark.parametrize(
    ("answer", "pairing", "hint"),
    [
        (lambda x, positions, base: x, "half-split", "unchanged"),
        (_interleaved, "half-split", "interleaved pairing"),
        (_rope, "interleaved", "half-split pairing"),
        (
            lambda x, positions, base: _rope(x, positions, 10_000.0),
            "half-split",
            "base",
        ),
        (
            lambda x, positions, base: _rope(x, -positions, base),
            "half-split",
            "wrong way",
        ),
        (
            lambda x, positions, base: 1.01 * _rope(x, positions, base),
            "half-split",
            "angle",
        ),
        (
            lambda x, positions, base: _rope(x, positions, base)[..., :1],
            "half-split",
            "shape",
        ),
        (lambda x, positions, base: 1 / 0, "half-split", "ZeroDivisionError"),
    ],
)
def test_the_checker_refuses_wrong_rotations(answer, pairing, hint):
    verdict = check_rope(answer, pairing=pairing)
    assert not verdict and hint in verdict.message


def test_each_refused_answer_still_passes_a_relative_position_test():
    """Why the checker compares values: a score test alone would pass them all."""
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=(2, 1, 8))
    wrong = [
        lambda x, positions, base: x,
        _interleaved,
        lambda x, positions, base: _rope(x, positions, 10_000.0),
        lambda x, positions, base: _rope(x, -positions, base),
    ]
    for answer in wrong:
        near = answer(q, np.array([3]), 500.0)[0] @ answer(k, np.array([7]), 500.0)[0]
        far = (
            answer(q, np.array([903]), 500.0)[0] @ answer(k, np.array([907]), 500.0)[0]
        )
        assert np.isclose(near, far)


def test_the_checker_refuses_an_unknown_pairing():
    with pytest.raises(ValueError, match="pairing"):
        check_rope(_rope, pairing="adjacent")


def test_the_recall_answer():
    ans = exercises_page().rope_shift
    assert (
        np.isclose(ans["rope"][0], ans["rope"][1])
        and ans["added"][0] != ans["added"][1]
    )
    assert not rope_facts(ans | {"added": [1.0, 1.0]})["added_moves"].holds
    assert not rope_facts(ans | {"rope": [1.0, 1.5]})["rope_stays"].holds


@pytest.mark.reference
def test_the_shifted_pass_equals_the_reference(smollm2_reference, request):
    """``attentions(ids, start=SHIFT)`` against transformers given the same positions
    (``position_ids``): every weight of every layer and head."""
    from mha.pages.position import _TEXT, SHIFT
    from tests.reference import reference_module

    torch = reference_module("torch", request.config)
    model = smollm2.load()
    ids = model.encode(_TEXT)
    positions = torch.arange(SHIFT, SHIFT + len(ids))[None]
    with torch.no_grad():
        out = smollm2_reference(
            torch.tensor([ids]), position_ids=positions, output_attentions=True
        )
    expected = np.stack([a[0].numpy() for a in out.attentions])
    np.testing.assert_allclose(
        model.attentions(ids, start=SHIFT), expected, atol=1e-4, rtol=0
    )


# --- its figures --------------------------------------------------------------
# The position page's figures draw the page's studies, each under its own title or
# label: the two similarity maps, the wavelengths, the three decay curves, the offsets.


def test_similarity_draws_the_sinusoidal_and_the_learned_map_under_their_titles():
    a = page().absolute
    drawn = {panel.title: panel.images for panel in plotted(draw(page(), "similarity"))}
    assert drawn.keys() == {"sinusoidal (fixed)", "MiniLM (learned)"}
    assert np.array_equal(drawn["sinusoidal (fixed)"][0], a.sinusoidal)
    assert np.array_equal(drawn["MiniLM (learned)"][0], a.learned)


def test_frequencies_draws_each_pairs_wavelength_and_the_trained_context():
    p = page()
    (panel,) = plotted(draw(p, "frequencies"))
    pairs, turns = panel.lines["one turn of pair j"]
    assert pairs.tolist() == list(range(p.rope.d_k // 2))
    assert np.array_equal(turns, p.rope.wavelengths)
    assert round(turns[-1]) == p.slowest_wavelength
    assert panel.lines["trained context"][1].tolist() == [p.rope.context] * 2


def test_decay_draws_each_curve_relative_to_distance_0_under_its_label():
    p = page()
    (panel,) = plotted(draw(p, "decay"))
    curves = {
        "Su et al.'s bound": p.rope.bound,
        "q = k = all ones": p.rope.ones,
        "random q, k (mean |score|)": p.rope.random_mean,
    }
    for label, values in curves.items():
        x, y = panel.lines[label]
        assert np.array_equal(x, p.rope.distances)
        assert np.allclose(y, values / values[0])
    assert panel.lines["Su et al.'s bound"][1, -1] == p.bound_share
    assert panel.lines["q = k = all ones"][1, -1] == p.ones_share
    random = panel.lines["random q, k (mean |score|)"][1]
    assert (random.min(), random.max()) == p.random_range


def test_previous_token_draws_each_models_weight_at_each_offset():
    p = page()
    minilm, smollm2 = plotted(draw(p, "heads"))
    back = np.arange(p.offsets)  # tokens back from the query, 0 first
    assert minilm.title.startswith("MiniLM") and smollm2.title.startswith("SmolLM2")
    (weights,) = minilm.bars.values()
    assert np.array_equal(weights, p.real.minilm_offsets)
    assert minilm.xticks == [_signed(d) for d in np.arange(1 - p.offsets, p.offsets)]
    assert weights[minilm.xticks.index(_signed(-1))] == p.minilm_previous
    (weights,) = smollm2.bars.values()
    assert np.array_equal(weights, p.real.smollm2_offsets)
    assert smollm2.xticks == [_signed(-d) for d in back]


def _signed(offset: int) -> str:
    """An offset as a matplotlib tick label writes it (a true minus sign)."""
    return str(offset).replace("-", "\N{MINUS SIGN}")


def test_the_drawn_pair_turns_by_its_position_and_keeps_its_dot_product() -> None:
    from mha.pages.position import _PAIR_SHIFT, _pair, _pair_facts, page

    pair = page().pair
    (a, b), theta = pair.placed, pair.theta
    assert (b.m - a.m, b.n - a.n) == (_PAIR_SHIFT, _PAIR_SHIFT)
    turn = np.array(
        [
            [np.cos(a.m * theta), -np.sin(a.m * theta)],
            [np.sin(a.m * theta), np.cos(a.m * theta)],
        ]
    )
    assert np.allclose(turn @ pair.q, a.q, atol=1e-12)  # R(mθ) q
    assert np.isclose(a.dot, b.dot, atol=1e-12)
    found = _pair_facts(pair)
    assert found["pair_turns"].holds and found["pair_dot_kept"].holds
    moved = dataclasses.replace(b, dot=b.dot + 1e-6)  # as absolute positions would
    wrong = dataclasses.replace(pair, placed=(a, moved))
    assert not _pair_facts(wrong)["pair_dot_kept"].holds
    unturned = dataclasses.replace(a, q=pair.q)  # drawn at position 0
    assert not _pair_facts(dataclasses.replace(pair, placed=(unturned, b)))[
        "pair_turns"
    ].holds
    assert _pair(64, 10_000.0).theta != pair.theta  # θ follows the base


@pytest.mark.reference
def test_the_head_without_its_rotation_equals_the_reference(smollm2_reference, request):
    """The previous-token head's weights with RoPE removed in its layer: transformers'
    query and key projections of that layer's input, not rotated, softmaxed; and the
    head's shares by offset over the queries after the first."""
    from mha.pages.position import _OFFSETS, _TEXT, real
    from tests.reference import reference_module

    torch = reference_module("torch", request.config)
    model, h = smollm2.load(), real()
    layer, head = h.smollm2_head
    ids = model.encode(_TEXT)
    n, d_k = len(ids), 64
    block = smollm2_reference.model.layers[layer]
    with torch.no_grad():
        out = smollm2_reference(
            torch.tensor([ids]), output_hidden_states=True, output_attentions=True
        )
        x = block.input_layernorm(out.hidden_states[layer])
        q = block.self_attn.q_proj(x).view(n, 9, d_k)[:, head]
        k = block.self_attn.k_proj(x).view(n, 3, d_k)[:, head // 3]
        scores = (q @ k.T) / d_k**0.5
        scores = scores.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), -1e30)
    unrotated = scores.softmax(-1).double().numpy()
    rotated = out.attentions[layer][0, head].double().numpy()

    def shares(w: np.ndarray) -> np.ndarray:  # queries t >= 1 only for d = 0
        return np.array(
            [np.diagonal(w, -d)[int(d == 0) :].mean() for d in range(_OFFSETS)]
        )

    np.testing.assert_allclose(h.smollm2_no_rope, shares(unrotated), atol=1e-4)
    np.testing.assert_allclose(h.smollm2_offsets, shares(rotated), atol=1e-4)
