"""One head or many? Train the toy model for h = 1, 2, 4, ..., d_model at fixed d_model.

Page: ``docs/one-head-or-many.md``.

Every h gets the same parameters (d_model is fixed, so W_Q, W_K, W_V, W_O stay
``d_model x d_model``), the same training budget and the same procedure for choosing
its learning rate:

1. **Selection.** Train one model per learning rate of ``learning_rates`` from the
   selection seed, and keep the rate with the lowest loss on the validation set.
2. **Report.** Train one model per reporting seed with that rate, and score it on the
   test set. Selection and report seeds differ, and so do the validation and test
   sets, so the reported numbers played no part in choosing the rate.

``sweep()`` returns the result from the content-hash cache (:mod:`mha.support.cache`) when the
code and the configuration have not changed, and computes it otherwise.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np

from mha.data import vaswani2017
from mha.experiments.toy_model import (
    ATTENTION_WEIGHTS,
    Params,
    evaluate,
    forward,
    train,
)
from mha.experiments.toy_task import D_MODEL, N_TARGETS, Batch, generate
from mha.support.cache import cached
from mha.support.claims import Claim, check
from mha.support.validate import head_dim

ROLE_THRESHOLD = 0.5  # a head "serves" a relation if this much weight goes there
CURVE_WINDOW = 10  # training losses are smoothed by a running mean over this many steps
CURVE_LEVEL = 0.01  # "learned": the smoothed training loss is below this (nats)
HEATMAP_HEADS = (1, 2, 4, 8)  # the head counts whose weights the heatmaps show


@dataclass(frozen=True)
class SweepConfig:
    """Everything that decides the sweep's outcome (it is part of the cache key)."""

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
class HeadResult:
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

    def curve(self, window: int = CURVE_WINDOW) -> np.ndarray:
        """Training loss, mean over the seeds, as a running mean over ``window`` steps.

        Entry ``i`` is the mean over steps ``i .. i + window - 1``.
        """
        kernel = np.ones(window) / window
        return np.convolve(self.train_losses.mean(axis=1), kernel, mode="valid")

    def steps_to(self, level: float = CURVE_LEVEL) -> int | None:
        """The first step at which :meth:`curve` is below ``level``; None if never.

        The step counted is the last one of the window.
        """
        below = np.flatnonzero(self.curve() < level)
        return int(below[0]) + CURVE_WINDOW if below.size else None

    def roles(self, threshold: float = ROLE_THRESHOLD) -> np.ndarray:
        """``(S, 3)`` head counts: mostly on previous, mostly on referenced, neither.

        "Mostly" means at least ``threshold`` of the head's weight, averaged over the
        test queries, on that one token.
        """
        previous = (self.attention_mass[..., 0] >= threshold).sum(axis=-1)
        referenced = (self.attention_mass[..., 1] >= threshold).sum(axis=-1)
        return np.stack(
            [previous, referenced, self.n_heads - previous - referenced], -1
        )


@dataclass(frozen=True)
class Sweep:
    """The whole sweep: its configuration and one result per number of heads."""

    config: SweepConfig
    results: tuple[HeadResult, ...]

    def result(self, n_heads: int) -> HeadResult:
        """The result for ``n_heads`` heads."""
        for r in self.results:
            if r.n_heads == n_heads:
                return r
        raise ValueError(
            f"n_heads: expected one of {[r.n_heads for r in self.results]}, got {n_heads}"
        )


def attention_mass(params: Params, batch: Batch, n_heads: int) -> np.ndarray:
    """``(M, h, 2)``: each head's mean weight on the previous and the referenced token.

    Averaged over every query of ``batch``. A head that has specialised on one
    relation puts nearly all its weight on one of the two.

    ```python
    from mha.pages.one_head_or_many import attention_mass
    from mha.experiments.toy_model import init_params
    from mha.experiments.toy_task import generate

    mass = attention_mass(init_params(4, [0]), generate(20), 4)
    assert mass.shape == (1, 4, 2) and (mass < 0.4).all()  # untrained: spread out
    ```
    """
    weights = forward(params, batch.inputs(np.float32), n_heads).weights
    rows = np.arange(weights.shape[-2])  # (M, B, h, n, n) -> weight of query i on ...
    previous = weights[..., rows, batch.prev_positions]  # (M, B, h, n)
    referenced = np.take_along_axis(
        weights, batch.ref_positions[None, :, None, :, None], axis=-1
    )[..., 0]
    return np.stack([previous, referenced], axis=-1).mean(axis=(1, 3))


def run_heads(config: SweepConfig, n_heads: int) -> HeadResult:
    """Select the learning rate for ``n_heads``, then train and score the seeds.

    ```python
    from mha.pages.one_head_or_many import SweepConfig, run_heads

    tiny = SweepConfig(learning_rates=(0.01, 0.03), seeds=(1, 2), steps=30,
                       validation_size=16, test_size=16)
    result = run_heads(tiny, 2)
    assert result.learning_rate in tiny.learning_rates and result.test_loss.shape == (2,)
    ```
    """
    d_k = head_dim(D_MODEL, n_heads)
    rates = config.learning_rates
    selection = train(
        n_heads,
        [config.selection_seed] * len(rates),
        rates,
        config.steps,
        config.batch_size,
    )
    validation_loss = evaluate(selection.params, config.validation_set(), n_heads).loss
    rate = rates[int(np.argmin(validation_loss))]
    report = train(
        n_heads,
        config.seeds,
        [rate] * len(config.seeds),
        config.steps,
        config.batch_size,
    )
    test = config.test_set()
    scores = evaluate(report.params, test, n_heads)
    return HeadResult(
        n_heads=n_heads,
        d_k=d_k,
        attention_params=sum(report.params[k][0].size for k in ATTENTION_WEIGHTS),
        readout_params=report.params["w_out"][0].size,
        validation_loss=validation_loss,
        learning_rate=rate,
        test_loss=scores.loss,
        test_accuracy=scores.accuracy,
        train_losses=report.losses,
        attention_mass=attention_mass(report.params, test, n_heads),
        params=report.params,
    )


def run(config: SweepConfig) -> Sweep:
    """The sweep, computed (no cache): one :func:`run_heads` per h.

    ```python
    from mha.pages.one_head_or_many import SweepConfig, run

    tiny = SweepConfig(heads=(1, 4), learning_rates=(0.03,), seeds=(1,), steps=5,
                       validation_size=8, test_size=8)
    result = run(tiny)
    assert [r.d_k for r in result.results] == [32, 8]
    ```
    """
    return Sweep(config, tuple(run_heads(config, h) for h in config.heads))


def sweep(config: SweepConfig | None = None) -> Sweep:
    """The sweep for ``config`` (the site's default if None), from the cache if fresh.

    ```python
    from mha.pages.one_head_or_many import SweepConfig, sweep

    tiny = SweepConfig(heads=(1, 2), learning_rates=(0.03,), seeds=(1,), steps=10,
                       validation_size=8, test_size=8)
    result = sweep(tiny)
    assert [r.n_heads for r in result.results] == [1, 2]
    assert result.result(2).param_count == result.result(1).param_count
    ```
    """
    if config is None:
        return _site_sweep()
    return cached(run, config)


@functools.cache
def _site_sweep() -> Sweep:
    """The site's sweep, read from the cache once per process (the page asks often)."""
    return cached(run, SweepConfig())


# What the page prints, and the sentences that compare it -----------------------------


@dataclass(frozen=True)
class Row:
    """One head count's line of the page's tables (means and ranges over the seeds)."""

    n_heads: int
    d_k: int
    learning_rate: float
    attention_params: int
    readout_params: int
    param_count: int
    loss: tuple[float, float, float]  # mean, lowest, highest test loss (nats)
    accuracy: tuple[float, float, float]  # mean, lowest, highest share of words right
    previous: float  # mean share of previous words right
    referenced: float  # mean share of referenced words right
    roles: tuple[float, float, float]  # heads on previous, on referenced, neither
    first_step: int | str  # first step below CURVE_LEVEL, or "never"


def _spread(values: np.ndarray) -> tuple[float, float, float]:
    return float(values.mean()), float(values.min()), float(values.max())


def rows(result: Sweep | None = None) -> tuple[Row, ...]:
    """The page's table lines, one per head count.

    ```python
    from mha.pages.one_head_or_many import SweepConfig, rows, sweep

    tiny = sweep(SweepConfig(heads=(1, 2), learning_rates=(0.03,), seeds=(1,),
                             steps=10, validation_size=8, test_size=8))
    assert [r.n_heads for r in rows(tiny)] == [1, 2]
    assert rows(tiny)[0].loss[1] <= rows(tiny)[0].loss[0] <= rows(tiny)[0].loss[2]
    ```
    """
    result = sweep() if result is None else result
    lines = []
    for r in result.results:
        per_word = r.test_accuracy.mean(axis=0)
        step = r.steps_to()
        lines.append(
            Row(
                n_heads=r.n_heads,
                d_k=r.d_k,
                learning_rate=r.learning_rate,
                attention_params=r.attention_params,
                readout_params=r.readout_params,
                param_count=r.param_count,
                loss=_spread(r.test_loss),
                accuracy=_spread(r.accuracy),
                previous=float(per_word[0]),
                referenced=float(per_word[1]),
                roles=tuple(float(v) for v in r.roles().mean(axis=0)),
                first_step="never" if step is None else step,
            )
        )
    return tuple(lines)


@dataclass(frozen=True)
class Reading:
    """The values the page's reading of the results quotes."""

    one: Row
    two: Row
    widest: Row
    second_widest: Row
    one_split: tuple[float, float]  # the one head's weight on previous, referenced
    one_kept: tuple[float, float]  # lowest, highest share right of the word it keeps
    one_missed: tuple[float, float]  # lowest, highest share right of the other word
    two_split: tuple[float, float]  # two heads: the most weight on previous, referenced
    widest_mass: float  # the most weight any d_k = 1 head puts on an answer
    n_seeds: int
    overlapping: tuple[tuple[int, int], ...]  # neighbouring h whose loss ranges overlap
    later_from: int  # from this h on, each doubling learns later (or never)
    paper_best: tuple[int, ...]  # the paper's h with the best BLEU


def reading(result: Sweep | None = None) -> Reading:
    """What the page's "Reading the results" section quotes, from the sweep.

    ```python
    from mha.pages.one_head_or_many import reading

    r = reading()
    assert r.one.n_heads == 1 and r.two.n_heads == 2 and r.n_seeds == 3
    ```
    """
    result = sweep() if result is None else result
    lines = rows(result)
    by_h = {r.n_heads: r for r in result.results}
    one, widest = by_h[1], result.results[-1]
    kept, missed = one.test_accuracy.max(axis=1), one.test_accuracy.min(axis=1)
    pairs = itertools.pairwise(lines[1:])
    return Reading(
        one=lines[0],
        two=next(line for line in lines if line.n_heads == N_TARGETS),
        widest=lines[-1],
        second_widest=lines[-2],
        one_split=tuple(float(v) for v in one.specialist_mass.mean(axis=0)),
        one_kept=(float(kept.min()), float(kept.max())),
        one_missed=(float(missed.min()), float(missed.max())),
        two_split=tuple(float(v) for v in by_h[N_TARGETS].specialist_mass.mean(axis=0)),
        widest_mass=float(widest.attention_mass.max()),
        n_seeds=len(result.config.seeds),
        overlapping=tuple(
            (a.n_heads, b.n_heads) for a, b in pairs if a.loss[2] >= b.loss[1]
        ),
        later_from=_later_from(result),
        paper_best=tuple(
            row.n_heads
            for row in vaswani2017.ROW_A
            if row.bleu == vaswani2017.best_bleu()
        ),
    )


def _later_from(result: Sweep) -> int:
    """The least h from which every doubling first crosses the line later (or never)."""
    never = float("inf")
    steps = [
        (r.n_heads, never if r.steps_to() is None else r.steps_to())
        for r in result.results
    ]
    start = len(steps) - 1
    while start > 0 and steps[start - 1][1] < steps[start][1]:
        start -= 1
    return steps[start][0]


SOLVED = 0.99  # "solves the task": at least this share of words right on every seed


def claims(result: Sweep | None = None) -> dict[str, Claim]:
    """The page's sentences that compare the sweep's values, checked against them.

    ```python
    from mha.pages.one_head_or_many import claims

    assert all(c.holds for c in claims().values())
    ```
    """
    result = sweep() if result is None else result
    by_h = {r.n_heads: r for r in result.results}
    lines = rows(result)
    r = reading(result)
    one = by_h[1]
    middle = [x for x in result.results if 1 < x.n_heads < r.widest.n_heads]
    widest = result.results[-1]
    means = [line.loss[0] for line in lines[1:]]
    steps = [by_h[h].steps_to() for h in sorted(by_h) if h >= r.later_from]
    later = all(
        a is not None and (b is None or a < b) for a, b in itertools.pairwise(steps)
    )
    best_loss = min(lines, key=lambda line: line.loss[0]).n_heads
    bleu = [row.bleu for row in vaswani2017.ROW_A]
    paper_best = r.paper_best
    overlap_text = " and ".join(f"h = {a} and {b}" for a, b in r.overlapping)
    return {
        "one_fails": Claim(
            "One head fails, as the task was built to make it.",
            all(one.accuracy.max() < x.accuracy.min() for x in result.results[1:])
            and one.test_loss.min() > max(x.test_loss.max() for x in middle),
            f"one head's accuracy {one.accuracy.round(3).tolist()}",
        ),
        "one_splits": Claim(
            "The single head does not pick one relation: it splits its weight",
            bool((one.specialist_mass > 0.25).all()),
            f"one head's weight on the answers {one.specialist_mass.round(3).tolist()}",
        ),
        "no_takeover": Claim(
            "no one relation took the single head over",
            bool(
                (one.specialist_mass > 0.25).all() and (one.specialist_mass < 0.5).all()
            ),
            f"one head's weight on the answers {one.specialist_mass.round(3).tolist()}",
        ),
        "seeds_differ": Claim(
            "which word it keeps differs from seed to seed",
            len(set(one.test_accuracy.argmax(axis=1).tolist())) > 1,
            f"per-seed accuracy {one.test_accuracy.round(3).tolist()}",
        ),
        "two_enough": Claim(
            "Two heads are enough, and they split the work.",
            by_h[N_TARGETS].accuracy.min() > SOLVED
            and bool((by_h[N_TARGETS].roles() == [1, 1, 0]).all()),
            f"h = {N_TARGETS}: accuracy {by_h[N_TARGETS].accuracy.round(4).tolist()}, roles "
            f"{by_h[N_TARGETS].roles().tolist()}",
        ),
        "extra_heads": Claim(
            "the model still solves the task",
            all(x.accuracy.min() > SOLVED for x in middle),
            f"accuracies {[round(float(x.accuracy.min()), 4) for x in middle]}",
        ),
        "narrow_worse": Claim(
            "worse than every $h$",
            all(widest.test_loss.min() > x.test_loss.max() for x in middle),
            f"losses {[line.loss for line in lines]}",
        ),
        "narrow_most_right": Claim(
            "Together, though, the blurry heads still get most words right.",
            widest.accuracy.min() > 0.5 and widest.attention_mass.max() < 0.5,
            f"accuracy {widest.accuracy.round(3).tolist()}",
        ),
        "paper_shape": Claim(
            "one head is worst",
            bleu[0] == min(bleu) and bleu[-1] < max(bleu),
            f"BLEU {bleu}",
        ),
        "gaps": Claim(
            "Their gap is small; ours is large",
            (max(bleu) - min(bleu)) / max(bleu) < 0.05
            and r.two.accuracy[0] - r.one.accuracy[0] > 0.2,
            f"BLEU {min(bleu)} to {max(bleu)}; accuracy {r.one.accuracy[0]:.3f} vs "
            f"{r.two.accuracy[0]:.3f}",
        ),
        "forgiving_by_accuracy": Claim(
            "by accuracy the head count was forgiving",
            all(x.accuracy.min() > SOLVED for x in middle),
            f"accuracies {[round(float(x.accuracy.min()), 4) for x in middle]}",
        ),
        "rises": Claim(
            "the mean test loss rises with every doubling",
            all(a < b for a, b in itertools.pairwise(means)),
            f"mean losses from h = 2: {means}",
        ),
        "later": Claim(
            "each doubling crosses the dotted line later",
            later and widest.steps_to() is None,
            f"first steps below the line from h = {r.later_from}: {steps}",
        ),
        "best_is_relations": Claim(
            "The best $h$ here is the number of relations the task has",
            best_loss == N_TARGETS,
            f"lowest mean loss at h = {best_loss}",
        ),
        "paper_best": Claim(
            "the values that did best in the paper",
            len(paper_best) > 0 and N_TARGETS not in paper_best,
            f"best BLEU at h = {paper_best}",
        ),
        "overlap": Claim(
            f"the loss ranges of {overlap_text} overlap"
            if overlap_text
            else "the loss ranges of neighbouring h overlap",
            bool(r.overlapping),
            f"overlapping neighbours {r.overlapping}",
        ),
    }


def alt() -> dict[str, str]:
    """Alt texts of the page's figures, by figure function.

    ```python
    from mha.pages.one_head_or_many import alt

    assert set(alt()) == {"sweep_results", "learning_curves", "head_heatmaps", "head_roles"}
    ```
    """
    heads = ", ".join(str(h) for h in HEATMAP_HEADS)
    return {
        "sweep_results": (
            "Four panels. Left, the toy: test loss on a log scale and test accuracy "
            "against the number of heads, each with the range over the seeds. Right, "
            "Vaswani et al.'s Table 3 row A: development perplexity and BLEU against "
            "the number of heads."
        ),
        "learning_curves": (
            "Training loss against step on a log scale, one line per number of heads, "
            "averaged over the seeds, with a dotted horizontal line at the level "
            "counted as learned."
        ),
        "head_heatmaps": (
            "Heatmaps of attention weights on the example sequence, one group of "
            f"panels per number of heads ({heads}), one panel per head (H0 first), "
            "with circles on each query's previous token and crosses on its "
            "referenced token."
        ),
        "head_roles": (
            "One scatter panel per number of heads: each point is a trained head, "
            "placed by its mean weight on the previous token (x) and on the "
            "referenced token (y)."
        ),
    }


def caption() -> dict[str, str]:
    """Captions of the page's figures: what to look at, by figure function.

    ```python
    from mha.pages.one_head_or_many import alt, caption

    assert set(caption()) == set(alt())
    ```
    """
    r = reading()
    held = claims()  # the captions' comparisons: refused if they no longer hold
    check(held["one_fails"], "one-head-or-many caption")
    check(held["later"], "one-head-or-many caption")
    check(held["no_takeover"], "one-head-or-many caption")
    check(held["two_enough"], "one-head-or-many caption")
    return {
        "sweep_results": (
            "Test loss and accuracy against the number of heads, beside Vaswani et "
            f"al.'s row (A). Look at h = {r.one.n_heads}: the toy's worst point by "
            "far, the paper's by a little."
        ),
        "learning_curves": (
            "Training loss by step. Look at where each line crosses the dotted line: "
            f"later and later from h = {r.later_from}, never for h = "
            f"{r.widest.n_heads}."
        ),
        "head_heatmaps": (
            "What each trained head attends to on the example sequence. Look for the "
            "circles (previous token) and crosses (referenced token): the single head "
            f"spreads over both; with h = {r.two.n_heads} each head covers one."
        ),
        "head_roles": (
            "Each trained head's mean weight on the two answers. Points near an axis "
            "serve one relation; the single head sits in between."
        ),
    }
