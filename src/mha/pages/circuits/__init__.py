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

from mha.experiments import repeated_tokens
from mha.experiments.repeated_tokens import N_ABLATED, Scan, strongest
from mha.pages.circuits import weights as w
from mha.pages.circuits.sequences import (
    _first_value_losses,
    _mean_ablated_loss,
    _Pass,
    _patched_induction,
    _path_patched_losses,
    _Prefix,
    _prefix,
    _run,
)
from mha.pages.circuits.streaming import _Streaming, _streaming, _Variants, _variants
from mha.pretrained import smollm2
from mha.pretrained.smollm2 import rms_norm
from mha.support.cache import cached
from mha.support.formatting import words
from mha.support.page import Fact, Figure, Page

_SEED = 26
_N_RANDOM = 20  # random heads whose OV circuits are scored beside the induction heads
_N_SAMPLE = 1000  # tokens the own-logit rank is measured on
_MAX_OFFSET = 64  # K-composition averaged over offsets 1 .. MAX_OFFSET
_N_SENDERS = 10  # candidate senders: the strongest by K-composition into the heads
_N_FRESH = 8  # fresh repeated sequences the patching is repeated on
_STREAM_TOKENS = 128  # tokens of Markdown the windows are run on
_BAND = 32  # keys in the sliding window
_SINKS = 4  # first tokens kept beside it
_DOCS = Path(__file__).resolve().parents[4] / "docs"
_TEXTS = ("attention.md", "multi-head.md", "position.md", "kv-cache.md")  # the first


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
class _Patching:
    """Induction scores ``(..., receivers, B)`` of the induction heads on each
    sequence, with their keys patched (``patched_induction``); NaN where a sender
    cannot reach a receiver (not in an earlier layer)."""

    clean: np.ndarray  # (receivers, B) nothing patched
    single: np.ndarray  # (senders, receivers, B) each candidate sender alone
    control: np.ndarray  # (controls, receivers, B) each control head alone
    joint: np.ndarray  # (receivers, B) every candidate sender together
    every: np.ndarray  # (receivers, B) every head of an earlier layer together

    def explained(self) -> np.ndarray:
        """Per receiver, the share of what every earlier head's patch removes from
        its score (mean over sequences) that the candidates together remove."""
        clean = self.clean.mean(-1)
        return (clean - self.joint.mean(-1)) / (clean - self.every.mean(-1))


def _patching(
    model: smollm2.SmolLM2,
    p: _Pass | _Prefix,
    top: tuple[_Head, ...],
    senders: tuple[_Head, ...],
    controls: tuple[_Head, ...],
) -> _Patching:
    last = max(layer for layer, _ in top)
    every = tuple(np.ndindex(last, model.config.n_heads))
    sets = [[], *([h] for h in senders + controls), list(senders), list(every)]
    scores = _patched_induction(model, p, top, sets)
    n = len(senders)
    return _Patching(
        clean=scores[0],
        single=scores[1 : 1 + n],
        control=scores[1 + n : -2],
        joint=scores[-2],
        every=scores[-1],
    )


@dataclass(frozen=True)
class _Sequences:
    """What the repeated sequences show (means over them, unless per sequence)."""

    first_token: np.ndarray  # (layers,) attention weight on the first token
    first_token_moved: np.ndarray  # (layers,) its share of what moves
    dla: np.ndarray  # (layers, h) direct logit attribution to the repeated token
    mean_top: float  # second-copy loss, the induction heads mean-ablated
    previous_mean: float  # ... the previous-token head alone mean-ablated
    patching: _Patching  # on the page's sequences
    fresh: _Patching  # on N_FRESH fresh ones
    paths: np.ndarray  # (4, B) second-copy loss: clean, every path, direct, later
    first_values: np.ndarray  # (2, B) ... the first token's values zeroed, mean

    @property
    def clean(self) -> np.ndarray:
        """(receivers,) each induction head's score, mean over the sequences."""
        return self.patching.clean.mean(-1)

    @property
    def patched(self) -> np.ndarray:
        """(receivers,) ... its keys patched at the previous-token head (the first
        candidate sender)."""
        return self.patching.single[0].mean(-1)

    @property
    def controls(self) -> np.ndarray:
        """(receivers, controls) ... at each control head (NaN: cannot reach)."""
        return self.patching.control.mean(-1).T


def _sequences(
    top: tuple[_Head, ...], senders: tuple[_Head, ...], controls: tuple[_Head, ...]
) -> _Sequences:
    model = smollm2.load()
    p = _run(model, repeated_tokens.passes())  # the depth page's passes, read again
    rng = np.random.default_rng([_SEED, 3])
    fresh = repeated_tokens.repeated_sequences(model, rng)[:_N_FRESH]
    last = max(layer for layer, _ in top)
    paths = _path_patched_losses(model, p, top)  # its every-path row: mean ablation
    return _Sequences(
        first_token=p.first_token,
        first_token_moved=p.first_token_moved,
        dla=p.dla,
        mean_top=float(paths[1].mean()),
        previous_mean=_mean_ablated_loss(model, p, [senders[0]]),
        patching=_patching(model, p, top, senders, controls),
        fresh=_patching(model, _prefix(model, fresh, last), top, senders, controls),
        paths=paths,
        first_values=_first_value_losses(model, p.ids),
    )


def _markdown_ids(name: str = _TEXTS[0]) -> tuple[int, ...]:
    """The first ``STREAM_TOKENS`` + 1 tokens of the site's page ``name`` (Markdown
    source; the attention page by default), its front matter (the page's description
    for the home page) left out."""
    text = (_DOCS / name).read_text(encoding="utf-8")
    if text.startswith("---\n"):
        text = text[text.index("\n---\n", 4) + len("\n---\n") :]
    return tuple(smollm2.load().encode(text)[: _STREAM_TOKENS + 1])


@dataclass(frozen=True)
class _Studies:
    """The three cached studies and the heads they are about."""

    scan: Scan
    top: tuple[_Head, ...]
    previous: _Head
    senders: tuple[_Head, ...]  # the candidate senders, the previous-token head first
    controls: tuple[_Head, ...]  # the other heads of the senders' layers
    weights: _Weights
    sequences: _Sequences
    streaming: _Streaming  # on the first of TEXTS
    variants: _Variants  # ... other windows
    texts: tuple[_Streaming, ...]  # every one of TEXTS, the first included


def _candidates(
    composition: np.ndarray, top: tuple[_Head, ...], previous: _Head
) -> tuple[_Head, ...]:
    """The previous-token head, then the ``N_SENDERS`` other heads of layers below the
    last induction head's that score highest by K-composition ``(layers, h, layers,
    h)`` into any induction head."""
    rows = np.stack([composition[layer, head] for layer, head in top])
    best = np.nan_to_num(rows, nan=-1.0).max(axis=0)
    for layer, head in (*top, previous):
        best[layer, head] = -1.0
    return (previous, *strongest(best, _N_SENDERS))


def _controls(
    top: tuple[_Head, ...], senders: tuple[_Head, ...], n_heads: int
) -> tuple[_Head, ...]:
    """Like for like: every other head of the layers of the two strongest senders
    (neither an induction head nor a candidate)."""
    layers = sorted({layer for layer, _ in senders[:2]})
    return tuple(
        (layer, head)
        for layer in layers
        for head in range(n_heads)
        if (layer, head) not in top and (layer, head) not in senders
    )


@functools.cache
def _studies() -> _Studies:
    """Every study of the page, from the cache (the depth page's scan picks the heads).
    Those that do not read the scan first: a cold build's second process, reaching
    this page while the first computes the scan, computes them meanwhile."""
    texts = tuple(cached(_streaming, _markdown_ids(t), _BAND, _SINKS) for t in _TEXTS)
    variants = cached(_variants, _markdown_ids(), _BAND, _SINKS)
    scan = repeated_tokens.scan()
    top = tuple(strongest(scan.induction, N_ABLATED))
    previous = tuple(strongest(scan.previous, 1)[0])
    n_layers, n_heads = scan.induction.shape
    rng = np.random.default_rng([_SEED, 2])
    others = [h for h in np.ndindex(n_layers, n_heads) if h not in top]
    picked = rng.choice(len(others), _N_RANDOM, replace=False)
    randoms = tuple(others[i] for i in picked)
    weights = cached(_weights, top + randoms)
    senders = _candidates(weights.composition[1], top, previous)
    controls = _controls(top, senders, n_heads)
    return _Studies(
        scan=scan,
        top=top,
        previous=previous,
        senders=senders,
        controls=controls,
        weights=weights,
        sequences=cached(_sequences, top, senders, controls),
        streaming=texts[0],
        variants=variants,
        texts=texts,
    )


@functools.cache
def page() -> Page:
    """What the page prints: the studies, facts and figures."""
    s = _studies()
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
        n_controls=len(s.controls),
        senders_named=[_name(h) for h in s.senders],
        second=_name(s.senders[1]),
        n_candidates=len(s.senders) - 1,
        second_reaches=[_name(h) for h in top if h[0] > s.senders[1][0]],
        second_kept=[  # the share of its mean score each head it reaches keeps
            float(r)
            for r in q.patching.single[1].mean(-1) / q.patching.clean.mean(-1)
            if np.isfinite(r)
        ],
        patch_rows=_patch_rows(s),
        n_fresh=_N_FRESH,
        explained=[float(p.explained().min()) for p in (q.patching, q.fresh)],
        strongest_control=_strongest_control(s),
        others_drop=float(max(_drops(p)[0][2:].max() for p in (q.patching, q.fresh))),
        path_rows=list(
            zip(
                (
                    "unchanged",
                    "mean write on every path",
                    "mean write on the direct path only",
                    "mean write through later layers only",
                ),
                (_spread(row) for row in q.paths),
                strict=True,
            )
        ),
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
        recovered_ppl=_recovered(s.streaming, nats=False),
        n_texts=len(_TEXTS),
        text_rows=[
            (
                name,
                t.full,
                t.band_only,
                t.band_sinks,
                _recovered(t),
                _recovered(t, nats=False),
            )
            for name, t in zip(_TEXTS, s.texts, strict=True)
        ],
        recovered_range=[min(map(_recovered, s.texts)), max(map(_recovered, s.texts))],
        later_kept=s.variants.later_kept,
        wide=s.variants.wide,
        wide_keys=_BAND + _SINKS,
        first_values=[_spread(row) for row in (q.paths[0], *q.first_values)],
        first_costs=[_spread(row - q.paths[0]) for row in q.first_values],
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


def _spread(values: np.ndarray) -> tuple[float, float, float]:
    """Mean, minimum and maximum over the sequences (NaN ignored)."""
    return tuple(float(f(values)) for f in (np.nanmean, np.nanmin, np.nanmax))


def _drops(p: _Patching) -> tuple[np.ndarray, np.ndarray]:
    """How much each candidate's and each control's patch lowers each receiver's
    score, mean over the sequences: ``(senders, receivers)``, ``(controls,
    receivers)``; NaN where it cannot reach."""
    clean = p.clean.mean(-1)
    return clean - p.single.mean(-1), clean - p.control.mean(-1)


def _patch_rows(s: _Studies) -> list[tuple[str, str, list, list]]:
    """One row per patched head: its name, its role, then per receiver the score's
    mean, minimum and maximum over the page's sequences and over the fresh ones
    (``None`` where it cannot reach)."""
    q = s.sequences

    def cells(scores: np.ndarray) -> list:
        return [None if np.isnan(r).all() else _spread(r) for r in scores]

    rows = [("none", "unpatched", cells(q.patching.clean), cells(q.fresh.clean))]
    for i, head in enumerate(s.senders):
        rows.append(
            (
                _name(head),
                "candidate",
                cells(q.patching.single[i]),
                cells(q.fresh.single[i]),
            )
        )
    for i, head in enumerate(s.controls):
        rows.append(
            (
                _name(head),
                "control",
                cells(q.patching.control[i]),
                cells(q.fresh.control[i]),
            )
        )
    return rows


def _strongest_control(s: _Studies) -> tuple[str, str, float]:
    """The control whose patch lowers a score most (on either set of sequences): its
    name, the receiver's, and the drop."""
    best = ("", "", -np.inf)
    for p in (s.sequences.patching, s.sequences.fresh):
        drops = np.nan_to_num(_drops(p)[1], nan=-np.inf)
        c, r = np.unravel_index(drops.argmax(), drops.shape)
        if drops[c, r] > best[2]:
            best = (_name(s.controls[c]), _name(s.top[r]), float(drops[c, r]))
    return best


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


def _recovered(s: _Streaming, nats: bool = True) -> float:
    """The share of the window's loss that the sinks win back: in nats (the mean
    loss per token), or in perplexity."""
    f = np.log if nats else float
    return float((f(s.band_only) - f(s.band_sinks)) / (f(s.band_only) - f(s.full)))


def _facts(s: _Studies) -> dict[str, Fact]:
    """The facts the page's sentences state."""
    top, q, wt, st, scan = s.top, s.sequences, s.weights, s.streaming, s.scan
    n = len(top)
    c = wt.composition
    senders = _senders(c[1], top)
    previous = _name(s.previous)
    median = float(np.nanmedian(c[1]))
    dla_all = float(q.dla.max())
    both = (q.patching, q.fresh)
    second = _name(s.senders[1])
    clean, _, direct, later = q.paths
    zero, mean = q.first_values
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
            all((p.single[0].mean(-1) < p.clean.mean(-1) / 10).all() for p in both),
            f"clean {[p.clean.mean(-1) for p in both]}, "
            f"patched {[p.single[0].mean(-1) for p in both]}",
            says=f"patching {previous}'s write into the induction heads' keys drops each "
            "one's mean score below a tenth of its unpatched score, on the page's "
            "sequences and on fresh ones",
        ),
        "second_halves": Fact(
            all(
                np.isfinite(p.single[1]).any()
                and np.nanmax(p.single[1].mean(-1) / p.clean.mean(-1)) < 0.5
                for p in both
            ),
            f"patched/clean {[p.single[1].mean(-1) / p.clean.mean(-1) for p in both]}",
            says=f"patching {second}'s write leaves every induction head it reaches "
            "below half its unpatched mean score, on the page's sequences and on "
            "fresh ones",
        ),
        "others_small": Fact(
            all(np.nanmax(_drops(p)[0][2:]) < 0.1 for p in both),
            f"drops {[_drops(p)[0][2:] for p in both]}",
            says="patching any other candidate sender alone lowers no induction head's "
            "mean score by 0.1 or more, on either set of sequences",
        ),
        "controls_below": Fact(
            all(np.nanmax(_drops(p)[1]) < np.nanmin(_drops(p)[0][1]) / 2 for p in both),
            f"control drops {[_drops(p)[1] for p in both]}, "
            f"{second}'s {[_drops(p)[0][1] for p in both]}",
            says=f"no control head's patch lowers an induction score by half as much as "
            f"{second}'s smallest drop on the heads it reaches, on either set of "
            "sequences",
        ),
        "together": Fact(
            all((p.explained() > 0.95).all() for p in both),
            f"explained {[p.explained() for p in both]}",
            says="the candidates patched together remove over 95% of what every earlier "
            "head patched together removes from each induction head's mean score, on "
            "either set of sequences",
        ),
        "later_layers": Fact(
            bool(
                ((later - clean) > 1).all()
                and ((later - clean) > 10 * (direct - clean)).all()
            ),
            f"clean {clean}, direct only {direct}, later layers only {later}",
            says="mean-ablating the induction heads on the paths through later layers "
            "costs over a nat on every sequence and over ten times what the direct "
            "path to the logits costs",
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
            all(t.band_only > 2 * t.full for t in s.texts),
            f"{s.texts}",
            says="on every text, the window alone more than doubles the perplexity",
        ),
        "sinks_restore": Fact(
            all(
                t.full < t.band_sinks < t.band_only and _recovered(t) > 0.5
                for t in s.texts
            ),
            f"recovered in nats {[_recovered(t) for t in s.texts]}",
            says="on every text, the first tokens kept beside the window win back more "
            "than half of the window's loss in nats",
        ),
        "first_matter": Fact(
            min(s.variants.later_kept, s.variants.wide) > 2 * st.band_sinks,
            f"{s.variants}, first tokens kept {st.band_sinks}",
            says="keeping the next tokens instead of the first, or widening the window by "
            "as many keys, leaves over twice the perplexity of keeping the first",
        ),
        "sink_bias": Fact(
            bool(
                (zero - clean).mean() > 1
                and (mean - clean).mean() < (zero - clean).mean() / 5
            ),
            f"clean {clean}, first values zeroed {zero}, replaced by their mean {mean}",
            says="zeroing the first token's values costs over a nat on average over the "
            "sequences, and replacing them by their mean under a fifth of that",
        ),
    }


def _figures(s: _Studies) -> dict[str, Figure]:
    """The page's three figures; alt texts and captions state computed values."""
    top, q, c = s.top, s.sequences, s.weights.composition[1]
    second, control = _name(s.senders[1]), _strongest_control(s)
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
            (
                [_name(h) for h in top],
                q.clean,
                np.stack([q.patched, q.patching.single[1].mean(-1)]),
                [previous, second],
                q.controls,
            ),
            f"Grouped bars for {len(top)} induction heads: the induction score, from "
            f"{q.clean.min():.2f} to {q.clean.max():.2f}, falls to at most "
            f"{q.patched.max():.2f} when {previous}'s write is swapped in their keys, "
            f"to {np.nanmin(q.patching.single[1].mean(-1)):.2f}-"
            f"{np.nanmax(q.patching.single[1].mean(-1)):.2f} for the heads {second} "
            f"reaches when its write is, and drops by at most {control[2]:.2f} "
            f"({control[0]} into {control[1]}) when a control head's is.",
            f"Induction score of each induction head with its keys recomputed from a "
            f"stream in which one earlier head's write comes from another sequence: "
            f"{previous} (the previous-token head), {second} (the strongest sender "
            f"by weights; no bar where it cannot reach) or one of {len(s.controls)} control "
            "heads of the same "
            "layers (their mean and range). Look at the second and third bars of each "
            "group.",
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
