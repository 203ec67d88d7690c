"""Why attention divides the scores by √d_k: a seeded Monte Carlo study.

Page: ``docs/attention.md``.

Queries and keys have independent components with mean 0 and variance σ². Then
q·k is a sum of d_k independent terms of variance σ⁴, so Var(q·k) = d_k σ⁴, and
Var(q·k / √d_k) = σ⁴ whatever d_k is. Two studies check it and show what it is for:

- ``variance_study``: empirical vs theoretical variance of the unscaled and scaled
  scores, d_k from 4 to 1024.
- ``saturation_study``: what the softmax makes of those scores, with and without
  the scale: its largest weight, its entropy and the typical gain of its Jacobian
  J, ``‖J‖_F / √n`` (the root-mean-square factor by which J shrinks a gradient of
  random direction on the way back into the scores).

The page's other values come from here too (``page()``), with its claims (the
sentences that compare computed values), its figures' alt texts and captions, and the
permutation check (``shuffled``) on the tiny example of ``mha.worked.cat_sat``.

Both draw their vectors once at the largest d_k and read smaller d_k off the first
columns (a d_k-dimensional vector is the prefix of a wider one), so the whole study
costs one draw and runs in well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.attention import scaled_dot_product_attention, softmax
from mha.data import published
from mha.support.cache import cached
from mha.support.claims import Claim, check
from mha.support.validate import generator, positive_int
from mha.worked import cat_sat

D_KS = (4, 8, 16, 32, 64, 128, 256, 512, 1024)  # the head widths studied
N_PAIRS = 4096  # (q, k) pairs per d_k in the variance study
N_SEQUENCES, N_TOKENS = 64, 16  # self-attention over 64 sequences of 16 tokens


@dataclass(frozen=True)
class VarianceStudy:
    """Empirical variance of q·k (``unscaled``) and q·k/√d_k (``scaled``) per d_k."""

    d_k: np.ndarray  # (m,) head widths
    sigma: float  # standard deviation of every q and k component
    n_pairs: int  # samples behind each variance
    unscaled: np.ndarray  # (m,) empirical Var(q·k)
    scaled: np.ndarray  # (m,) empirical Var(q·k / √d_k)

    @property
    def theory_unscaled(self) -> np.ndarray:
        """d_k σ⁴ for each d_k."""
        return self.d_k * self.sigma**4

    @property
    def theory_scaled(self) -> np.ndarray:
        """σ⁴ for each d_k: the scale removes the dependence on d_k."""
        return np.full(self.d_k.shape, self.sigma**4)

    @property
    def ratio_unscaled(self) -> np.ndarray:
        """Measured Var(q·k) divided by its theory d_k σ⁴ (1 when they agree)."""
        return self.unscaled / self.theory_unscaled

    @property
    def ratio_scaled(self) -> np.ndarray:
        """Measured Var(q·k/√d_k) divided by its theory σ⁴ (1 when they agree)."""
        return self.scaled / self.theory_scaled

    @property
    def worst_relative_error(self) -> float:
        """Largest |measured / theoretical - 1| over every d_k, scaled or not."""
        ratios = np.concatenate([self.ratio_unscaled, self.ratio_scaled])
        return float(np.abs(ratios - 1).max())


def variance_study(
    d_ks: tuple[int, ...] = D_KS,
    n_pairs: int = N_PAIRS,
    sigma: float = 1.0,
    rng: np.random.Generator | None = None,
) -> VarianceStudy:
    """Monte Carlo estimate of Var(q·k) and Var(q·k/√d_k) for each d_k in ``d_ks``.

    ```python
    import numpy as np
    from mha.pages.attention import variance_study

    study = variance_study(d_ks=(4, 64), sigma=2.0)
    assert np.allclose(study.unscaled, [4 * 16, 64 * 16], rtol=0.1)  # d_k σ⁴
    assert np.allclose(study.scaled, 16, rtol=0.1)  # σ⁴, whatever d_k
    ```
    """
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
    return VarianceStudy(
        d_k=d_k,
        sigma=float(sigma),
        n_pairs=n_pairs,
        unscaled=dots.var(axis=0),
        scaled=(dots / np.sqrt(d_k)).var(axis=0),
    )


def softmax_jacobian(weights: np.ndarray) -> np.ndarray:
    """∂softmax(s)/∂s = diag(p) - p pᵀ for each weight row p: ``(..., n) -> (..., n, n)``.

    A gradient g on the weights reaches the scores as ``J @ g``. When one weight is
    close to 1 and the rest close to 0, every entry of J is close to 0, and so is
    the gradient.

    ```python
    import numpy as np
    from mha.pages.attention import softmax_jacobian

    assert np.allclose(softmax_jacobian(np.array([0.5, 0.5])), [[0.25, -0.25], [-0.25, 0.25]])
    assert np.allclose(softmax_jacobian(np.array([1.0, 0.0])), 0)  # saturated: no gradient
    ```
    """
    p = np.asarray(weights)
    return p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]


def entropy_bits(weights: np.ndarray) -> np.ndarray:
    """Entropy in bits of each weight row (0 log 0 = 0): ``(..., n) -> (...)``.

    Uniform weights over n keys give log₂ n bits; all weight on one key gives 0.

    ```python
    import numpy as np
    from mha.pages.attention import entropy_bits

    assert np.allclose(entropy_bits(np.array([[0.25] * 4, [1.0, 0, 0, 0]])), [2.0, 0.0])
    ```
    """
    p = np.asarray(weights)
    logs = np.log2(np.where(p > 0, p, 1.0))
    return -(p * logs).sum(axis=-1)


@dataclass(frozen=True)
class Softmaxed:
    """Median over every query of what its softmax did, one entry per d_k."""

    max_weight: np.ndarray  # (m,) largest attention weight of a query
    entropy: np.ndarray  # (m,) entropy of its weights, in bits
    gradient: np.ndarray  # (m,) typical gain of its softmax Jacobian, ‖J‖_F / √n


@dataclass(frozen=True)
class SaturationStudy:
    """The softmax of unscaled (q·k) and scaled (q·k/√d_k) scores as d_k grows."""

    d_k: np.ndarray  # (m,) head widths
    n_tokens: int  # keys each query attends over
    n_queries: int  # queries behind each median
    unscaled: Softmaxed
    scaled: Softmaxed

    @property
    def max_entropy(self) -> float:
        """log₂ n_tokens: the entropy of uniform weights."""
        return float(np.log2(self.n_tokens))

    def index(self, d_k: int) -> int:
        """Position of ``d_k`` in the study, or a ValueError if it was not studied."""
        if d_k not in self.d_k:
            raise ValueError(f"d_k: expected one of {self.d_k.tolist()}, got {d_k!r}")
        return int(np.flatnonzero(self.d_k == d_k)[0])

    def gradient_drop(self, d_k: int) -> int:
        """How many times smaller the unscaled gradient is than the scaled one at ``d_k``, rounded."""
        i = self.index(d_k)
        return round(self.scaled.gradient[i] / self.unscaled.gradient[i])


def saturation_study(
    d_ks: tuple[int, ...] = D_KS,
    n_sequences: int = N_SEQUENCES,
    n_tokens: int = N_TOKENS,
    rng: np.random.Generator | None = None,
) -> SaturationStudy:
    """Self-attention on standard-normal q and k, with and without the 1/√d_k scale.

    For each d_k: the median largest weight, entropy and Jacobian norm over every
    query of ``n_sequences`` sequences of ``n_tokens`` tokens.

    ```python
    from mha.pages.attention import saturation_study

    study = saturation_study(d_ks=(4, 256), n_sequences=8)
    assert study.unscaled.max_weight[1] > 0.9  # unscaled: one key takes nearly all
    assert study.scaled.max_weight[1] < 0.5  # scaled: still spread out
    assert study.gradient_drop(256) > 10  # and the gradient through it collapses
    ```
    """
    d_k = _widths(d_ks)
    n_sequences = positive_int("n_sequences", n_sequences)
    n_tokens = positive_int("n_tokens", n_tokens)
    if n_tokens < 2:
        raise ValueError(
            f"n_tokens: expected at least 2 keys to attend over, got {n_tokens}"
        )
    q, k = generator(rng).standard_normal((2, n_sequences, n_tokens, d_k.max()))
    runs = {"unscaled": [], "scaled": []}
    for d in d_k:
        dots = q[..., :d] @ np.swapaxes(k[..., :d], -1, -2)  # (seqs, n, n)
        runs["unscaled"].append(_summarise(softmax(dots)))
        runs["scaled"].append(_summarise(softmax(dots / np.sqrt(d))))
    unscaled, scaled = (
        Softmaxed(*(np.array(column) for column in zip(*runs[key], strict=True)))
        for key in ("unscaled", "scaled")
    )
    return SaturationStudy(
        d_k=d_k,
        n_tokens=n_tokens,
        n_queries=n_sequences * n_tokens,
        unscaled=unscaled,
        scaled=scaled,
    )


def _summarise(weights: np.ndarray) -> tuple[float, float, float]:
    """Medians of (largest weight, entropy, ‖J‖_F / √n) over every query row."""
    n = weights.shape[-1]
    jacobian_norm = np.linalg.norm(softmax_jacobian(weights), axis=(-2, -1)) / np.sqrt(
        n
    )
    return (
        float(np.median(weights.max(axis=-1))),
        float(np.median(entropy_bits(weights))),
        float(np.median(jacobian_norm)),
    )


def _widths(d_ks: tuple[int, ...]) -> np.ndarray:
    """``d_ks`` as an int array of positive head widths, or a ValueError."""
    if len(d_ks) == 0:
        raise ValueError("d_ks: expected at least one head width, got none")
    return np.array([positive_int("d_ks", d) for d in d_ks])


SEEDS = (0, 1, 2, 3)  # the seeds over which the gradient ratio's spread is reported
# The head width of the base Transformer (and of BERT-base): d_k = 64.
TYPICAL_D_K = published.model("Transformer base").d_k
# With W_K = W_Q a token need not score itself highest: two queries along one axis.
SELF_COUNTER_Q = np.array([[1.0, 0.0], [3.0, 0.0]])
SHUFFLE = (2, 0, 1)  # "the cat sat" read as "sat the cat"


@dataclass(frozen=True)
class GradientSpread:
    """How many times more gradient the scale lets through at ``d_k``, per seed."""

    d_k: int
    seeds: tuple[int, ...]
    drops: tuple[int, ...]  # scaled gain / unscaled gain, one per seed

    @property
    def low(self) -> int:
        """The smallest ratio over the seeds."""
        return min(self.drops)

    @property
    def high(self) -> int:
        """The largest ratio over the seeds."""
        return max(self.drops)

    @property
    def order(self) -> int:
        """The power of ten nearest the ratios' geometric mean."""
        return round(float(np.mean(np.log10(self.drops))))

    @property
    def magnitude(self) -> int:
        """The ratios' order of magnitude as a number: 10 ** ``order``."""
        return 10**self.order

    @property
    def same_order(self) -> bool:
        """Whether every seed's ratio rounds to the same power of ten."""
        return all(round(float(np.log10(d))) == self.order for d in self.drops)


def gradient_spread(
    d_k: int = D_KS[-1], seeds: tuple[int, ...] = SEEDS
) -> GradientSpread:
    """The saturation study's gradient ratio at ``d_k``, once per seed in ``seeds``.

    ```python
    from mha.pages.attention import gradient_spread

    spread = gradient_spread(d_k=256, seeds=(0, 1))
    assert spread.low <= spread.high and len(spread.drops) == 2
    ```
    """
    if len(seeds) == 0:
        raise ValueError("seeds: expected at least one seed, got none")
    drops = tuple(
        saturation_study(d_ks=(d_k,), rng=np.random.default_rng(s)).gradient_drop(d_k)
        for s in seeds
    )
    return GradientSpread(d_k=int(d_k), seeds=tuple(seeds), drops=drops)


@dataclass(frozen=True)
class Shuffled:
    """The tiny example with its tokens reordered, against the original order."""

    order: tuple[int, ...]  # original positions, in the new order
    tokens: tuple[str, ...]  # the tokens in the new order
    output: np.ndarray  # (3, d_k) outputs of the reordered sentence
    weights: np.ndarray  # (3, 3) its weights

    @property
    def outputs_follow(self) -> bool:
        """Whether each token's output is the one it had before, moved with it."""
        return bool(np.allclose(self.output, cat_sat.solve().output[list(self.order)]))

    @property
    def weights_follow(self) -> bool:
        """Whether the weight matrix is the old one, rows and columns reordered."""
        old = cat_sat.solve().weights[np.ix_(self.order, self.order)]
        return bool(np.allclose(self.weights, old))


def shuffled(order: tuple[int, ...] = SHUFFLE) -> Shuffled:
    """Attend over the tiny example's tokens in another ``order`` (a permutation).

    ```python
    from mha.pages.attention import shuffled

    s = shuffled((2, 0, 1))
    assert s.tokens == ("sat", "the", "cat") and s.outputs_follow and s.weights_follow
    ```
    """
    if sorted(order) != list(range(len(cat_sat.TOKENS))):
        raise ValueError(f"order: expected a permutation of 0, 1, 2, got {order!r}")
    x = cat_sat.X[list(order)]
    output, weights = scaled_dot_product_attention(
        x @ cat_sat.W_Q, x @ cat_sat.W_K, x @ cat_sat.W_V
    )
    return Shuffled(
        order=tuple(order),
        tokens=tuple(cat_sat.TOKENS[i] for i in order),
        output=output,
        weights=weights,
    )


@dataclass(frozen=True)
class VarianceRow:
    """One row of the page's variance table."""

    d_k: int
    theory_unscaled: float
    unscaled: int  # rounded
    ratio_unscaled: float
    theory_scaled: float
    scaled: float


@dataclass(frozen=True)
class SaturationRow:
    """One row of the page's saturation table."""

    d_k: int
    max_unscaled: float
    max_scaled: float
    entropy_unscaled: float
    entropy_scaled: float


@dataclass(frozen=True)
class Page:
    """Every value the attention page prints."""

    tiny: cat_sat.Attended
    shared: cat_sat.Attended  # W_K = W_Q
    causal: cat_sat.Attended
    counter_dots: np.ndarray  # SELF_COUNTER_Q @ SELF_COUNTER_Q.T
    shuffle: Shuffled
    variance: VarianceStudy
    saturation: SaturationStudy
    typical: int  # position of TYPICAL_D_K in the studies
    spread: GradientSpread
    variance_rows: tuple[VarianceRow, ...]
    saturation_rows: tuple[SaturationRow, ...]

    @property
    def standard_error(self) -> float:
        """Largest relative standard error of a measured variance over the d_k studied.

        q·k is a sum of d_k products of two normals, of kurtosis 3 + 6/d_k; a variance
        measured from N samples has relative standard error √((kurtosis - 1) / N).
        """
        kurtosis = 3 + 6 / self.variance.d_k
        return float(np.sqrt((kurtosis - 1) / self.variance.n_pairs).max())


def page() -> Page:
    """The page's values: the tiny example, the two studies, their table rows.

    ```python
    from mha.pages.attention import page

    p = page()
    assert p.variance.d_k[p.typical] == 64 and len(p.variance_rows) == len(p.variance.d_k)
    ```

    Kept in the content-hash cache: the page, its claims and its tests ask for it
    and it is computed once.
    """
    return cached(_page)


def _page() -> Page:
    v, s = variance_study(), saturation_study()
    return Page(
        tiny=cat_sat.solve(),
        shared=cat_sat.solve(w_k=cat_sat.W_Q),
        causal=cat_sat.solve_causal(),
        counter_dots=SELF_COUNTER_Q @ SELF_COUNTER_Q.T,
        shuffle=shuffled(),
        variance=v,
        saturation=s,
        typical=s.index(TYPICAL_D_K),
        spread=gradient_spread(),
        variance_rows=tuple(
            VarianceRow(
                int(v.d_k[i]),
                float(v.theory_unscaled[i]),
                round(float(v.unscaled[i])),
                float(v.ratio_unscaled[i]),
                float(v.theory_scaled[i]),
                float(v.scaled[i]),
            )
            for i in range(len(v.d_k))
        ),
        saturation_rows=tuple(
            SaturationRow(
                int(s.d_k[i]),
                float(s.unscaled.max_weight[i]),
                float(s.scaled.max_weight[i]),
                float(s.unscaled.entropy[i]),
                float(s.scaled.entropy[i]),
            )
            for i in range(len(s.d_k))
        ),
    )


def claims(p: Page | None = None) -> dict[str, Claim]:
    """The page's sentences that compare computed values, checked against ``p``.

    ```python
    from mha.pages.attention import claims

    assert all(c.holds for c in claims().values())
    ```
    """
    p = page() if p is None else p
    run, shared, causal, s = p.tiny, p.shared, p.causal, p.saturation
    sat, cat = cat_sat.TOKENS.index("sat"), cat_sat.TOKENS.index("cat")
    t = p.typical
    scaled_gain = s.scaled.gradient
    return {
        "asymmetric": Claim(
            "the verb wants its subject, the subject does not want the verb",
            run.dots[sat, cat] > run.dots[cat, sat],
            f"sat->cat {run.dots[sat, cat]}, cat->sat {run.dots[cat, sat]}",
        ),
        "shared_self": Claim(
            'Here "cat" and "sat" do score highest against themselves',
            shared.dots[cat].argmax() == cat and shared.dots[sat].argmax() == sat,
            f"shared scores {shared.dots.tolist()}",
        ),
        "not_a_rule": Claim(
            "a token's score against itself is at least its score against any query no "
            "longer than its own, but a longer query can beat it",
            p.counter_dots[0, 1] > p.counter_dots[0, 0],
            f"counterexample scores {p.counter_dots.tolist()}",
        ),
        "sat_animal": Claim(
            "is now mostly *animal*",
            run.output[sat, 0] > 0.5 and run.output[sat, 0] > run.output[sat, 1],
            f"output of sat {run.output[sat].tolist()}",
        ),
        "uniform": Claim(
            "every score is equal, and its weights are uniform",
            bool(np.allclose(run.scores[0], run.scores[0, 0]))
            and bool(np.allclose(run.weights[0], 1 / len(run.weights[0]))),
            f"scores of the {run.scores[0].tolist()}",
        ),
        "within_noise": Claim(
            "within three standard errors of sampling noise",
            p.variance.worst_relative_error < 3 * p.standard_error,
            f"worst {p.variance.worst_relative_error:.4f}, SE {p.standard_error:.4f}",
        ),
        "unscaled_saturates": Claim(
            "the unscaled softmax gives ever more of the weight to its top key as $d_k$ "
            "grows, and keeps ever less entropy",
            bool(np.all(np.diff(s.unscaled.max_weight) > 0))
            and bool(np.all(np.diff(s.unscaled.entropy) < 0)),
            f"max {np.round(s.unscaled.max_weight, 3).tolist()}",
        ),
        "scaled_flat": Claim(
            "and stays there for every $d_k$",
            np.ptp(s.scaled.max_weight) < 0.05 and np.ptp(s.scaled.entropy) < 0.2,
            f"scaled max {np.round(s.scaled.max_weight, 3).tolist()}",
        ),
        "gain_flat": Claim(
            "With the scale it stays flat",
            np.ptp(scaled_gain) < 0.1 * scaled_gain.mean(),
            f"scaled gain {np.round(scaled_gain, 4).tolist()}",
        ),
        "gain_falls": Claim(
            "Without it, it falls with every doubling of $d_k$ from "
            f"$d_k = {TYPICAL_D_K}$ on",
            bool(np.all(np.diff(s.unscaled.gradient[t:]) < 0)),
            f"unscaled gain {s.unscaled.gradient[t:].tolist()}",
        ),
        "same_order": Claim(
            "the same order of magnitude for every seed",
            p.spread.same_order,
            f"ratios {p.spread.drops}",
        ),
        "causal_first": Claim(
            '"The" now sees only itself and gives it all its weight',
            causal.weights[0].tolist() == [1.0, 0.0, 0.0],
            f"{causal.weights[0].tolist()}",
        ),
        "causal_last": Claim(
            '"Sat" comes last, sees every token and keeps the weights it had without '
            "the mask",
            bool(np.allclose(causal.weights[sat], run.weights[sat])),
            f"{causal.weights[sat].tolist()} vs {run.weights[sat].tolist()}",
        ),
        "shuffle": Claim(
            "each token gets exactly the output it had before, and the weights move "
            "with their tokens",
            p.shuffle.outputs_follow and p.shuffle.weights_follow,
            f"order {p.shuffle.order}",
        ),
    }


def alt(p: Page) -> dict[str, str]:
    """The figures' alt texts; the results they state are checked as claims.

    ```python
    from mha.pages.attention import alt, page

    assert "flat line" in alt(page())["variance_vs_dk"]
    ```
    """
    c = claims(p)
    for name in ("within_noise", "unscaled_saturates", "scaled_flat", "gain_flat"):
        check(c[name], f"mha.pages.attention.alt ({name})")
    return {
        "variance_vs_dk": (
            "Score variance against d_k on log-log axes. The measured variance of q·k "
            "sits on the rising line d_k σ⁴, growing in proportion to d_k; the "
            "measured variance of q·k divided by √d_k sits on the flat line σ⁴ for "
            "every d_k."
        ),
        "saturation_vs_dk": (
            "Three panels against d_k, unscaled q·k in orange and scaled q·k/√d_k in "
            "blue. Largest weight: unscaled climbs towards one, scaled stays low and "
            "flat. Entropy: unscaled falls towards zero, scaled stays flat just under "
            "the uniform maximum. Typical gradient gain on a log scale: scaled stays "
            "flat, unscaled collapses as d_k grows."
        ),
    }


CAPTIONS = {
    "variance_vs_dk": (
        "Measured score variances (markers) on their theory (lines). Look at the two "
        "slopes: without the scale the variance grows with d_k, with it the line is "
        "flat."
    ),
    "saturation_vs_dk": (
        "What the softmax makes of unscaled and scaled scores as d_k grows. Look at "
        "the orange curves: the top weight goes to one, the entropy and the gradient "
        "to zero."
    ),
}
