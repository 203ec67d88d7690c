"""One head or many? The toy for every h at fixed d_model: ``docs/one-head-or-many.md``."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from mha.data import vaswani2017
from mha.experiments import toy_task
from mha.experiments.toy_model import forward
from mha.experiments.toy_task import N_TARGETS, NAMES, WORDS
from mha.pages.one_head_or_many.head_sweep import (
    _CURVE_LEVEL,
    _CURVE_WINDOW,
    _ROLE_THRESHOLD,
    _Sweep,
    sweep,
)
from mha.support.page import Fact, Figure, Page

_HEATMAP_HEADS = (1, 2, 4, 8)  # the head counts whose weights the heatmaps show
_SOLVED = 0.99  # "solves the task": at least this share of words right on every seed
_TASK = ("N_POSITIONS", "NAMES", "WORDS", "N_NAMES", "N_WORDS", "D_MODEL")
_TASK += ("CHANCE_ACCURACY", "CHANCE_LOSS")  # the toy task's constants the page prints


@functools.cache
def page() -> Page:
    """The sweep (cached), its tables and reading, the facts and the figures."""
    s = sweep()
    one, two, widest = s.result(1), s.result(N_TARGETS), s.results[-1]
    kept, missed = one.test_accuracy.max(axis=1), one.test_accuracy.min(axis=1)
    return Page(
        config=s.config,
        tokens=toy_task.describe(s.config.example()),
        task={name: getattr(toy_task, name) for name in _TASK},
        paper={
            "rows": vaswani2017.ROW_A,
            "citation": vaswani2017.CITATION,
            "url": vaswani2017.URL,
            "d_model": vaswani2017.D_MODEL,
            "best_bleu": vaswani2017.best_bleu(),
        },
        rows=s.results,
        one=one,
        two=two,
        widest=widest,
        second_widest=s.results[-2],
        one_split=one.specialist_mass.mean(axis=0),
        one_mass=(one.specialist_mass.min(), one.specialist_mass.max()),  # any seed
        one_kept=(kept.min(), kept.max()),
        one_missed=(missed.min(), missed.max()),
        two_split=two.specialist_mass.mean(axis=0),
        widest_mass=float(widest.attention_mass.max()),
        n_seeds=len(s.config.seeds),
        overlapping=_overlapping(s),
        later_from=_later_from(s),
        paper_best=_paper_best(vaswani2017.ROW_A),
        curve=(_CURVE_WINDOW, _CURVE_LEVEL),
        role_threshold=_ROLE_THRESHOLD,
        facts=_facts(s, vaswani2017.ROW_A),
        figures=_figures(s),
    )


def _overlapping(s: _Sweep) -> tuple[tuple[int, int], ...]:
    """Neighbouring h (from h = 2) whose test loss ranges overlap."""
    pairs = pairwise(s.results[1:])
    return tuple(
        (a.n_heads, b.n_heads) for a, b in pairs if a.loss_range[2] >= b.loss_range[1]
    )


def _later_from(s: _Sweep) -> int:
    """The least h from which every doubling crosses the line later (or never)."""
    steps = [r.steps_to() or float("inf") for r in s.results]  # never 0: a window
    start = len(steps) - 1
    while start > 0 and steps[start - 1] < steps[start]:
        start -= 1
    return s.results[start].n_heads


def _paper_best(row: Sequence[vaswani2017.HeadsRow]) -> tuple[int, ...]:
    """The h of the paper's ``row`` with the best BLEU."""
    best = max(r.bleu for r in row)
    return tuple(r.n_heads for r in row if r.bleu == best)


# what each fact of ``_facts`` checks, in plain words (its ``says``)
_SAYS = {
    "one_fails": "with one head, every seed's accuracy is below every other h's, and its loss above every middle h's",
    "one_splits": "on every seed, the single head puts over 0.25 of its weight on each answer",
    "no_takeover": "on every seed, the single head puts between 0.25 and 0.5 of its weight on each answer",
    "seeds_differ": "with one head, the word it keeps is not the same on every seed",
    "two_enough": "with two heads, every seed's accuracy is above SOLVED (0.99) and the heads take one relation each",
    "extra_heads": "every h between one and the widest solves the task on every seed",
    "narrow_worse": "the narrowest heads' lowest loss is above every middle h's highest",
    "narrow_most_right": "the narrowest heads get over half the words right, and none puts half of its weight on an answer",
    "paper_shape": "in Vaswani et al.'s row (A), one head has the lowest BLEU and the most heads less than the best",
    "gaps": "the paper's BLEU spread is under 5% of its best, and our accuracy gap from one to two heads is over 0.2",
    "forgiving_by_accuracy": "every h between one and the widest solves the task on every seed",
    "rises": "the mean test loss rises at every doubling of h from two heads",
    "later": "from the page's h on, each doubling crosses the loss line later, and the widest never does",
    "best_is_relations": "the lowest mean test loss is at h equal to the number of relations",
    "paper_best": "the paper's best h does not include the number of relations",
    "overlap": "some neighbouring h from two heads have overlapping test loss ranges",
}


def _facts(s: _Sweep, row: Sequence[vaswani2017.HeadsRow]) -> dict[str, Fact]:
    """The facts the page states about the sweep and the paper's ``row`` (Table 3 A)."""
    one, two, widest = s.result(1), s.result(N_TARGETS), s.results[-1]
    middle = [x for x in s.results if 1 < x.n_heads < widest.n_heads]
    means = [r.loss_range[0] for r in s.results[1:]]
    later_from = _later_from(s)
    steps = [r.steps_to() for r in s.results if r.n_heads >= later_from]
    later = all(a is not None and (b is None or a < b) for a, b in pairwise(steps))
    best_loss = min(s.results, key=lambda r: r.loss_range[0]).n_heads
    bleu, paper_best = [r.bleu for r in row], _paper_best(row)
    mass = one.specialist_mass
    solved = all(x.accuracy.min() > _SOLVED for x in middle)
    values = (
        "; ".join(  # what every fact below reads, per h
            f"h = {r.n_heads}: loss {r.test_loss.round(4).tolist()}, accuracy "
            f"{r.test_accuracy.round(3).tolist()}, most weight on an answer "
            f"{r.specialist_mass.max(axis=0).round(3).tolist()}, steps {r.steps_to()}"
            for r in s.results
        )
        + f"; the paper's BLEU {bleu}"
    )
    gap = two.accuracy_range[0] - one.accuracy_range[0]
    return {
        name: Fact(holds, values, _SAYS[name])
        for name, holds in {
            "one_fails": all(
                one.accuracy.max() < x.accuracy.min() for x in s.results[1:]
            )
            and one.test_loss.min() > max(x.test_loss.max() for x in middle),
            "one_splits": (mass > 0.25).all(),
            "no_takeover": (mass > 0.25).all() and (mass < 0.5).all(),
            "seeds_differ": len(set(one.test_accuracy.argmax(axis=1).tolist())) > 1,
            "two_enough": two.accuracy.min() > _SOLVED
            and (two.roles() == [1, 1, 0]).all(),
            "extra_heads": solved,
            "narrow_worse": all(
                widest.test_loss.min() > x.test_loss.max() for x in middle
            ),
            "narrow_most_right": widest.accuracy.min() > 0.5
            and widest.attention_mass.max() < 0.5,
            "paper_shape": bleu[0] == min(bleu) and bleu[-1] < max(bleu),
            "gaps": (max(bleu) - min(bleu)) / max(bleu) < 0.05 and gap > 0.2,
            "forgiving_by_accuracy": solved,
            "rises": all(a < b for a, b in pairwise(means)),
            "later": later and widest.steps_to() is None,
            "best_is_relations": best_loss == N_TARGETS,
            "paper_best": len(paper_best) > 0 and N_TARGETS not in paper_best,
            "overlap": bool(_overlapping(s)),
        }.items()
    }


def _figures(s: _Sweep, heads: tuple[int, ...] = _HEATMAP_HEADS) -> dict[str, Figure]:
    """The page's four figures (heatmaps of the h in ``heads``)."""
    example = s.config.example()
    maps = {}  # each h's first-seed weights (h, n, n) on the example
    for h in heads:
        params = {k: v[:1] for k, v in s.result(h).params.items()}
        maps[h] = forward(params, example.inputs(np.float32)[:1], h).weights[0, 0]
    labels = [
        f"{NAMES[n]} {WORDS[w]}"
        for n, w in zip(example.names[0], example.words[0], strict=True)
    ]
    paper = (vaswani2017.ROW_A, toy_task.D_MODEL, vaswani2017.D_MODEL)
    return {
        "sweep_results": Figure(
            "one_head_or_many.sweep_results",
            (s, *paper),
            "Four panels. Left, the toy: test loss on a log scale and test accuracy "
            "against the number of heads, each with the range over the seeds. Right, "
            "Vaswani et al.'s Table 3 row A: development perplexity and BLEU against "
            "the number of heads.",
            "Test loss and accuracy against the number of heads, beside Vaswani et "
            f"al.'s row (A). Look at h = {s.results[0].n_heads}: the toy's worst "
            "point by far, the paper's by a little.",
        ),
        "learning_curves": Figure(
            "one_head_or_many.learning_curves",
            (s,),
            "Training loss against step on a log scale, one line per number of heads, "
            "averaged over the seeds, with a dotted horizontal line at the level "
            "counted as learned.",
            "Training loss by step. Look at where each line crosses the dotted line: "
            f"later and later from h = {_later_from(s)}, never for h = "
            f"{s.results[-1].n_heads}.",
        ),
        "head_heatmaps": Figure(
            "one_head_or_many.head_heatmaps",
            (maps, labels, example.prev_positions, example.ref_positions[0]),
            "Heatmaps of attention weights on the example sequence, one group of "
            f"panels per number of heads ({', '.join(str(h) for h in heads)}), one "
            "panel per head (H0 first), with circles on each query's previous token "
            "and crosses on its referenced token.",
            "What each trained head attends to on the example sequence. Look for the "
            "circles (previous token) and crosses (referenced token): the single head "
            f"spreads over both; with h = {N_TARGETS} each head covers one.",
        ),
        "head_roles": Figure(
            "one_head_or_many.head_roles",
            (s,),
            "One scatter panel per number of heads: each point is a trained head, "
            "placed by its mean weight on the previous token (x) and on the "
            "referenced token (y).",
            "Each trained head's mean weight on the two answers. Points near an axis "
            "serve one relation; the single head sits in between.",
        ),
    }
