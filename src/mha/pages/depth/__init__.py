"""Depth: what a second attention layer adds. Page: ``docs/depth.md``.

The induction task (``induction``), its circuit built by hand and the models trained
on it (``induction_training``); SmolLM2 on repeated random sequences
(``mha.experiments.repeated_tokens``, which the circuits and position
pages read too): its residual stream, induction heads and attention sinks.
Layers and heads are numbered from 0: ``L17H3`` is head 3 of layer 17.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mha.experiments import repeated_tokens
from mha.experiments.repeated_tokens import N_ABLATED, Scan, strongest
from mha.pages.depth import induction
from mha.pages.depth.induction_training import (
    _D_K,
    _D_MODEL,
    _Shape,
    _train_and_score,
    _Trained,
)
from mha.support.cache import cached
from mha.support.formatting import percent, words
from mha.support.page import Fact, Figure, Page

_SEED = 18
_SEEDS = (0, 1, 2)  # training seeds
_STEPS = 800
_BATCH_SIZE = 32
_N_TEST = 2000  # held-out sequences
_REACH = 0.9  # what "every two-layer model reaches" says
_SHAPES = (_Shape(1, 2), _Shape(2, 1))
_EXAMPLE = np.array([3, 0, 5, 1, 4, 2, 1, 5, 0, 3])  # two shuffles of 6 tokens, cut
_BUILT_HEADS = (1, 2, 4)  # one-layer models built for this many offsets (the commonest)
_OUTSIZED = 2.0  # a first token whose stream is at least this many times the others'


def _spread(values: np.ndarray) -> tuple[float, float, float]:
    """Mean, lowest and highest."""
    return float(values.mean()), float(values.min()), float(values.max())


def _ablation_rows(s: repeated_tokens.Scan) -> list[tuple[str, tuple, tuple]]:
    """Each ablation's loss on the first and the second copy (nats): the mean over the
    sequences with the lowest and highest sequence; for random sets, the median of
    the sets' means with the lowest and highest set."""

    def sets(losses: np.ndarray) -> list[tuple[float, float, float]]:
        means = losses.mean(axis=-1)  # (sets, 2)
        return [(float(np.median(c)), float(c.min()), float(c.max())) for c in means.T]

    return [
        ("unchanged", *map(_spread, s.losses)),
        ("the induction heads removed", *map(_spread, s.top_losses)),
        ("random sets of as many other heads", *sets(s.random_losses)),
        ("random sets matched by layer", *sets(s.matched_losses)),
    ]


@functools.cache
def page() -> Page:
    """What the page prints: the induction task, SmolLM2's scan, facts and figures."""
    t, s, r = _task(), repeated_tokens.scan(), repeated_tokens
    worst = s.random_sets[int(np.argmax(s.loss_random))]
    return Page(
        task=t,
        scan=s,
        steps=_STEPS,
        batch_size=_BATCH_SIZE,
        seeds=len(_SEEDS),
        d_k=_D_K,
        d_model=_D_MODEL,
        weights=_SHAPES[0].attention_params(),
        built_heads=words([str(h) for h in _BUILT_HEADS]),
        n_offsets=len(t.offsets),
        reach=_REACH,
        half=r.HALF,
        sequences=r.N_SEQUENCES,
        ablated=N_ABLATED,
        random_sets=r._N_RANDOM_SETS,
        one_accuracy=words([percent(a) for a in t.one.accuracy]),
        two_accuracy=words([percent(a) for a in t.two.accuracy]),
        growth=float(s.stream_norm[-1] / s.stream_norm[1]),
        massive=float(np.max(_norm_ratio(s))),
        massive_layer=f"L{int(np.argmax(_norm_ratio(s)))}",
        louder=_louder(s),
        heads=_head_table(s),
        ablation_ratio=s.loss_top / s.loss_second,
        random=[float(f(s.loss_random)) for f in (np.median, np.min, np.max)],
        worst_set=[f"L{layer}H{head}" for layer, head in worst],
        worst_induction=float(max(s.induction[layer, head] for layer, head in worst)),
        matched_sets=r._N_MATCHED,
        ablation_rows=_ablation_rows(s),
        worst_layers=sorted({f"L{layer}" for layer, _ in worst}),
        sink_ratio=float(np.median(s.first_token) / s.uniform_first_token),
        below_even=_below_even(s),
        sinks=_sink_groups(s),
        outsized=_OUTSIZED,
        facts=_facts(t, s),
        figures=_figures(t, s),
    )


@dataclass(frozen=True)
class _Task:
    """What the page prints about the induction task."""

    vocab: int
    length: int
    chance: float
    exclusion: float  # a guess among the tokens that are neither x_t nor the first
    excluded_answers: int  # scored positions whose answer is x_t or the first token
    n_test: int  # held-out sequences
    n_test_positions: int  # ... and their scored positions
    constructed: float  # accuracy of the built circuit on them
    without_previous: float  # ... with its previous-token head's write removed
    count_guess: float  # the best order-free guess on the task's sequences
    uniform_guess: float  # the same guess on uniform random sequences
    one: _Trained  # one layer of two heads, every seed
    two: _Trained  # two layers of one head
    offsets: tuple[int, ...]  # how far back the earlier occurrences lie, held out
    built_one: tuple[induction._OffsetScore, ...]  # one layer built per BUILT_HEADS
    # ... then for every offset


@functools.cache
def _task() -> _Task:
    """The induction task's numbers: baselines, the built circuits, both shapes trained
    on every seed (cached).
    """
    batch = induction.sample(_N_TEST, np.random.default_rng([_SEED, 1]))
    one, two = (
        cached(_train_and_score, shape, _SEEDS, _STEPS, _BATCH_SIZE, batch)
        for shape in _SHAPES
    )
    uniform = np.random.default_rng([_SEED, 2]).integers(
        0, induction._VOCAB, size=(_N_TEST, induction._LENGTH)
    )
    circuit = induction.build()
    tokens, answers, scored = batch.tokens, batch.targets, batch.scored
    first = tokens[:, :1]
    offsets, counts = np.unique(
        induction._offsets_of(tokens)[scored], return_counts=True
    )
    commonest = offsets[np.argsort(-counts, kind="stable")]
    sets = [tuple(commonest[:h].tolist()) for h in _BUILT_HEADS]
    return _Task(
        vocab=induction._VOCAB,
        length=induction._LENGTH,
        chance=1 / induction._VOCAB,
        # uniform over the tokens that are neither the query's nor the first
        exclusion=float(
            np.mean(1 / (induction._VOCAB - 1 - (tokens != first))[scored])
        ),
        excluded_answers=int(((answers == tokens) | (answers == first))[scored].sum()),
        n_test=_N_TEST,
        n_test_positions=int(batch.scored.sum()),
        constructed=circuit.accuracy(batch),
        without_previous=circuit.silenced().accuracy(batch),
        count_guess=induction._count_guess(batch),
        uniform_guess=induction._count_guess(
            induction._Batch(uniform, induction.targets_of(uniform))
        ),
        one=one,
        two=two,
        offsets=tuple(offsets.tolist()),
        built_one=tuple(
            cached(induction._score_one_layer, batch, offsets)
            for offsets in (*sets, tuple(offsets.tolist()))
        ),
    )


def _layers(indices) -> list[str]:
    return [f"L{i}" for i in indices]


def _louder(scan: Scan) -> list[str]:
    """The layers where a sublayer writes more than the stream it joins."""
    writes = np.maximum(scan.attention_norm, scan.mlp_norm)
    return _layers(np.flatnonzero(writes > scan.stream_norm[:-1]))


def _span(layers) -> str:
    """``"L2–L9"`` for consecutive layers, else ``"L0, L1 and L10"``."""
    layers = [int(i) for i in layers]
    if len(layers) > 2 and layers == list(range(layers[0], layers[-1] + 1)):
        return f"L{layers[0]}–L{layers[-1]}"
    return words(_layers(layers))


def _norm_ratio(scan: Scan) -> np.ndarray:
    """``(layers + 1,)``: the first token's residual stream over the others' mean norm,
    entering each layer (the stream its attention reads), then after the last."""
    return scan.first_stream_norm / scan.stream_norm


def _sink_groups(scan: Scan) -> dict:
    """The layers by how far the first token's stream stands out where they read it:
    ``quiet``, under OUTSIZED times the others'; ``jump``, the layer that multiplies
    the ratio most; ``before`` and ``after`` it, the other layers. Each group: its
    layers (``span``), its ratios and sink shares (``ratio``, ``share``: min, max, mean).
    """
    full = _norm_ratio(scan)
    ratio, share = full[:-1], scan.first_token
    layers = np.arange(len(share))
    quiet = ratio < _OUTSIZED
    jump = int(np.argmax(full[1:] / full[:-1]))
    groups = {"jump": f"L{jump}", "jump_to": float(full[jump + 1])}
    chosen_by_name = {
        "quiet": quiet,
        "loud": ~quiet,
        "before": ~quiet & (layers < jump),
        "after": layers > jump,
    }
    for name, chosen in chosen_by_name.items():
        # an empty group: no span, nan (no comparison holds)
        stats = (np.min, np.max, np.mean) if chosen.any() else [lambda v: np.nan] * 3
        groups[name] = {
            "span": _span(layers[chosen]) if chosen.any() else "",
            "ratio": [float(f(ratio[chosen])) for f in stats],
            "share": [float(f(share[chosen])) for f in stats],
        }
    return groups


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


def _facts(_task: _Task, scan: Scan) -> dict[str, Fact]:
    """The facts the page's sentences state about the task's models and the scan."""
    one, two, twice = _task.one.accuracy, _task.two.accuracy, 2 * _task.chance
    excl, built = _task.exclusion, _task.built_one
    guesses = f"{_task.count_guess} and {_task.uniform_guess} against {twice}"
    writes = f"writes {np.maximum(scan.attention_norm, scan.mlp_norm)}"
    heads, below = _head_table(scan), _below_even(scan)
    losses = f"first {scan.loss_first}, second {scan.loss_second}"
    sinks = f"shares {scan.first_token}, even {scan.uniform_first_token}"
    groups = _sink_groups(scan)
    quiet, loud, before, after = (
        groups[k] for k in ("quiet", "loud", "before", "after")
    )
    by_ratio = f"{groups}; ratios {_norm_ratio(scan)}"
    return {
        "never_excluded": Fact(
            _task.excluded_answers == 0 and _task.chance < excl,
            f"{_task.excluded_answers} answers are x_t or the first token; "
            f"exclusion {excl}, chance {_task.chance}",
            says="no scored answer is the current token or the first token, and the exclusion baseline beats chance",
        ),
        "one_layer": Fact(
            one.max() < two.min(),
            f"one layer {one}, two layers {two}",
            says="every one-layer model's accuracy is below every two-layer model's",
        ),
        "one_below_twice": Fact(
            (one < twice).all(),
            f"{one}, twice chance {twice}",
            says="every one-layer model's accuracy is below twice chance",
        ),
        "one_near_exclusion": Fact(
            (np.abs(one - excl) < 0.01).all(),
            f"one layer {one}, exclusion {excl}",
            says="every one-layer model's accuracy is within 0.01 of the exclusion baseline",
        ),
        "built_exact": Fact(
            all(row.covered == 1 for row in built)
            and all(row.elsewhere == 0 for row in built[:-1]),
            f"{built}",
            says="each hand-built one-layer model is right on every offset it has heads for and never right elsewhere",
        ),
        "built_all": Fact(
            built[-1].overall == 1 and built[-1].n_heads == len(_task.offsets) + 1,
            f"{built[-1]}, {len(_task.offsets)} offsets",
            says="the hand-built model with one head per offset and one more is right on every sequence",
        ),
        "two_reach": Fact(
            (two >= _REACH).all(),
            f"two layers {two}",
            says="every two-layer model's accuracy is at least REACH (0.9)",
        ),
        "count_guess": Fact(
            _task.count_guess < twice < _task.uniform_guess,
            guesses,
            says="the count guess scores below twice chance on these sequences and above it on uniform ones",
        ),
        "louder": Fact(
            bool(_louder(scan)),
            f"{writes}, stream {scan.stream_norm}",
            says="in some layer a sublayer writes more than the stream it joins",
        ),
        "partners": Fact(
            all(row[3] >= 0.5 for row in heads),
            f"{heads}",
            says="each of the strongest induction heads has a previous-token head scoring 0.5 or more in an earlier layer",
        ),
        "second_copy": Fact(
            scan.loss_second < scan.loss_first / 2,
            losses,
            says="the mean loss on the second copy is under half that on the first copy",
        ),
        "ablation": Fact(
            scan.loss_top > scan.loss_random.max()
            and scan.loss_top > scan.matched_losses[:, 1].mean(-1).max(),
            f"{scan.loss_top} vs {scan.loss_random} and matched "
            f"{scan.matched_losses[:, 1].mean(-1)}",
            says="removing the induction heads costs the second copy more than any random "
            "set, matched by layer or not",
        ),
        "copy_specific": Fact(
            bool(
                (np.abs(scan.top_losses[0] - scan.losses[0]) < 0.5).all()
                and (scan.top_losses[1] - scan.losses[1] > 2).all()
            ),
            f"first copy {scan.losses[0]} -> {scan.top_losses[0]}, second "
            f"{scan.losses[1]} -> {scan.top_losses[1]}",
            says="removing the induction heads moves the first copy's loss by under half "
            "a nat and raises the second's by over two nats, on every sequence",
        ),
        "sinks": Fact(
            len(below) < len(scan.first_token) / 2,
            sinks,
            says="fewer than half of the layers put no more weight on the first token than an even spread",
        ),
        "below_even": Fact(
            bool(below),
            sinks,
            says="at least one layer puts no more weight on the first token than an even spread",
        ),
        "massive": Fact(
            _norm_ratio(scan).max() > 10 * _OUTSIZED,
            by_ratio,
            says="in some layer, the first token's stream norm is over 10 times OUTSIZED (2) times the others' mean",
        ),
        "co_occur": Fact(
            quiet["share"][1] < loud["share"][0],
            by_ratio,
            says="every layer whose first-token stream is under 2 times the others' gives it less weight than every other layer",
        ),
        "not_by_size": Fact(
            before["ratio"][1] < after["ratio"][0]
            and after["share"][2] < before["share"][2],
            by_ratio,
            says="after the jump, the first token's stream ratio is above every earlier one, yet its mean weight is lower",
        ),
    }


def _figures(_task: _Task, scan: Scan) -> dict[str, Figure]:
    """The page's five figures; their alt texts and captions state computed values."""
    louder_layers = _louder(scan)
    exception = f" except in {words(louder_layers)}" if louder_layers else ""
    circuit = induction.build(6, len(_EXAMPLE))
    _, weights = circuit.run(_EXAMPLE[None])
    answers = circuit.predict(_EXAMPLE[None])[0]
    scored = np.flatnonzero(induction.targets_of(_EXAMPLE) >= 0)
    top = strongest(scan.induction, N_ABLATED)
    n_layers, n_heads = scan.induction.shape
    top_layers = _layers(sorted({layer for layer, _ in top}))
    groups, ratio = _sink_groups(scan), _norm_ratio(scan)[:-1]
    quiet, loud = groups["quiet"], groups["loud"]
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
            (tuple(w[0, 0] for w in weights), _EXAMPLE),
            "Two heatmaps of the built circuit on the sequence "
            f"{' '.join(str(t) for t in _EXAMPLE)}. Left, layer 0: each row's weight "
            "sits just left of the diagonal (the previous token). Right, layer 1: in "
            "the rows of repeated tokens the weight sits on the token after the "
            "earlier occurrence of the row's token.",
            f"The built circuit's two heads on a short example: {len(_EXAMPLE)} "
            f"positions over a vocabulary of {circuit.space.vocab} tokens. L0H0 looks "
            "one position back. L1H0, "
            f"from the second {words([str(_EXAMPLE[t]) for t in scored])}, looks at "
            "the token that followed their first occurrence: "
            f"{words([str(answers[t]) for t in scored])}.",
        ),
        "training": Figure(
            "depth.training",
            (_task,),
            f"Bar chart of held-out accuracy, {len(_SEEDS)} seeds per shape: the "
            f"one-layer bars reach {percent(_task.one.accuracy.max())} at most, the "
            f"two-layer bars {percent(_task.two.accuracy.min())} at least, on a log "
            f"scale; lines mark chance ({percent(_task.chance)}), the exclusion "
            f"baseline ({percent(_task.exclusion)}) and twice chance.",
            "Held-out accuracy of each trained model, one bar per seed (log scale). "
            "The two shapes have the same attention weights; only stacking lets the "
            "second head read what the first one wrote. The exclusion baseline "
            "guesses among the tokens that are neither the current nor the first one.",
        ),
        "head_scores": Figure(
            "depth.head_scores",
            (scan, top),
            f"Two heatmaps of {n_layers} layers by {n_heads} heads. The induction "
            "score is near zero almost everywhere and bright at a few heads of "
            f"{words(top_layers)}, brightest at L{top[0][0]}H{top[0][1]}; the "
            "previous-token score is bright at a few heads of earlier layers.",
            "Induction score (left) and previous-token score (right) of every head "
            "of SmolLM2, averaged over the repeated sequences; the strongest "
            "induction heads are framed. Look at where they sit: above the layers of "
            "the strong previous-token heads.",
        ),
        "sinks_and_norms": Figure(
            "depth.sinks_and_norms",
            (scan.first_token, ratio, scan.uniform_first_token, _OUTSIZED),
            f"Two line charts over SmolLM2's {len(ratio)} layers. Top: the weight "
            f"queries put on the first token, at most {quiet['share'][1]:.2f} in "
            f"{quiet['span']}, from {loud['share'][0]:.2f} to {loud['share'][1]:.2f} "
            f"elsewhere, against {scan.uniform_first_token:.3f} for an even spread. "
            "Bottom, on a log scale: the first token's residual stream over the "
            f"others' mean norm, {groups['before']['ratio'][0]:.1f} to "
            f"{groups['before']['ratio'][1]:.1f} in {groups['before']['span']}, "
            f"under {_OUTSIZED:.0f} in {quiet['span']}, {ratio.max():.0f} entering "
            f"L{int(np.argmax(ratio))} and falling to {ratio[-1]:.1f} entering the "
            "last layer.",
            "Per layer: the share of attention that goes to the first token "
            "(averaged over heads and queries; dashed, an even spread), and how many "
            "times the others' mean norm the first token's residual stream is where "
            f"the layer reads it (dotted, {_OUTSIZED:.0f} times). Look at the layers "
            "where the bottom curve is low: the top one is low there too. Then "
            f"compare the two plateaus: in {groups['before']['span']} a first token "
            f"{groups['before']['ratio'][0]:.1f} to {groups['before']['ratio'][1]:.1f} "
            "times the others' gets more weight on average than in "
            f"{groups['after']['span']}, where it is {groups['after']['ratio'][0]:.0f} "
            f"to {groups['after']['ratio'][1]:.0f} times.",
        ),
    }
