"""Depth: what one attention layer cannot do and two can. Page: ``docs/depth.md``.

The induction task (``induction``), its circuit built by hand and the models trained
on it (``induction_training``); SmolLM2 on repeated random sequences
(``repeated_tokens``): its residual stream, induction heads and attention sinks.
Layers and heads are numbered from 0: ``L17H3`` is head 3 of layer 17.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mha.pages.depth import induction, repeated_tokens
from mha.pages.depth.induction_training import (
    D_K,
    D_MODEL,
    Shape,
    Trained,
    train_and_score,
)
from mha.pages.depth.repeated_tokens import N_ABLATED, Scan, strongest
from mha.support.cache import cached
from mha.support.formatting import percent
from mha.support.page import Fact, Figure, Page

SEED = 18
SEEDS = (0, 1, 2)  # training seeds
STEPS = 800
BATCH_SIZE = 32
N_TEST = 2000  # held-out sequences
REACH = 0.9  # what "every two-layer model reaches" says
SHAPES = (Shape(1, 2), Shape(2, 1))
EXAMPLE = np.array([3, 0, 5, 1, 4, 2, 1, 5, 0, 3])  # two shuffles of 6 tokens, cut


@functools.cache
def page() -> Page:
    """What the page prints: the induction task, SmolLM2's scan, facts and figures.

    ```python
    from mha.pages.depth import page

    p = page()
    assert all(fact.holds for fact in p.facts.values()) and len(p.figures) == 5
    ```
    """
    t, s, r = task(), repeated_tokens.scan(), repeated_tokens
    return Page(
        task=t,
        scan=s,
        steps=STEPS,
        batch_size=BATCH_SIZE,
        seeds=len(SEEDS),
        d_k=D_K,
        d_model=D_MODEL,
        weights=SHAPES[0].attention_params(),
        reach=REACH,
        half=r.HALF,
        sequences=r.N_SEQUENCES,
        ablated=N_ABLATED,
        random_sets=r.N_RANDOM_SETS,
        one_accuracy=_words([percent(a) for a in t.one.accuracy]),
        two_accuracy=_words([percent(a) for a in t.two.accuracy]),
        growth=float(s.stream_norm[-1] / s.stream_norm[1]),
        massive=float(np.max(s.first_stream_norm / s.stream_norm)),
        louder=_louder(s),
        heads=_head_table(s),
        ablation_ratio=s.loss_top / s.loss_clean,
        random=[float(f(s.loss_random)) for f in (np.median, np.min, np.max)],
        sink_ratio=float(np.median(s.first_token) / s.uniform_first_token),
        below_even=_below_even(s),
        facts=facts(t, s),
        figures=figures(t, s),
    )


@dataclass(frozen=True)
class Task:
    """What the page prints about the induction task."""

    vocab: int
    length: int
    chance: float
    n_test: int  # held-out sequences
    n_test_positions: int  # ... and their scored positions
    constructed: float  # accuracy of the built circuit on them
    without_previous: float  # ... with its previous-token head's write removed
    count_guess: float  # the best order-free guess on the task's sequences
    uniform_guess: float  # the same guess on uniform random sequences
    one: Trained  # one layer of two heads, every seed
    two: Trained  # two layers of one head


@functools.cache
def task() -> Task:
    """The induction task's numbers: chance, the built circuit, the order-free guess on
    the task's and on uniform sequences, both shapes trained on every seed (cached).

    ```python
    from mha.pages.depth import task

    t = task()
    assert t.constructed > 0.99 and t.one.accuracy.max() < t.two.accuracy.min()
    ```
    """
    batch = induction.sample(N_TEST, np.random.default_rng([SEED, 1]))
    one, two = (
        cached(train_and_score, shape, SEEDS, STEPS, BATCH_SIZE, batch)
        for shape in SHAPES
    )
    uniform = np.random.default_rng([SEED, 2]).integers(
        0, induction.VOCAB, size=(N_TEST, induction.LENGTH)
    )
    circuit = induction.build()
    return Task(
        vocab=induction.VOCAB,
        length=induction.LENGTH,
        chance=1 / induction.VOCAB,
        n_test=N_TEST,
        n_test_positions=int(batch.scored.sum()),
        constructed=circuit.accuracy(batch),
        without_previous=circuit.silenced().accuracy(batch),
        count_guess=induction.count_guess(batch),
        uniform_guess=induction.count_guess(
            induction.Batch(uniform, induction.targets_of(uniform))
        ),
        one=one,
        two=two,
    )


def _words(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _layers(indices) -> list[str]:
    return [f"L{i}" for i in indices]


def _louder(scan: Scan) -> list[str]:
    """The layers where a sublayer writes more than the stream it joins."""
    writes = np.maximum(scan.attention_norm, scan.mlp_norm)
    return _layers(np.flatnonzero(writes > scan.stream_norm[:-1]))


def _below_even(scan: Scan) -> list[str]:
    """The layers that put no more weight on the first token than an even spread."""
    return _layers(np.flatnonzero(scan.first_token <= scan.uniform_first_token))


def _head_table(scan: Scan) -> list[tuple[str, float, str, float]]:
    """The strongest induction heads, each with the strongest previous-token head of an
    earlier layer (K-composition reads what it wrote): head, score, partner, score."""
    rows = []
    for layer, head in strongest(scan.induction, N_ABLATED):
        below = scan.previous[:layer]
        best = np.unravel_index(np.argmax(below), below.shape)
        partner, score = f"L{best[0]}H{best[1]}", float(below[best])
        rows.append(
            (f"L{layer}H{head}", float(scan.induction[layer, head]), partner, score)
        )
    return rows


def facts(task: Task, scan: Scan) -> dict[str, Fact]:
    """The facts the page's sentences state about the task's models and the scan.

    ```python
    import dataclasses
    from mha.pages.depth import facts, task
    from mha.pages.depth.repeated_tokens import scan

    t, s = task(), scan()  # one layer as good as two: the sentence goes false
    assert facts(t, s)["one_layer"].holds
    assert not facts(dataclasses.replace(t, one=t.two), s)["one_layer"].holds
    ```
    """
    one, two, twice = task.one.accuracy, task.two.accuracy, 2 * task.chance
    guesses = f"{task.count_guess} and {task.uniform_guess} against {twice}"
    writes = f"writes {np.maximum(scan.attention_norm, scan.mlp_norm)}"
    heads, below = _head_table(scan), _below_even(scan)
    losses = f"first {scan.loss_first}, second {scan.loss_second}"
    sinks = f"shares {scan.first_token}, even {scan.uniform_first_token}"
    return {
        "one_layer": Fact(one.max() < two.min(), f"one layer {one}, two layers {two}"),
        "one_below_twice": Fact((one < twice).all(), f"{one}, twice chance {twice}"),
        "two_reach": Fact((two >= REACH).all(), f"two layers {two}"),
        "count_guess": Fact(task.count_guess < twice < task.uniform_guess, guesses),
        "louder": Fact(bool(_louder(scan)), f"{writes}, stream {scan.stream_norm}"),
        "partners": Fact(all(row[3] >= 0.5 for row in heads), f"{heads}"),
        "second_copy": Fact(scan.loss_second < scan.loss_first / 2, losses),
        "ablation_sequences": Fact(
            repeated_tokens.N_ABLATION_SEQUENCES == 1,
            f"{repeated_tokens.N_ABLATION_SEQUENCES} ablation sequences",
        ),
        "ablation": Fact(
            scan.loss_top > scan.loss_random.max(),
            f"{scan.loss_top} vs {scan.loss_random}",
        ),
        "sinks": Fact(len(below) < len(scan.first_token) / 2, sinks),
        "below_even": Fact(bool(below), sinks),
    }


def figures(task: Task, scan: Scan) -> dict[str, Figure]:
    """The page's five figures; their alt texts and captions state computed values.

    ```python
    from mha.pages.depth import figures, task
    from mha.pages.depth.repeated_tokens import scan

    assert figures(task(), scan())["head_scores"].caption
    ```
    """
    louder_layers = _louder(scan)
    exception = f" except in {_words(louder_layers)}" if louder_layers else ""
    circuit = induction.build(6, len(EXAMPLE))
    _, weights = circuit.run(EXAMPLE[None])
    answers = circuit.predict(EXAMPLE[None])[0]
    scored = np.flatnonzero(induction.targets_of(EXAMPLE) >= 0)
    top = strongest(scan.induction, N_ABLATED)
    n_layers, n_heads = scan.induction.shape
    top_layers = _layers(sorted({layer for layer, _ in top}))
    low = _layers(np.flatnonzero(scan.first_token < 0.1))
    return {
        "residual_norms": Figure(
            "depth.residual_norms",
            (scan,),
            f"Three lines over SmolLM2's {len(scan.attention_norm)} layers on a log "
            f"scale: the residual stream's norm grows from {scan.stream_norm[1]:.0f} "
            f"after L0's input to {scan.stream_norm[-1]:.0f} after the last layer; "
            "the norms of the attention and feed-forward writes stay below "
            f"it{exception}.",
            "The residual stream of SmolLM2-135M-Instruct: mean norm per token (the "
            "first token left out) over the repeated random sequences. Look at the "
            "gap between the top line and the other two: each sublayer adds a change "
            "to a stream that keeps what came before.",
        ),
        "circuit_attention": Figure(
            "depth.circuit_attention",
            (tuple(w[0, 0] for w in weights), EXAMPLE),
            "Two heatmaps of the built circuit on the sequence "
            f"{' '.join(str(t) for t in EXAMPLE)}. Left, layer 0: each row's weight "
            "sits just left of the diagonal (the previous token). Right, layer 1: in "
            "the rows of repeated tokens the weight sits on the token after the "
            "earlier occurrence of the row's token.",
            "The built circuit's two heads on a short example "
            f"({circuit.space.vocab} tokens). L0H0 looks one position back. L1H0, "
            f"from the second {_words([str(EXAMPLE[t]) for t in scored])}, looks at "
            "the token that followed their first occurrence: "
            f"{_words([str(answers[t]) for t in scored])}.",
        ),
        "training": Figure(
            "depth.training",
            (task,),
            f"Bar chart of held-out accuracy, {len(SEEDS)} seeds per shape: the "
            f"one-layer bars reach {percent(task.one.accuracy.max())} at most, the "
            f"two-layer bars {percent(task.two.accuracy.min())} at least; dotted and "
            "dashed lines mark chance and twice chance.",
            "Held-out accuracy of each trained model, one bar per seed. The two "
            "shapes have the same attention weights; only stacking lets the second "
            "head read what the first one wrote.",
        ),
        "head_scores": Figure(
            "depth.head_scores",
            (scan, top),
            f"Two heatmaps of {n_layers} layers by {n_heads} heads. The induction "
            "score is near zero almost everywhere and bright at a few heads of "
            f"{_words(top_layers)}, brightest at L{top[0][0]}H{top[0][1]}; the "
            "previous-token score is bright at a few heads of earlier layers.",
            "Induction score (left) and previous-token score (right) of every head "
            "of SmolLM2, averaged over the repeated sequences; the strongest "
            "induction heads are framed. Look at where they sit: above the layers of "
            "the strong previous-token heads.",
        ),
        "attention_sinks": Figure(
            "depth.attention_sinks",
            (scan,),
            f"Bar chart over the {len(scan.first_token)} layers of the weight "
            f"queries put on the first token: under 0.1 in "
            f"{_words(low) if low else 'no layer'}, up to "
            f"{scan.first_token.max():.2f} elsewhere, against "
            f"{scan.uniform_first_token:.3f} for an even spread (dashed line).",
            "The share of attention that goes to the first token, per layer, "
            "averaged over heads and queries. The dashed line is what an even spread "
            "over the visible tokens would give it.",
        ),
    }
