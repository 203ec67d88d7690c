"""The √d_k study (mha.pages.attention), the tiny example and the attention page."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import numpy as np
import pytest

from mha.attention import causal_mask, padding_mask, softmax
from mha.figures import attention as figures
from mha.figures import to_svg
from mha.pages import attention as scaling
from mha.pages.attention import _facts, batches, cat_sat, dropout, prefixes
from mha.pretrained.smollm2 import perplexity_of, token_losses
from mha.support.formatting import decimals, thousands
from tests.pages.drawn import assert_series, drawn


@pytest.fixture(scope="module")
def variance() -> scaling._VarianceStudy:
    return scaling._variance_study()


@pytest.fixture(scope="module")
def saturation() -> scaling._SaturationStudy:
    return scaling._saturation_study()


# --- the variance study ---------------------------------------------------------


def test_variance_follows_d_k_sigma4_unscaled_and_sigma4_scaled(variance) -> None:
    assert variance.d_k.tolist() == list(scaling._D_KS)
    assert np.allclose(variance.unscaled, variance.d_k, rtol=0.08)
    assert np.allclose(variance.scaled, 1.0, rtol=0.08)
    assert variance.worst_relative_error < 0.08


def test_variance_scales_with_sigma_to_the_fourth() -> None:
    study = scaling._variance_study(d_ks=(8, 128), sigma=0.5)
    assert np.allclose(study.theory_unscaled, [8 / 16, 128 / 16])
    assert np.allclose(study.unscaled, study.theory_unscaled, rtol=0.1)
    assert np.allclose(study.scaled, 1 / 16, rtol=0.1)


def test_variance_study_is_seeded() -> None:
    first = scaling._variance_study(d_ks=(4, 16), n_pairs=256)
    again = scaling._variance_study(d_ks=(4, 16), n_pairs=256)
    other = scaling._variance_study(
        d_ks=(4, 16), n_pairs=256, rng=np.random.default_rng(1)
    )
    assert np.array_equal(first.unscaled, again.unscaled)
    assert not np.array_equal(first.unscaled, other.unscaled)


def test_each_d_k_reads_the_prefix_of_the_same_draw() -> None:
    # A d_k-dimensional pair is the first d_k columns of the widest draw.
    study = scaling._variance_study(d_ks=(3, 5), n_pairs=50)
    q, k = np.random.default_rng(0).standard_normal((2, 50, 5))
    assert np.isclose(study.unscaled[0], (q[:, :3] * k[:, :3]).sum(1).var())
    assert np.isclose(study.scaled[1], ((q * k).sum(1) / np.sqrt(5)).var())


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"d_ks": ()}, "d_ks"),
        ({"d_ks": (4, 0)}, "d_ks"),
        ({"d_ks": (4.0,)}, "d_ks"),
        ({"n_pairs": 1}, "n_pairs"),
        ({"sigma": 0.0}, "sigma"),
        ({"sigma": float("nan")}, "sigma"),
    ],
)
def test_variance_study_rejects_bad_input(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name}: expected"):
        scaling._variance_study(**kwargs)


# --- the softmax: Jacobian, entropy, saturation ---------------------------------


def test_softmax_jacobian_matches_finite_differences() -> None:
    rng = np.random.default_rng(5)
    scores = rng.normal(size=(3, 6))
    jacobian = scaling._softmax_jacobian(softmax(scores))  # (3, 6, 6)
    eps = 1e-6
    for j in range(6):
        step = np.zeros(6)
        step[j] = eps
        column = (softmax(scores + step) - softmax(scores - step)) / (2 * eps)
        assert np.allclose(jacobian[:, :, j], column, atol=1e-8)


def test_entropy_in_bits() -> None:
    weights = np.array([[1 / 16] * 16, [1.0] + [0.0] * 15, [0.5, 0.5] + [0.0] * 14])
    assert np.allclose(scaling._entropy_bits(weights), [4.0, 0.0, 1.0])


def test_without_the_scale_the_softmax_saturates(saturation) -> None:
    unscaled, scaled = saturation.unscaled, saturation.scaled
    assert np.all(np.diff(unscaled.max_weight) > 0)
    assert np.all(np.diff(unscaled.entropy) < 0)
    assert unscaled.max_weight[-1] > 0.999 and unscaled.entropy[-1] < 0.01
    # with the scale nothing depends on d_k: the same spread at every width
    assert np.ptp(scaled.max_weight) < 0.05 and np.ptp(scaled.entropy) < 0.2
    assert scaled.entropy.min() > 0.8 * saturation.max_entropy


def test_without_the_scale_the_gradient_collapses(saturation) -> None:
    assert saturation.unscaled.gradient[-1] < 1e-4
    assert np.ptp(saturation.scaled.gradient) < 0.05
    assert saturation.gradient_drop(1024) > 1000
    assert saturation.gradient_drop(4) < 2  # at small d_k the scale barely matters


def test_saturation_study_rejects_bad_input(saturation) -> None:
    with pytest.raises(ValueError, match=r"^n_tokens: expected"):
        scaling._saturation_study(n_tokens=1)
    with pytest.raises(ValueError, match=r"^n_sequences: expected"):
        scaling._saturation_study(n_sequences=0)
    with pytest.raises(ValueError, match=r"^d_k: expected one of"):
        saturation.index(100)


# --- the tiny example -----------------------------------------------------------


def test_tiny_example_routes_each_token_by_its_query() -> None:
    run = cat_sat._solve()
    assert [cat_sat.TOKENS[i] for i in run.weights[1:].argmax(axis=1)] == ["the", "cat"]
    assert np.allclose(run.weights[0], 1 / 3)  # a zero query: uniform weights
    assert not np.allclose(run.dots, run.dots.T)  # looking is not advertising


def test_one_shared_matrix_makes_scores_symmetric_and_self_centred() -> None:
    shared = cat_sat._solve(w_k=cat_sat.W_Q)
    assert np.array_equal(shared.dots, shared.dots.T)
    assert shared.weights[1:].argmax(axis=1).tolist() == [1, 2]  # each finds itself


def test_causal_mask_hides_the_future() -> None:
    run, causal = cat_sat._solve(), scaling.page().causal
    assert np.array_equal(np.triu(causal.weights, 1), np.zeros((3, 3)))
    assert causal.weights[0].tolist() == [1.0, 0.0, 0.0]
    assert np.allclose(causal.weights[2], run.weights[2])  # the last token sees all


# --- figures and the page -------------------------------------------------------


def test_figures_are_byte_identical_and_follow_the_page_colour(
    variance, saturation
) -> None:
    for draw, study in (
        (figures.variance_vs_dk, variance),
        (figures.saturation_vs_dk, saturation),
    ):
        svg = to_svg(draw(study), "alt")
        assert svg == to_svg(draw(study), "alt")
        # text drawn in matplotlib's default black has no fill: unreadable in dark mode
        texts = re.findall(r"<text[^>]*>", svg)
        assert texts and all("fill: currentColor" in t for t in texts)


def _text(html: str) -> str:
    """The visible text of an HTML page, SVG drawings dropped."""
    html = re.sub(r"<svg.*?</svg>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_page_renders_the_study(built_site: Path, variance, saturation) -> None:
    html = (built_site / "attention" / "index.html").read_text()
    assert html.count('<figure class="mha"') == 2
    assert html.count("<figcaption><strong>Figure ") == 2
    text = _text(html)
    for i in range(len(variance.d_k)):
        row = f"{thousands(variance.d_k[i])} {thousands(variance.theory_unscaled[i])}"
        assert row in text
    assert f"within {decimals(100 * variance.worst_relative_error, 1)}%" in text
    spread = scaling.page().spread
    assert f"between {thousands(spread.low)} and {thousands(spread.high)} times" in text
    # the corrected statements are on the page, the wrong ones are gone
    assert "interleaves this operation with feed-forward layers" in text
    assert "repeated and wrapped" not in text
    assert "a longer query can beat it" in text
    assert "each token scores highest against itself" not in text
    assert "Frobenius norm divided by" in text
    assert "permutation-equivariant" in text
    # the executed blocks ran and showed their output
    assert "every key is masked" in text and "[nan nan nan]" in text


# --- the corrected facts (a test pins each) -------------------------------------


def test_a_shared_matrix_does_not_make_every_token_score_itself_highest() -> None:
    q = scaling._SELF_COUNTER_Q
    dots = q @ q.T
    assert dots[0, 1] > dots[0, 0]  # q0 = [1, 0] scores q1 = [3, 0] above itself
    page = scaling.page()
    assert np.array_equal(page.counter_dots, dots)
    assert page.facts["not_a_rule"].holds and page.facts["shared_self"].holds


def test_the_gradient_ratio_is_reported_as_a_spread_over_seeds() -> None:
    spread = scaling.page().spread
    assert spread.seeds == (0, 1, 2, 3)
    assert spread.drops == tuple(
        scaling._saturation_study(
            d_ks=(1024,), rng=np.random.default_rng(s)
        ).gradient_drop(1024)
        for s in spread.seeds
    )
    assert spread.low < spread.high  # one seed's figure is not the answer
    assert spread.magnitude == 10**spread.order
    assert scaling.page().facts["same_order"].holds


def test_the_typical_gain_is_the_frobenius_norm_over_root_n() -> None:
    rng = np.random.default_rng(3)
    p = softmax(rng.normal(size=8) * 3)
    jacobian = scaling._softmax_jacobian(p)
    g = rng.normal(size=(20000, 8))
    rms = np.sqrt(np.mean(np.sum((g @ jacobian) ** 2, 1) / np.sum(g**2, 1)))
    gain = np.linalg.norm(jacobian) / np.sqrt(8)
    assert np.isclose(rms, gain, rtol=0.02)
    study = scaling._saturation_study(d_ks=(4,), n_sequences=1, n_tokens=2)
    # two keys: ‖J‖_F = 2 p (1 - p) <= 1/2, so the gain is at most 1/(2√2)
    assert 0 < study.scaled.gradient[0] <= 0.5 / np.sqrt(2)


def test_shuffling_the_sentence_shuffles_the_outputs() -> None:
    run = cat_sat._solve()
    for order in [(2, 0, 1), (1, 0, 2), (0, 1, 2)]:
        s = cat_sat._solve(order=order)
        assert np.allclose(s.output, run.output[list(order)])
        assert np.allclose(s.weights, run.weights[np.ix_(order, order)])
    with pytest.raises(ValueError, match=r"^order: expected a permutation"):
        cat_sat._solve(order=(0, 0, 1))
    page = scaling.page()
    assert page.shuffled_tokens == ["sat", "the", "cat"]
    assert np.array_equal(page.shuffle.output, cat_sat._solve(order=(2, 0, 1)).output)


def test_every_fact_of_the_page_holds_and_a_changed_value_is_refused() -> None:
    page = scaling.page()
    assert all(f.holds for f in page.facts.values())
    values = {
        name: getattr(page, name) for name in inspect.signature(_facts).parameters
    }
    ties = np.array([[9.0, 3.0], [3.0, 1.0]])
    assert not _facts(**{**values, "counter_dots": ties})["not_a_rule"].holds
    moved = dataclasses.replace(page.shuffle, output=page.shuffle.output * 2)
    assert not _facts(**{**values, "shuffle": moved})["shuffle"].holds
    spread = dataclasses.replace(page.spread, drops=(10, 1000))  # two orders apart
    assert not _facts(**{**values, "spread": spread})["same_order"].holds
    off = dataclasses.replace(page.variance, unscaled=page.variance.unscaled * 1.5)
    assert not _facts(**{**values, "variance": off})["within_noise"].holds


def test_the_figures_draw_the_pages_studies() -> None:
    page = scaling.page()
    assert {name: f.data for name, f in page.figures.items()} == {
        "variance_vs_dk": (page.variance,),
        "saturation_vs_dk": (page.saturation,),
    }
    for figure in page.figures.values():
        module, _, function = figure.draw.partition(".")
        assert module == "attention" and callable(getattr(figures, function))


# --- masks in a padded batch, the prefixes, dropout -------------------------------


def test_the_decoder_mask_gives_every_query_a_key_and_pads_only_themselves() -> None:
    lengths, n = (4, 2, 1), 4
    for left in (False, True):
        mask = batches._decoder_mask(lengths, n, left)
        valid = padding_mask(lengths, n, left=left)
        assert mask.shape == (3, n, n) and mask.any(axis=-1).all()
        real = valid[:, :, None] & valid[:, None, :] & causal_mask(n)
        assert np.array_equal(mask & valid[:, :, None], real)  # real queries: real keys
        for b, i in zip(*np.nonzero(~valid), strict=True):  # a padding query
            if left:
                assert mask[b, i].tolist() == np.eye(n, dtype=bool)[i].tolist()
            else:  # right: pads come last and see the real tokens before them
                seen = valid[b] & (np.arange(n) <= i) | (np.arange(n) == i)
                assert mask[b, i].tolist() == seen.tolist()


def test_padding_goes_where_the_side_says() -> None:
    short, long = np.ones((1, 8)), np.zeros((3, 8))
    right, left = batches.pad([long, short], False), batches.pad([long, short], True)
    assert right[1, 0, 0] == 1 and (right[1, 1:] == batches._PAD_SCALE).all()
    assert left[1, -1, 0] == 1 and (left[1, :-1] == batches._PAD_SCALE).all()


def test_a_padded_batch_gives_each_sentence_its_own_result() -> None:
    result = batches._study((4, 3, 1))
    assert max(result.right, result.left, result.right_causal_only) <= 1e-12
    assert result.left_causal_only > 1  # the pads before a token leak into it
    assert result.refusal.startswith("mask: expected at least one key")


def test_dropout_keeps_the_expectation_only_with_its_rescaling() -> None:
    w = np.array([[0.7, 0.2, 0.1]])
    drawn = dropout.dropout(
        np.broadcast_to(w, (40_000, 1, 3)), 0.3, np.random.default_rng(2)
    )
    assert set(np.unique(np.round(drawn / w, 9))) == {0.0, round(1 / 0.7, 9)}
    assert np.allclose(drawn.mean(axis=0), w, atol=0.01)
    assert np.allclose((drawn * 0.7).mean(axis=0), 0.7 * w, atol=0.01)
    assert dropout.dropout(w, 0.3, training=False) is w
    assert (
        dropout.dropout(np.float32(w), 0.5, np.random.default_rng(0)).dtype
        == np.float32
    )
    for p in (1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match=r"^p: expected a probability in \[0, 1\)"):
            dropout.dropout(w, p)


def test_the_dropout_study_reads_minilms_p_and_one_step_drops_a_weight() -> None:
    study = scaling.page().drop
    assert study.p == dropout._minilm_p() and (study.one_draw == 0).any()
    assert study.mean.shape == (len(dropout._SEEDS), 3, 3) and study.largest_z < 4


def test_one_causal_pass_scores_every_prefix() -> None:
    r = prefixes._results()
    assert (
        r.n == len(r.tokens) - 1 == len(r.rows)
        and r.separate_tokens == r.n * (r.n + 1) // 2
    )
    assert r.largest_relative <= r.tolerance == 1e-5 and r.largest_difference > 0
    # the losses are -log softmax at the target, and exp of their mean the perplexity
    logits, ids = np.random.default_rng(0).normal(size=(5, 7)), np.arange(5)
    losses = token_losses(logits, ids)
    assert np.allclose(losses, -np.log(softmax(logits)[np.arange(5), ids]))
    assert np.isclose(np.exp(losses.mean()), perplexity_of(logits, ids))


def fails(name: str, **changed) -> bool:
    """Whether the page's fact ``name`` is false once ``changed`` replaces some of
    the page's values."""
    page = scaling.page()
    values = {n: getattr(page, n) for n in inspect.signature(_facts).parameters}
    return not _facts(**{**values, **changed})[name].holds


def test_the_tiny_examples_facts_turn_false_on_other_values() -> None:
    page = scaling.page()
    tiny = page.tiny
    # the subject wanting the verb and not the reverse: the scores transposed
    assert fails("asymmetric", tiny=dataclasses.replace(tiny, dots=tiny.dots.T))
    # two matrices, not one: "cat" looks for its determiner, not for itself
    assert fails("shared_self", shared=tiny)
    # the two value channels swapped: "sat" collects mostly *action*
    swapped = dataclasses.replace(tiny, output=tiny.output[:, ::-1])
    assert fails("sat_animal", tiny=swapped)
    # "the" given the verb's query: it looks for a noun, its scores differ
    w_q = cat_sat.W_Q.copy()
    w_q[cat_sat.TOKENS.index("the")] = cat_sat.W_Q[cat_sat.TOKENS.index("sat")]
    assert fails("uniform", tiny=cat_sat._solve(w_q=w_q))
    # no mask: "the" sees every token; a mask of the later tokens: "sat" sees itself
    assert fails("causal_first", causal=tiny)
    assert fails("causal_last", causal=cat_sat._solve(mask=causal_mask(3).T))


def test_the_saturation_facts_turn_false_on_other_values() -> None:
    study = scaling.page().saturation
    un, sc = study.unscaled, study.scaled

    def study_with(**runs: scaling._Softmaxed) -> scaling._SaturationStudy:
        return dataclasses.replace(study, **runs)

    # the unscaled top weight falling, or its entropy rising, as d_k grows
    falling = dataclasses.replace(un, max_weight=un.max_weight[::-1])
    assert fails("unscaled_saturates", saturation=study_with(unscaled=falling))
    rising = dataclasses.replace(un, entropy=un.entropy[::-1])
    assert fails("unscaled_saturates", saturation=study_with(unscaled=rising))
    # the scaled softmax saturating like the unscaled one
    assert fails("scaled_flat", saturation=study_with(scaled=un))
    assert fails(
        "gain_flat",
        saturation=study_with(scaled=dataclasses.replace(sc, gradient=un.gradient)),
    )
    # the unscaled gain no longer falling at the last doubling of d_k
    stalled = un.gradient.copy()
    stalled[-1] = stalled[-2]
    stalls = dataclasses.replace(un, gradient=stalled)
    assert fails("gain_falls", saturation=study_with(unscaled=stalls))


def test_the_training_facts_turn_false_on_other_values() -> None:
    page = scaling.page()
    batch, drop, prefix = page.batch, page.drop, page.prefix
    assert fails("batch_equal", batch=dataclasses.replace(batch, left=1e-3))
    assert fails(
        "right_causal_enough", batch=dataclasses.replace(batch, right_causal_only=1.0)
    )
    assert fails("left_leaks", batch=dataclasses.replace(batch, left_causal_only=0.0))
    assert fails("left_refused", batch=dataclasses.replace(batch, refusal=""))
    assert fails("rows_not_one", drop=dataclasses.replace(drop, one_draw=drop.weights))
    assert fails("dropout_kept", drop=dataclasses.replace(drop, mean=drop.mean * 1.1))
    assert fails(
        "unscaled_shrinks", drop=dataclasses.replace(drop, mean_unscaled=drop.weights)
    )
    twice = dataclasses.replace(prefix, separate=prefix.one_pass * (1 + 1e-4))
    assert fails("prefix_equal", prefix=twice)
    same = dataclasses.replace(prefix, separate=prefix.one_pass)
    assert fails("not_bitwise", prefix=same)


# --- its figures --------------------------------------------------------------
# The √d_k figures draw the page's measured and theoretical variances, and its
# softmax statistics, each under the name of the scores it belongs to.


def test_variance_vs_dk_puts_each_measurement_and_theory_under_its_name():
    p, (panel,) = drawn("attention", "variance_vs_dk")
    v = p.variance
    assert_series(
        panel.lines,
        {
            "d_k σ⁴ (theory)": [v.d_k, v.theory_unscaled],
            "Var(q·k), measured": [v.d_k, v.unscaled],
            "σ⁴ (theory)": [v.d_k, v.theory_scaled],
            "Var(q·k / √d_k), measured": [v.d_k, v.scaled],
        },
    )
    assert panel.xticks == [str(d) for d in v.d_k]


def test_saturation_vs_dk_puts_each_statistic_of_each_score_in_its_panel():
    p, panels = drawn("attention", "saturation_vs_dk")
    s = p.saturation
    fields = ("max_weight", "entropy", "gradient")
    assert len(panels) == len(fields)
    for panel, field in zip(panels, fields, strict=True):
        assert_series(
            panel.lines,
            {
                "q·k": [s.d_k, getattr(s.unscaled, field)],
                "q·k / √d_k": [s.d_k, getattr(s.scaled, field)],
            },
        )
        assert panel.xticks == [str(d) for d in s.d_k[::2]]
    assert panels[1].title.startswith("entropy")
    (uniform,) = [v for k, v in panels[1].lines.items() if k.startswith("_")]
    assert np.allclose(uniform[1], s.max_entropy) and panels[1].texts == ["uniform"]


def test_the_d_k_64_figures_are_medians_over_twenty_seeds_with_their_range() -> None:
    """The prose's values at d_k = 64: a median and range over 20 seeds, not one seed's
    (the default seed's unscaled top weight lies outside the 20 seeds' range)."""
    from mha.pages import attention

    p = attention.page()
    at = p.at_typical
    assert p.typical_seeds == len(attention._TYPICAL_SEEDS) == 20
    for kind in ("unscaled", "scaled"):
        for measure in ("max_weight", "entropy", "gradient"):
            median, low, high = at[kind][measure]
            assert low <= median <= high
    seed_3 = attention._saturation_study(d_ks=(64,), rng=np.random.default_rng(3))
    low, high = at["unscaled"]["max_weight"][1:]
    assert low <= seed_3.unscaled.max_weight[0] <= high  # one of the 20 is inside
    assert at["unscaled"]["max_weight"][0] > at["scaled"]["max_weight"][2]
