"""Circuits: how SmolLM2's induction heads are wired. Page: ``docs/circuits.md``.

The depth page finds the induction heads by their attention pattern. This page tests
the circuit of Olsson et al. (2022) and Elhage et al. (2021) around them: from the
weights alone (``weights``: copying, K-composition), on the repeated sequences, read
from the depth page's passes (``sequences``: direct logit attribution, mean ablation,
path patching into keys, what the first token's attention moves) and on the site's
own Markdown (``streaming``: the StreamingLLM windows). Layers and heads are numbered
from 0.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mha.pages.circuits import weights as w
from mha.pages.circuits.sequences import _mean_ablated_loss, _patched_induction, _run
from mha.pages.circuits.streaming import _Streaming, _streaming
from mha.pages.depth import repeated_tokens
from mha.pages.depth.repeated_tokens import N_ABLATED, Scan, strongest
from mha.pretrained import smollm2
from mha.pretrained.smollm2 import rms_norm
from mha.support.cache import cached
from mha.support.formatting import words
from mha.support.page import Fact, Figure, Page

_SEED = 26
_N_RANDOM = 20  # random heads whose OV circuits are scored beside the induction heads
_N_SAMPLE = 1000  # tokens the own-logit rank is measured on
_MAX_OFFSET = 64  # K-composition averaged over offsets 1 .. MAX_OFFSET
_N_CONTROLS = 5  # random earlier heads patched as controls
_STREAM_TOKENS = 128  # tokens of Markdown the windows are run on
_BAND = 32  # keys in the sliding window
_SINKS = 4  # first tokens kept beside it
_TEXT = Path(__file__).resolve().parents[4] / "docs" / "attention.md"


_Head = tuple[int, int]


def _name(head: _Head | tuple[np.integer, np.integer]) -> str:
    return f"L{int(head[0])}H{int(head[1])}"


@dataclass(frozen=True)
class _Weights:
    """What the weights alone say: copying of ``heads`` (the induction heads, then
    ``N_RANDOM`` random others) and K-composition of every pair."""

    heads: tuple[tuple[int, int], ...]
    copying: np.ndarray  # (heads,) sum(λ) / sum(|λ|)
    median_rank: np.ndarray  # (heads,) of the own logit among N_SAMPLE
    first: np.ndarray  # (heads,) share of the sample ranked first
    composition: np.ndarray  # (2, layers, h, layers, h): Δ = 1, mean over Δ


def _weights(heads: tuple[tuple[int, int], ...]) -> _Weights:
    model = smollm2.load()
    blocks = model.blocks
    folded = w._fold([b.attention for b in blocks], [b.attention_norm for b in blocks])
    embed = model.embedding  # (d_model, vocab): W_E, tied
    gain = model.final_norm[:, None]  # W_U = gain W_E: the final norm's gain folded in
    eig = w._ov_eigenvalues(folded, heads, gain * (embed @ embed.T))  # W_U W_E^T
    control = set(model.tokenizer.get_added_tokens_decoder())
    allowed = [i for i in range(model.config.vocab_size) if i not in control]
    sample = np.random.default_rng([_SEED, 1]).choice(allowed, _N_SAMPLE, replace=False)
    chosen = embed[:, sample]  # (d_model, N_SAMPLE)
    ones = np.ones(model.config.d_model, chosen.dtype)
    inputs = rms_norm(chosen.T, ones, model.blocks[0].eps)
    ranks = w._own_token_ranks(folded, heads, inputs, gain * chosen)
    rope = blocks[0].attention.rope
    offsets = w._rotations(rope, range(1, _MAX_OFFSET + 1))
    composition = w._composition_scores(folded, [offsets[:1], offsets])
    return _Weights(
        heads=heads,
        copying=w._copying_score(eig),
        median_rank=np.median(ranks, axis=-1),
        first=(ranks == 1).mean(axis=-1),
        composition=composition.astype(np.float32),
    )


@dataclass(frozen=True)
class _Sequences:
    """What the repeated sequences show (means over them)."""

    first_token: np.ndarray  # (layers,) attention weight on the first token
    first_token_moved: np.ndarray  # (layers,) its share of what moves
    dla: np.ndarray  # (layers, h) direct logit attribution to the repeated token
    mean_top: float  # second-copy loss, the induction heads mean-ablated
    previous_mean: float  # ... the previous-token head alone mean-ablated
    clean: np.ndarray  # (N_ABLATED,) induction score of each induction head
    patched: np.ndarray  # (N_ABLATED,) ... its keys patched at the previous-token head
    controls: np.ndarray  # (N_ABLATED, N_CONTROLS) ... at random earlier heads


def _sequences(
    top: tuple[tuple[int, int], ...],
    previous: tuple[int, int],
    controls: tuple[tuple[int, int], ...],
) -> _Sequences:
    model = smollm2.load()
    p = _run(model, repeated_tokens.passes())  # the depth page's passes, read again
    return _Sequences(
        first_token=p.first_token,
        first_token_moved=p.first_token_moved,
        dla=p.dla,
        mean_top=_mean_ablated_loss(model, p, top),
        previous_mean=_mean_ablated_loss(model, p, [previous]),
        clean=_patched_induction(model, p, top, None),
        patched=_patched_induction(model, p, top, previous),
        controls=np.stack([_patched_induction(model, p, top, s) for s in controls], 1),
    )


def _markdown_ids() -> tuple[int, ...]:
    """The first ``STREAM_TOKENS`` + 1 tokens of the site's attention page (Markdown),
    its front matter (the page's description for the home page) left out."""
    text = _TEXT.read_text(encoding="utf-8")
    if text.startswith("---\n"):
        text = text[text.index("\n---\n", 4) + len("\n---\n") :]
    return tuple(smollm2.load().encode(text)[: _STREAM_TOKENS + 1])


@dataclass(frozen=True)
class _Studies:
    """The three cached studies and the heads they are about."""

    scan: Scan
    top: tuple[tuple[int, int], ...]
    previous: tuple[int, int]
    controls: tuple[tuple[int, int], ...]
    weights: _Weights
    sequences: _Sequences
    streaming: _Streaming


@functools.cache
def studies() -> _Studies:
    """Every study of the page, from the cache (the depth page's scan picks the heads)."""
    scan = repeated_tokens.scan()
    top = tuple(strongest(scan.induction, N_ABLATED))
    previous = tuple(strongest(scan.previous, 1)[0])
    n_layers, n_heads = scan.induction.shape
    rng = np.random.default_rng([_SEED, 2])
    others = [h for h in np.ndindex(n_layers, n_heads) if h not in top]
    picked = rng.choice(len(others), _N_RANDOM, replace=False)
    randoms = tuple(others[i] for i in picked)
    first_top = min(layer for layer, _ in top)
    below = [h for h in np.ndindex(first_top, n_heads) if h != previous]
    controls = tuple(
        below[i] for i in rng.choice(len(below), _N_CONTROLS, replace=False)
    )
    return _Studies(
        scan=scan,
        top=top,
        previous=previous,
        controls=controls,
        weights=cached(_weights, top + randoms),
        sequences=cached(_sequences, top, previous, controls),
        streaming=cached(_streaming, _markdown_ids(), _BAND, _SINKS),
    )


@functools.cache
def page() -> Page:
    """What the page prints: the studies, facts and figures."""
    s = studies()
    top, q, c = s.top, s.sequences, s.weights.composition
    randoms = s.weights.heads[len(top) :]
    n = len(top)
    return Page(
        s=s,
        top=[_name(h) for h in top],
        previous=_name(s.previous),
        n_random=_N_RANDOM,
        n_sample=_N_SAMPLE,
        max_offset=_MAX_OFFSET,
        controls=[_name(h) for h in s.controls],
        copying=[
            (
                _name(h),
                float(s.weights.copying[i]),
                float(s.weights.median_rank[i]),
                float(s.weights.first[i]),
            )
            for i, h in enumerate(top)
        ],
        random_copying=_summary(s.weights.copying[n:]),
        random_rank=_summary(s.weights.median_rank[n:]),
        random_names=[_name(h) for h in randoms],
        dla=[float(q.dla[h]) for h in top],
        dla_top=[(_name(h), float(q.dla[h])) for h in strongest(q.dla, 3)],
        pairs=int(np.isfinite(c[0]).sum()),
        median_pair=float(np.nanmedian(c[1])),
        senders=_senders(c[1], top),
        strongest_pairs=_strongest_pairs(c[1], 5),
        shared_keys=_shared_keys(top, smollm2.load().config),
        offset_gap=_offset_gap(c, top),
        moved_below=int((q.first_token_moved < q.first_token).sum()),
        layers=len(q.first_token),
        weight_median=float(np.median(q.first_token)),
        moved_median=float(np.median(q.first_token_moved)),
        even=s.scan.uniform_first_token,
        recovered=_recovered(s.streaming),
        d_k=smollm2.load().config.d_k,
        context=smollm2.load().config.context_length,
        stream_tokens=_STREAM_TOKENS,
        worst_random=float(s.scan.loss_random.max()),
        ablated=N_ABLATED,
        sequences=repeated_tokens.N_SEQUENCES,
        band=_BAND,
        sinks=_SINKS,
        facts=_facts(s),
        figures=_figures(s),
    )


def _summary(values: np.ndarray) -> list[float]:
    """Median, minimum and maximum."""
    return [float(f(values)) for f in (np.median, np.min, np.max)]


def _senders(
    scores: np.ndarray, top: tuple[_Head, ...]
) -> list[tuple[str, str, float, str, float]]:
    """Each receiver's two strongest senders: receiver, sender, score, sender, score."""
    rows = []
    for layer, head in top:
        row = np.nan_to_num(scores[layer, head], nan=-1.0)
        first, second = strongest(row, 2)
        rows.append(
            (
                _name((layer, head)),
                _name(first),
                float(row[first]),
                _name(second),
                float(row[second]),
            )
        )
    return rows


def _strongest_pairs(scores: np.ndarray, k: int) -> list[tuple[str, str, float]]:
    """The ``k`` strongest (sender, receiver) pairs of the whole model."""
    flat = np.nan_to_num(scores, nan=-1.0)
    order = np.argsort(-flat, axis=None, kind="stable")[:k]
    return [
        (_name(i[2:]), _name(i[:2]), float(flat[i]))
        for i in (np.unravel_index(j, flat.shape) for j in order)
    ]


def _shared_keys(top: tuple[_Head, ...], config: smollm2.Config) -> list[str]:
    """The induction heads grouped by the K/V head they read, as prose per group."""
    group = config.n_heads // config.n_kv_heads
    groups: dict[tuple[int, int], list[str]] = {}
    for layer, head in sorted(top):
        groups.setdefault((layer, head // group), []).append(_name((layer, head)))
    return [words(g) for g in groups.values() if len(g) > 1]


def _offset_gap(composition: np.ndarray, top: tuple[_Head, ...]) -> float:
    """The largest change, offset 1 against the mean over offsets, of the top heads'
    scores from any sender."""
    rows = np.array([composition[:, layer, head] for layer, head in top])
    return float(np.nanmax(np.abs(rows[:, 0] - rows[:, 1])))


def _recovered(s: _Streaming) -> float:
    """The share of the window's loss of perplexity that the sinks win back."""
    return (s.band_only - s.band_sinks) / (s.band_only - s.full)


def _facts(s: _Studies) -> dict[str, Fact]:
    """The facts the page's sentences state."""
    top, q, wt, st, scan = s.top, s.sequences, s.weights, s.streaming, s.scan
    n = len(top)
    c = wt.composition
    senders = _senders(c[1], top)
    previous = _name(s.previous)
    median = float(np.nanmedian(c[1]))
    dla_all = float(q.dla.max())
    return {
        "few_first": Fact(
            (wt.first[:n] < 0.05).all(),
            f"shares ranked first {wt.first[:n]}",
            says="each induction head puts the token it reads first in rank for under 5% of tokens",
        ),
        "not_above_random": Fact(
            np.median(wt.copying[:n]) <= np.median(wt.copying[n:]),
            f"induction {wt.copying[:n]}, random {wt.copying[n:]}",
            says="the induction heads' median copying score is not above the median of the random heads'",
        ),
        "dla_small": Fact(
            max(q.dla[h] for h in top) < dla_all / 4,
            f"induction {[q.dla[h] for h in top]}, largest {dla_all}",
            says="every induction head's direct logit attribution is under a quarter of the largest head's",
        ),
        "previous_top_two": Fact(
            all(previous in (row[1], row[3]) for row in senders),
            f"{senders}",
            says="the strongest previous-token head is one of the two strongest senders into every induction head",
        ),
        "far_above": Fact(
            all(row[2] > 3 * median for row in senders),
            f"{senders}, median {median}",
            says="each induction head's strongest sender scores over three times the median over all pairs",
        ),
        "offset_small": Fact(
            _offset_gap(c, top) < 0.01,
            f"largest change {_offset_gap(c, top)}",
            says="no induction head's sender score changes by 0.01 or more between offset 1 and the mean over offsets",
            qualitative="a bound: no score moves by a hundredth, below the precision the table prints",
        ),
        "patch_collapses": Fact(
            (q.patched < q.clean / 10).all(),
            f"clean {q.clean}, patched {q.patched}",
            says="patching the previous-token head's write drops every induction score below a tenth of its clean value",
        ),
        "controls_keep": Fact(
            (np.abs(q.controls - q.clean[:, None]) < 0.02).all(),
            f"clean {q.clean}, controls {q.controls}",
            says="patching each control head instead moves no induction score by 0.02 or more",
        ),
        "mean_below_zero": Fact(
            q.mean_top < scan.loss_top,
            f"mean {q.mean_top}, zero {scan.loss_top}",
            says="setting the induction heads to their mean costs less loss than setting them to zero",
        ),
        "mean_still_far": Fact(
            q.mean_top > scan.loss_random.max(),
            f"mean {q.mean_top}, random sets {scan.loss_random}",
            says="setting the induction heads to their mean costs more loss than any random set of as many heads",
        ),
        "previous_alone": Fact(
            q.previous_mean > scan.loss_random.max(),
            f"previous head {q.previous_mean}; random sets {scan.loss_random}",
            says="setting the previous-token head alone to its mean costs more loss than any random set of heads",
        ),
        "moved_below": Fact(
            (q.first_token_moved < q.first_token).sum() > len(q.first_token) / 2,
            f"weights {q.first_token}, moved {q.first_token_moved}",
            says="in more than half of the layers, the first token's share of what moves is below its share of the weight",
            qualitative="a count of layers (printed) of a comparison drawn in the figure above",
        ),
        "still_moves": Fact(
            np.median(q.first_token_moved) > 2 * scan.uniform_first_token,
            f"moved {q.first_token_moved}, even {scan.uniform_first_token}",
            says="the median layer's share of what moves from the first token is over twice an even spread",
        ),
        "band_breaks": Fact(
            st.band_only > 2 * st.full,
            f"{st}",
            says="reading only the window more than doubles the perplexity of reading every earlier token",
        ),
        "sinks_restore": Fact(
            st.full < st.band_sinks < st.band_only and _recovered(st) > 0.75,
            f"{st}",
            says="adding the first tokens to the window puts perplexity between full and window alone, winning back over 75% of the loss",
        ),
    }


def _figures(s: _Studies) -> dict[str, Figure]:
    """The page's three figures; alt texts and captions state computed values."""
    top, q, c = s.top, s.sequences, s.weights.composition[1]
    receivers = top[:2]
    previous = _name(s.previous)
    grids = tuple(c[layer, head, :layer] for layer, head in receivers)
    names = tuple(_name(h) for h in receivers)
    peaks = [
        (_name(np.unravel_index(np.nanargmax(g), g.shape)), float(np.nanmax(g)))
        for g in grids
    ]
    return {
        "composition": Figure(
            "circuits.composition",
            (grids, names, s.previous),
            f"Two heatmaps of K-composition scores, one row per earlier layer and one "
            f"column per head: into {names[0]} the brightest cell is {peaks[0][0]} "
            f"({peaks[0][1]:.2f}), into {names[1]} it is {peaks[1][0]} "
            f"({peaks[1][1]:.2f}); almost every other cell is dim, near "
            f"{np.nanmedian(c):.2f}.",
            f"K-composition into two induction heads from every head of an earlier "
            f"layer, averaged over offsets 1 to {_MAX_OFFSET}; {previous}, the "
            "strongest previous-token head, is framed. Look for the few bright cells "
            "among the dim ones.",
        ),
        "patching": Figure(
            "circuits.patching",
            ([_name(h) for h in top], q.clean, q.patched, q.controls),
            f"Grouped bars for {len(top)} induction heads: the induction score, from "
            f"{q.clean.min():.2f} to {q.clean.max():.2f}, falls to at most "
            f"{q.patched.max():.2f} when {previous}'s write is swapped in their keys, "
            f"and stays within {np.abs(q.controls - q.clean[:, None]).max():.3f} "
            "when a random earlier head's is.",
            f"Induction score of each induction head with its keys recomputed from a "
            f"stream in which one earlier head's write comes from another sequence: "
            f"{previous} (the previous-token head) or {_N_CONTROLS} random earlier "
            "heads (their range). Look at the middle bar of each group.",
        ),
        "sinks": Figure(
            "circuits.sinks",
            (q.first_token, q.first_token_moved, s.scan.uniform_first_token),
            f"Two lines over SmolLM2's {len(q.first_token)} layers: the attention "
            f"weight on the first token (median {np.median(q.first_token):.2f}) and "
            "its share of what the heads move, weight times the norm of the value "
            f"through W_O (median {np.median(q.first_token_moved):.2f}); a dashed "
            f"line at {s.scan.uniform_first_token:.3f}, an even spread.",
            "Per layer, averaged over heads, queries and the repeated sequences: how "
            "much weight the first token gets, and how much of what the heads move "
            "comes from it (Kobayashi et al.'s weight times value norm). Look at the "
            "gap between the two lines, and at the dashed line below both.",
        ),
    }
