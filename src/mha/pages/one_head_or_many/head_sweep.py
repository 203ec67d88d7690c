"""The head-count sweep: the toy model trained for h = 1, 2, 4, ..., d_model heads.

Every h has the same parameters, budget and tuning: the learning rate with the lowest
validation loss (selection seed), then one model per reporting seed at that rate,
scored on a separate test set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.experiments.toy_model import (
    ATTENTION_WEIGHTS,
    Params,
    evaluate,
    forward,
    train,
)
from mha.experiments.toy_task import D_MODEL, Batch, generate
from mha.support.cache import cached
from mha.support.validate import head_dim, lookup

_ROLE_THRESHOLD = 0.5  # a head "serves" a relation if this much weight goes there
_CURVE_WINDOW = (
    10  # training losses are smoothed by a running mean over this many steps
)
_CURVE_LEVEL = 0.01  # "learned": the smoothed training loss is below this (nats)


@dataclass(frozen=True)
class SweepConfig:
    """Everything that decides the sweep's outcome (part of the cache key)."""

    heads: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    learning_rates: tuple[float, ...] = (0.003, 0.01, 0.03, 0.1)
    selection_seed: int = 0
    seeds: tuple[int, ...] = (1, 2, 3)
    steps: int = 250
    batch_size: int = 32
    validation_size: int = 512
    test_size: int = 1024
    validation_seed: int = 101
    test_seed: int = 202

    def validation_set(self) -> Batch:
        """The sequences that choose the learning rate."""
        return generate(
            self.validation_size, np.random.default_rng([self.validation_seed, 2])
        )

    def test_set(self) -> Batch:
        """The sequences that the reported numbers come from."""
        return generate(self.test_size, np.random.default_rng([self.test_seed, 2]))

    def example(self) -> Batch:
        """The first test sequence: the input the page explains and draws."""
        test = self.test_set()
        return Batch(test.names[:1], test.ref_positions[:1], test.words[:1])

    @property
    def sequences_seen(self) -> int:
        """Training sequences per model: ``steps x batch_size``, all fresh."""
        return self.steps * self.batch_size


@dataclass(frozen=True)
class _HeadResult:
    """The sweep's outcome for one number of heads (``S`` reporting seeds)."""

    n_heads: int
    d_k: int
    attention_params: int  # W_Q, W_K, W_V, W_O, counted from the trained arrays
    readout_params: int  # W_out
    validation_loss: np.ndarray  # (len(learning_rates),) selection run per rate
    learning_rate: float  # the chosen rate
    test_loss: np.ndarray  # (S,) mean cross-entropy in nats
    test_accuracy: np.ndarray  # (S, 2): [previous word, referenced word]
    train_losses: np.ndarray  # (steps, S) loss on each step's fresh batch
    attention_mass: np.ndarray  # (S, h, 2) mean weight on [previous, referenced] token
    params: Params  # (S, rows, cols) the trained weights

    @property
    def param_count(self) -> int:
        """Parameters of one model: the attention layer and the readout."""
        return self.attention_params + self.readout_params

    @property
    def accuracy(self) -> np.ndarray:
        """``(S,)``: the fraction of all predicted words that are right."""
        return self.test_accuracy.mean(axis=-1)

    @property
    def specialist_mass(self) -> np.ndarray:
        """``(S, 2)``: the most weight any one head puts on [previous, referenced]."""
        return self.attention_mass.max(axis=1)

    @property
    def loss_range(self) -> tuple[float, float, float]:
        """Mean, lowest and highest test loss over the seeds (nats)."""
        return _spread(self.test_loss)

    @property
    def accuracy_range(self) -> tuple[float, float, float]:
        """Mean, lowest and highest share of words right over the seeds."""
        return _spread(self.accuracy)

    @property
    def per_word(self) -> tuple[float, float]:
        """Mean share right of the previous word and of the referenced word."""
        previous, referenced = self.test_accuracy.mean(axis=0)
        return float(previous), float(referenced)

    @property
    def mean_roles(self) -> tuple[float, float, float]:
        """``roles()``, mean over the seeds."""
        return tuple(float(v) for v in self.roles().mean(axis=0))

    @property
    def first_step(self) -> int | str:
        """``steps_to()`` the learned level, or "never"."""
        step = self.steps_to()
        return "never" if step is None else step

    def curve(self, window: int = _CURVE_WINDOW) -> np.ndarray:
        """Training loss, mean over the seeds, as a running mean over ``window`` steps."""
        kernel = np.ones(window) / window
        return np.convolve(self.train_losses.mean(axis=1), kernel, mode="valid")

    def steps_to(self, level: float = _CURVE_LEVEL) -> int | None:
        """The first step (the window's last) with ``curve()`` below ``level``, or None."""
        below = np.flatnonzero(self.curve() < level)
        return int(below[0]) + _CURVE_WINDOW if below.size else None

    def roles(self, threshold: float = _ROLE_THRESHOLD) -> np.ndarray:
        """``(S, 3)`` heads with ``threshold`` of their weight on the previous token,
        on the referenced token, on neither."""
        previous = (self.attention_mass[..., 0] >= threshold).sum(axis=-1)
        referenced = (self.attention_mass[..., 1] >= threshold).sum(axis=-1)
        return np.stack(
            [previous, referenced, self.n_heads - previous - referenced], -1
        )


def _spread(values: np.ndarray) -> tuple[float, float, float]:
    return float(values.mean()), float(values.min()), float(values.max())


@dataclass(frozen=True)
class _Sweep:
    """The whole sweep: its configuration and one result per number of heads."""

    config: SweepConfig
    results: tuple[_HeadResult, ...]

    def result(self, n_heads: int) -> _HeadResult:
        """The result for ``n_heads`` heads."""
        return lookup("n_heads", n_heads, {r.n_heads: r for r in self.results})


def _attention_mass(params: Params, batch: Batch, n_heads: int) -> np.ndarray:
    """``(M, h, 2)``: each head's mean weight on the previous and referenced token."""
    weights = forward(params, batch.inputs(np.float32), n_heads).weights
    rows = np.arange(weights.shape[-2])  # (M, B, h, n, n) -> weight of query i on ...
    previous = weights[..., rows, batch.prev_positions]  # (M, B, h, n)
    referenced = np.take_along_axis(
        weights, batch.ref_positions[None, :, None, :, None], axis=-1
    )[..., 0]
    return np.stack([previous, referenced], axis=-1).mean(axis=(1, 3))


def _run_heads(config: SweepConfig, n_heads: int) -> _HeadResult:
    """Select the learning rate for ``n_heads``, then train and score the seeds."""
    d_k = head_dim(D_MODEL, n_heads)
    rates = config.learning_rates
    budget = config.steps, config.batch_size
    selection, _ = train(n_heads, [config.selection_seed] * len(rates), rates, *budget)
    validation_loss = evaluate(selection, config.validation_set(), n_heads).loss
    rate = rates[int(np.argmin(validation_loss))]
    params, losses = train(n_heads, config.seeds, [rate] * len(config.seeds), *budget)
    test = config.test_set()
    scores = evaluate(params, test, n_heads)
    return _HeadResult(
        n_heads=n_heads,
        d_k=d_k,
        attention_params=sum(params[k][0].size for k in ATTENTION_WEIGHTS),
        readout_params=params["w_out"][0].size,
        validation_loss=validation_loss,
        learning_rate=rate,
        test_loss=scores.loss,
        test_accuracy=scores.accuracy,
        train_losses=losses,
        attention_mass=_attention_mass(params, test, n_heads),
        params=params,
    )


def _run(config: SweepConfig) -> _Sweep:
    """The sweep, computed (no cache)."""
    return _Sweep(config, tuple(_run_heads(config, h) for h in config.heads))


def sweep(config: SweepConfig | None = None) -> _Sweep:
    """The sweep for ``config`` (the site's if None), from the cache if fresh."""
    return cached(_run, SweepConfig() if config is None else config)
