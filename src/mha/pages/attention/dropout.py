"""Dropout on the attention weights: what it drops, the 1/(1-p) rescaling, train vs eval.

In training each weight is zeroed with probability ``p`` and the rest divided by
``1 - p``, so every weight and output keeps its expectation; the study draws it many
times on the tiny example's weights, with MiniLM's training ``p`` (its ``config.json``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from mha.pages.attention.cat_sat import _solve
from mha.pretrained.minilm import model_dir
from mha.support.validate import generator

_N_DRAWS = 10_000  # dropout masks drawn per seed
_SEEDS = (0, 1, 2, 3, 4)


def _minilm_p() -> float:
    """The attention dropout MiniLM was trained with (``attention_probs_dropout_prob``)."""
    config = json.loads((model_dir() / "config.json").read_text())
    return float(config["attention_probs_dropout_prob"])


def dropout(
    weights: np.ndarray,
    p: float,
    rng: np.random.Generator | None = None,
    training: bool = True,
) -> np.ndarray:
    """Zero each weight with probability ``p`` and divide the rest by ``1 - p``;
    in evaluation (``training=False``) return the weights unchanged.
    """
    if not 0 <= p < 1:
        raise ValueError(f"p: expected a probability in [0, 1), got {p!r}")
    if not training:
        return weights
    keep = generator(rng).random(weights.shape) >= p
    return np.where(keep, weights / weights.dtype.type(1 - p), 0)


@dataclass(frozen=True)
class _DropoutStudy:
    """The tiny example's weights under dropout, averaged over many draws."""

    p: float
    weights: np.ndarray  # (3, 3) the evaluation weights
    one_draw: np.ndarray  # (3, 3) one training step's weights, the first to drop one
    n_draws: int
    seeds: tuple[int, ...]
    mean: np.ndarray  # (seeds, 3, 3) mean of the dropped weights, per seed
    mean_unscaled: np.ndarray  # (3, 3) the same without the 1/(1-p), first seed
    worst: float  # largest |mean - weight| over every weight and seed
    worst_output: float  # largest |mean output - evaluation output| over every seed

    @property
    def row_sums(self) -> np.ndarray:  # what each row of the training step sums to
        return self.one_draw.sum(axis=-1)

    @property
    def largest_z(self) -> float:
        """Largest |mean - weight| in standard errors of the mean, w √(p/(1-p)/N)."""
        error = self.weights * np.sqrt(self.p / (1 - self.p) / self.n_draws)
        return float((np.abs(self.mean - self.weights) / error).max())


def study(
    p: float | None = None, n_draws: int = _N_DRAWS, seeds: tuple[int, ...] = _SEEDS
) -> _DropoutStudy:
    """Dropout on the tiny example's weights, ``n_draws`` masks for each seed."""
    p = _minilm_p() if p is None else p
    run = _solve()
    w, v = run.weights, run.v
    draws = [
        dropout(np.broadcast_to(w, (n_draws, *w.shape)), p, np.random.default_rng(s))
        for s in seeds
    ]
    mean = np.stack([d.mean(axis=0) for d in draws])
    mean_output = np.stack([(d @ v).mean(axis=0) for d in draws])
    return _DropoutStudy(
        p=p,
        weights=w,
        one_draw=draws[0][np.argmax((draws[0] == 0).any(axis=(1, 2)))],
        n_draws=n_draws,
        seeds=tuple(seeds),
        mean=mean,
        mean_unscaled=(draws[0] * (1 - p)).mean(axis=0),
        worst=float(np.abs(mean - w).max()),
        worst_output=float(np.abs(mean_output - run.output).max()),
    )
