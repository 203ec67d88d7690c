"""Why attention divides the scores by √d_k: a seeded Monte Carlo study.

Page: ``docs/attention.md``.

Queries and keys have independent components with mean 0 and variance σ². Then
q·k is a sum of d_k independent terms of variance σ⁴, so Var(q·k) = d_k σ⁴, and
Var(q·k / √d_k) = σ⁴ whatever d_k is. Two studies check it and show what it is for:

- ``variance_study``: empirical vs theoretical variance of the unscaled and scaled
  scores, d_k from 4 to 1024.
- ``saturation_study``: what the softmax makes of those scores, with and without
  the scale: its largest weight, its entropy and the size of its Jacobian (the
  factor every gradient flowing back into the scores is multiplied by).

Both draw their vectors once at the largest d_k and read smaller d_k off the first
columns (a d_k-dimensional vector is the prefix of a wider one), so the whole study
costs one draw and runs in well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.attention import softmax
from mha.support.validate import generator, positive_int

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
    gradient: np.ndarray  # (m,) Frobenius norm of its softmax Jacobian


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
    """Medians of (largest weight, entropy, ‖Jacobian‖_F) over every query row."""
    jacobian_norm = np.linalg.norm(softmax_jacobian(weights), axis=(-2, -1))
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
