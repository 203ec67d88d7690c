"""Scaled dot-product attention: what ``docs/attention.md`` prints.

The tiny example is ``cat_sat``; then seeded Monte Carlo studies of the 1/√d_k scale
(``_variance_study``, ``_saturation_study``), each drawing its vectors once at the
largest d_k; masks in a padded batch ``batches``, ``dropout``, and ``prefixes``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mha.attention import causal_mask, softmax
from mha.data import published
from mha.pages.attention import batches, cat_sat, dropout, prefixes
from mha.support.page import Fact, Figure, Page
from mha.support.validate import generator, positive_int

_D_KS = (4, 8, 16, 32, 64, 128, 256, 512, 1024)  # the head widths studied
_N_PAIRS = 4096  # (q, k) pairs per d_k in the variance study
_N_SEQUENCES, _N_TOKENS = 64, 16  # self-attention over 64 sequences of 16 tokens


@dataclass(frozen=True)
class _VarianceStudy:
    """Empirical variance of q·k (``unscaled``) and q·k/√d_k (``scaled``) per d_k."""

    d_k: np.ndarray  # (m,) head widths
    sigma: float  # standard deviation of every q and k component
    n_pairs: int  # samples behind each variance
    unscaled: np.ndarray  # (m,) empirical Var(q·k)
    scaled: np.ndarray  # (m,) empirical Var(q·k / √d_k)

    @property
    def theory_unscaled(self) -> np.ndarray:  # d_k σ⁴
        return self.d_k * self.sigma**4

    @property
    def theory_scaled(self) -> np.ndarray:  # σ⁴ for each d_k: the scale removes d_k
        return np.full(self.d_k.shape, self.sigma**4)

    @property
    def worst_relative_error(self) -> float:  # max |measured / theory - 1|
        ratios = np.concatenate([self.unscaled, self.scaled]) / np.concatenate(
            [self.theory_unscaled, self.theory_scaled]
        )
        return float(np.abs(ratios - 1).max())

    @property
    def standard_error(self) -> float:
        """Largest relative standard error of a measured variance, √((kurtosis - 1) / N)."""
        kurtosis = 3 + 6 / self.d_k  # of q·k, a sum of d_k products of two normals
        return float(np.sqrt((kurtosis - 1) / self.n_pairs).max())


def _variance_study(
    d_ks: tuple[int, ...] = _D_KS,
    n_pairs: int = _N_PAIRS,
    sigma: float = 1.0,
    rng: np.random.Generator | None = None,
) -> _VarianceStudy:
    """Monte Carlo estimate of Var(q·k) and Var(q·k/√d_k) for each d_k in ``d_ks``."""
    d_k = _widths(d_ks)
    n_pairs = positive_int("n_pairs", n_pairs)
    if n_pairs < 2:
        raise ValueError(f"n_pairs: expected at least 2 samples, got {n_pairs}")
    if not (np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma: expected a positive finite number, got {sigma!r}")
    q, k = sigma * generator(rng).standard_normal((2, n_pairs, d_k.max()))
    dots = np.stack(
        [np.einsum("nd,nd->n", q[:, :d], k[:, :d]) for d in d_k], axis=1
    )  # (n_pairs, m)
    scaled = (dots / np.sqrt(d_k)).var(axis=0)
    return _VarianceStudy(d_k, float(sigma), n_pairs, dots.var(axis=0), scaled)


def _softmax_jacobian(p: np.ndarray) -> np.ndarray:
    """∂softmax(s)/∂s = diag(p) - p pᵀ for each weight row p: ``(..., n) -> (..., n, n)``."""
    return p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]


def _entropy_bits(p: np.ndarray) -> np.ndarray:
    """Entropy in bits of each weight row (0 log 0 = 0): ``(..., n) -> (...)``."""
    return -(p * np.log2(np.where(p > 0, p, 1.0))).sum(axis=-1)


@dataclass(frozen=True)
class _Softmaxed:
    """Median over every query of what its softmax did, one entry per d_k."""

    max_weight: np.ndarray  # (m,) largest attention weight of a query
    entropy: np.ndarray  # (m,) entropy of its weights, in bits
    gradient: np.ndarray  # (m,) typical gain of its softmax Jacobian, ‖J‖_F / √n


@dataclass(frozen=True)
class _SaturationStudy:
    """The softmax of unscaled (q·k) and scaled (q·k/√d_k) scores as d_k grows."""

    d_k: np.ndarray  # (m,) head widths
    n_tokens: int  # keys each query attends over
    n_queries: int  # queries behind each median
    unscaled: _Softmaxed
    scaled: _Softmaxed

    @property
    def max_entropy(self) -> float:  # the entropy of uniform weights
        return float(np.log2(self.n_tokens))

    def index(self, d_k: int) -> int:
        """Position of ``d_k`` in the study, or a ValueError if it was not studied."""
        if d_k not in self.d_k:
            raise ValueError(f"d_k: expected one of {self.d_k.tolist()}, got {d_k!r}")
        return int(np.flatnonzero(self.d_k == d_k)[0])

    def gradient_drop(self, d_k: int) -> int:
        """Scaled gain / unscaled gain at ``d_k``, rounded."""
        i = self.index(d_k)
        return round(self.scaled.gradient[i] / self.unscaled.gradient[i])


def _saturation_study(
    d_ks: tuple[int, ...] = _D_KS,
    n_sequences: int = _N_SEQUENCES,
    n_tokens: int = _N_TOKENS,
    rng: np.random.Generator | None = None,
) -> _SaturationStudy:
    """Self-attention on standard-normal q and k, with and without the 1/√d_k scale:
    medians over every query of ``n_sequences`` sequences of ``n_tokens`` tokens.
    """
    d_k = _widths(d_ks)
    n_sequences = positive_int("n_sequences", n_sequences)
    n_tokens = positive_int("n_tokens", n_tokens)
    if n_tokens < 2:
        raise ValueError(
            f"n_tokens: expected at least 2 keys to attend over, got {n_tokens}"
        )
    q, k = generator(rng).standard_normal((2, n_sequences, n_tokens, d_k.max()))
    dots = [q[..., :d] @ np.swapaxes(k[..., :d], -1, -2) for d in d_k]  # (seqs, n, n)
    unscaled = [softmax(s) for s in dots]
    scaled = [softmax(s / np.sqrt(d)) for s, d in zip(dots, d_k, strict=True)]
    return _SaturationStudy(
        d_k, n_tokens, n_sequences * n_tokens, _summarise(unscaled), _summarise(scaled)
    )


def _summarise(runs: list[np.ndarray]) -> _Softmaxed:
    """Medians over the query rows of each run: largest weight, entropy, gain ‖J‖_F/√n."""
    rows = []
    for w in runs:
        gain = np.linalg.norm(_softmax_jacobian(w), axis=(-2, -1)) / np.sqrt(
            w.shape[-1]
        )
        rows.append([np.median(a) for a in (w.max(axis=-1), _entropy_bits(w), gain)])
    return _Softmaxed(*np.array(rows).T)


def _widths(d_ks: tuple[int, ...]) -> np.ndarray:
    """``d_ks`` as an int array of positive head widths, or a ValueError."""
    if len(d_ks) == 0:
        raise ValueError("d_ks: expected at least one head width, got none")
    return np.array([positive_int("d_ks", d) for d in d_ks])


_SEEDS = (0, 1, 2, 3)  # the seeds over which the gradient ratio's spread is reported
_TYPICAL_SEEDS = tuple(range(20))  # the seeds of the d_k = 64 medians and their range
# The head width of the base Transformer (and of BERT-base): d_k = 64.
_TYPICAL_D_K = published.model("Transformer base").d_k
# With W_K = W_Q a token need not score itself highest: two queries along one axis.
_SELF_COUNTER_Q = np.array([[1.0, 0.0], [3.0, 0.0]])
_SHUFFLE = (2, 0, 1)  # "the cat sat" read as "sat the cat"


@dataclass(frozen=True)
class _GradientSpread:
    """How many times more gradient the scale lets through at the widest d_k, per seed."""

    seeds: tuple[int, ...]
    drops: tuple[int, ...]  # scaled gain / unscaled gain, one per seed

    @property
    def low(self) -> int:
        return min(self.drops)

    @property
    def high(self) -> int:
        return max(self.drops)

    @property
    def order(self) -> int:
        """The power of ten nearest the ratios' geometric mean."""
        return round(float(np.mean(np.log10(self.drops))))

    @property
    def magnitude(self) -> int:
        return 10**self.order


def _typical(seeds: tuple[int, ...]) -> dict[str, dict[str, tuple[float, ...]]]:
    """The saturation study at d_k = 64 once per seed: for the unscaled and the
    scaled softmax, each measure's median over the seeds, lowest and highest."""
    runs = [
        _saturation_study(d_ks=(_TYPICAL_D_K,), rng=np.random.default_rng(seed))
        for seed in seeds
    ]
    found = {}
    for kind in ("unscaled", "scaled"):
        found[kind] = {}
        for measure in ("max_weight", "entropy", "gradient"):
            values = np.array([getattr(getattr(r, kind), measure)[0] for r in runs])
            found[kind][measure] = tuple(
                float(f(values)) for f in (np.median, np.min, np.max)
            )
    return found


@functools.cache
def page() -> Page:
    """What the page prints: the tiny example, the two studies and their table rows."""
    v, s, top = _variance_study(), _saturation_study(), _D_KS[-1]
    drops = [
        _saturation_study(d_ks=(top,), rng=np.random.default_rng(seed)).gradient_drop(
            top
        )
        for seed in _SEEDS
    ]
    values = dict(
        tiny=cat_sat._solve(),
        shared=cat_sat._solve(w_k=cat_sat.W_Q),
        causal=cat_sat._solve(mask=causal_mask(len(cat_sat.TOKENS))),
        counter_dots=_SELF_COUNTER_Q @ _SELF_COUNTER_Q.T,
        shuffle=cat_sat._solve(order=_SHUFFLE),
        variance=v,
        saturation=s,
        spread=_GradientSpread(_SEEDS, tuple(drops)),
        batch=batches._study(),
        drop=dropout.study(),
        prefix=prefixes._results(),
    )
    u, sc = s.unscaled, s.scaled
    ratio = v.unscaled / v.theory_unscaled  # measured / theory (1 when they agree)
    columns = (v.d_k, v.theory_unscaled, np.round(v.unscaled), ratio)
    columns += (v.theory_scaled, v.scaled)  # the measured Var(q·k) printed whole
    return Page(
        **values,
        counter_q=_SELF_COUNTER_Q,
        shuffled_tokens=[cat_sat.TOKENS[i] for i in _SHUFFLE],
        typical=s.index(_TYPICAL_D_K),
        typical_seeds=len(_TYPICAL_SEEDS),
        at_typical=_typical(_TYPICAL_SEEDS),
        variance_rows=np.column_stack(columns),
        saturation_rows=np.column_stack(
            (s.d_k, u.max_weight, sc.max_weight, u.entropy, sc.entropy)
        ),
        facts=_facts(**values),
        figures=_figures(v, s),
    )


def _facts(
    tiny: cat_sat._Attended,
    shared: cat_sat._Attended,
    causal: cat_sat._Attended,
    counter_dots: np.ndarray,
    shuffle: cat_sat._Attended,  # the tiny example read in the order SHUFFLE
    variance: _VarianceStudy,
    saturation: _SaturationStudy,
    spread: _GradientSpread,
    batch: batches._Batched,
    drop: dropout._DropoutStudy,
    prefix: prefixes._PrefixLosses,
) -> dict[str, Fact]:
    """The facts the page's sentences state about the tiny example and the studies."""
    sat, cat = cat_sat.TOKENS.index("sat"), cat_sat.TOKENS.index("cat")
    dots, out, weights, scores = tiny.dots, tiny.output, tiny.weights, tiny.scores
    worst, se = variance.worst_relative_error, variance.standard_error
    un, sc, t = saturation.unscaled, saturation.scaled, saturation.index(_TYPICAL_D_K)
    order, gain, p, w = list(_SHUFFLE), sc.gradient, drop.p, drop.weights
    return {
        "asymmetric": Fact(
            dots[sat, cat] > dots[cat, sat],
            f"scores {dots.tolist()}",
            says='"sat" scores "cat" higher than "cat" scores "sat", with separate W_Q and W_K',
        ),
        "shared_self": Fact(
            shared.dots[cat].argmax() == cat and shared.dots[sat].argmax() == sat,
            f"shared scores {shared.dots.tolist()}",
            says='with W_K = W_Q, "cat" and "sat" each score highest against themselves',
        ),
        "not_a_rule": Fact(
            counter_dots[0, 1] > counter_dots[0, 0],
            f"scores {counter_dots.tolist()}",
            says="in the counterexample, q_0 scores the longer q_1 higher than it scores itself",
        ),
        "sat_animal": Fact(
            out[sat, 0] > 0.5 and out[sat, 0] > out[sat, 1],
            f"sat: {out[sat].tolist()}",
            says='the output of "sat" is above 0.5 in its first (animal) coordinate and larger there than in its second',
        ),
        "uniform": Fact(
            np.allclose(scores[0], scores[0, 0])
            and np.allclose(weights[0], weights[0].mean()),
            f"scores of the {scores[0].tolist()}, weights {weights[0].tolist()}",
            says='every score of "the" (a zero query) is equal, and so is every one of its weights',
        ),
        "within_noise": Fact(
            worst < 3 * se,
            f"worst {worst:.4f}, SE {se:.4f}",
            says="the largest relative error of the measured score variances is under three standard errors",
        ),
        "unscaled_saturates": Fact(
            np.all(np.diff(un.max_weight) > 0) and np.all(np.diff(un.entropy) < 0),
            f"max {np.round(un.max_weight, 3).tolist()}",
            says="without the scale, the top weight rises and the entropy falls at every larger d_k",
        ),
        "scaled_flat": Fact(
            np.ptp(sc.max_weight) < 0.05 and np.ptp(sc.entropy) < 0.2,
            f"scaled max {np.round(sc.max_weight, 3).tolist()}",
            says="with the scale, the top weight varies by under 0.05 and the entropy by under 0.2 bits over every d_k",
        ),
        "gain_flat": Fact(
            np.ptp(gain) < 0.1 * gain.mean(),
            f"gain {gain.tolist()}",
            says="with the scale, the gradient's gain varies by under a tenth of its mean over every d_k",
        ),
        "gain_falls": Fact(
            np.all(np.diff(un.gradient[t:]) < 0),
            f"gain {un.gradient[t:].tolist()}",
            says="without the scale, the gradient's gain falls at every doubling of d_k from the typical d_k on",
        ),
        "same_order": Fact(
            all(round(float(np.log10(d))) == spread.order for d in spread.drops),
            f"ratios {spread.drops}",
            says="for every seed, how many times more gradient the scaled softmax passes rounds to the same power of ten",
        ),
        "causal_first": Fact(
            causal.weights[0].tolist() == [1, 0, 0],
            f"{causal.weights[0].tolist()}",
            says='under the causal mask, "the" puts weight 1 on itself and 0 on "cat" and "sat"',
        ),
        "causal_last": Fact(
            np.allclose(causal.weights[sat], weights[sat]),
            f"{causal.weights[sat].tolist()} vs {weights[sat].tolist()}",
            says='under the causal mask, the weights of "sat" equal its weights without the mask',
        ),
        "shuffle": Fact(
            np.allclose(shuffle.output, out[order])
            and np.allclose(shuffle.weights, weights[np.ix_(order, order)]),
            f"order {order}",
            says="after shuffling the tokens, each token's output and weights equal its unshuffled ones, reordered",
            qualitative="an identity over every output and weight (np.allclose), which the block above prints",
        ),
        "batch_equal": Fact(
            max(batch.right, batch.left) <= batch.tolerance,
            f"right {batch.right}, left {batch.left}",
            says="with padding on the right and on the left, each sentence's real rows equal its output alone, within the tolerance",
        ),
        "right_causal_enough": Fact(
            batch.right_causal_only <= batch.tolerance,
            f"{batch.right_causal_only}",
            says="with right padding, the causal mask alone gives each sentence's output alone, within the tolerance",
        ),
        "left_leaks": Fact(
            batch.left_causal_only > 1,
            f"{batch.left_causal_only}",
            says="with left padding and the causal mask alone, some real token's output moves by more than 1",
        ),
        "left_refused": Fact(
            "every key is masked" in batch.refusal,
            f"refusal {batch.refusal!r}",
            says='the core refuses left padding under both masks with an error saying "every key is masked"',
        ),
        "rows_not_one": Fact(
            not np.allclose(drop.row_sums, 1),
            f"row sums {drop.row_sums.tolist()}",
            says="after one dropout draw, the rows of the weights do not all sum to one",
        ),
        "dropout_kept": Fact(
            drop.largest_z < 4,
            f"largest z {drop.largest_z}",
            says="every mean weight over the dropout draws is under 4 standard errors from the evaluation weight",
        ),
        "unscaled_shrinks": Fact(
            np.allclose(drop.mean_unscaled, (1 - p) * w, rtol=0.05)
            and (drop.mean_unscaled < w).all(),
            f"{drop.mean_unscaled.tolist()} vs {w.tolist()}",
            says="without dividing by 1 - p, every mean weight is below the weight and within 5% of (1 - p) times it",
        ),
        "prefix_equal": Fact(
            prefix.largest_relative <= prefix.tolerance,
            f"largest relative difference {prefix.largest_relative}",
            says="the largest relative difference between the losses of one pass and of separate passes is within the tolerance",
        ),
        "not_bitwise": Fact(
            prefix.largest_difference > 0,
            f"largest {prefix.largest_difference}",
            says="the largest difference between the losses of one pass and of separate passes is above zero",
        ),
    }


def _figures(
    variance: _VarianceStudy, saturation: _SaturationStudy
) -> dict[str, Figure]:
    """The page's two figures; their alt texts state what the facts check."""
    return {
        "variance_vs_dk": Figure(
            "attention.variance_vs_dk",
            (variance,),
            alt="Score variance against d_k on log-log axes. The measured variance of "
            "q·k sits on the rising line d_k σ⁴, growing in proportion to d_k; the "
            "measured variance of q·k divided by √d_k sits on the flat line σ⁴ for "
            "every d_k.",
            caption="Measured score variances (markers) on their theory (lines). Look "
            "at the two slopes: without the scale the variance grows with d_k, with it "
            "the line is flat.",
        ),
        "saturation_vs_dk": Figure(
            "attention.saturation_vs_dk",
            (saturation,),
            alt="Three panels against d_k, unscaled q·k in orange and scaled q·k/√d_k "
            "in blue. Largest weight: unscaled climbs towards one, scaled stays low and "
            "flat. Entropy: unscaled falls towards zero, scaled stays flat just under "
            "the uniform maximum. Typical gradient gain on a log scale: scaled stays "
            "flat, unscaled collapses as d_k grows.",
            caption="What the softmax makes of unscaled and scaled scores as d_k grows. "
            "Look at the orange curves: the top weight goes to one, the entropy and "
            "the gradient to zero.",
        ),
    }
