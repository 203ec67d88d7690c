"""What all-MiniLM-L6-v2's 72 heads look at, and how many can go: ``docs/real-heads.md``.

The head atlas (each head's statistics over the corpus, and its kind) is the library's,
``mha.experiments.head_atlas``, which the position page reads too; the pruning studies
are in ``pruning``.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence

import numpy as np

from mha.data import clark2019, michel2019, voita2019
from mha.experiments import head_grid, minilm_corpus
from mha.experiments.corpus import sentences
from mha.experiments.head_atlas import KINDS, TARGETS, Atlas, atlas
from mha.experiments.head_grid import BROAD, MAJORITY
from mha.experiments.value_norms import value_norms, weighted_by_norm
from mha.pages.real_heads import pruning
from mha.pages.real_heads.pruning import _STEP, _literature_counts, _Pruning
from mha.pretrained import minilm
from mha.support import measured
from mha.support.cache import cached
from mha.support.formatting import words
from mha.support.page import Fact, Figure, Page

_CRICKET, _CAT = range(2)  # positions in Atlas.examples (SEEDS order)


def _payload(texts: Sequence[str], kinds: tuple) -> dict:
    """The heads-grid widget's data on ``texts``, with the atlas's ``kinds``."""
    grid = np.array(kinds, dtype=object)
    found = head_grid.minilm_sentences(texts)
    return head_grid.payload("all-MiniLM-L6-v2", found, grid, tuple(KINDS), False)


def _name(layer: int, head: int) -> str:
    """A head's name, ``L<layer>H<head>``, both from 0."""
    return f"L{layer}H{head}"


def _prose(layers: Sequence[int]) -> str:
    """Layer numbers as prose: "1, 2 and 4"."""
    return words([str(int(layer)) for layer in layers])


@functools.cache
def page() -> Page:
    """What the page prints: the model, the atlas, the pruning studies, the papers."""
    a, p, bench = atlas(), pruning._pruning(), measured.load("minilm")
    typical = {kind: _name(*a.typical(kind)) for kind in a.present()}
    layer, head = a.typical("previous token")
    cls_layers = a.layers("[CLS]")
    worst = int(np.argmin(p.layer_cosine))
    strongest = ("sep", "punctuation", "same_word")
    kinds = tuple(tuple(row) for row in a.kinds)
    every = head_grid.Widget(  # every head on the corpus's short sentences
        cached(_payload, head_grid.texts(), kinds),
        label=f"Every head of all-MiniLM-L6-v2, {a.kinds.shape[0]} layers by "
        f"{a.kinds.shape[1]} heads: choose one to see its attention map",
        caption="A button per head, a row per layer, lettered and coloured by its kind "
        "in the atlas. Choose one to draw its map on the chosen sentence; hover over "
        "or focus a query token to draw its arcs, one line per key, as opaque as its "
        f"weight. Try {typical['previous token']} (a diagonal just below the main "
        f"one), {typical['[CLS]']} (a bright first column) and {typical['broad']} (an "
        "even wash).",
        note="The interactive grid needs JavaScript; the figures above show the "
        "typical head of each kind.",
    )
    return Page(
        model=minilm.load(),
        tolerance=minilm.REFERENCE_TOLERANCE,
        bench=bench,
        seal=measured.Seal.of(bench),
        atlas=a,
        pruned=p,
        clark=clark2019,
        michel=michel2019,
        voita=voita2019,
        voita_share=voita2019.pruned_share(),
        majority=MAJORITY,
        broad=BROAD,
        step=_STEP,
        total_heads=a.kinds.size,
        counts={kind: a.count(kind) for kind in KINDS},
        typical=typical,
        previous_clark=f"{layer + 1}-{head + 1}",  # as Clark et al. count, from 1
        broad_in_first=a.count_in_layer("broad", 0),
        cls_layers=_prose(cls_layers),
        cls_moved=_cls_moved(a),
        parked=a.parked(),
        broad_layers=_prose(a.layers("broad")),
        positional_layers=_prose(
            sorted(set(a.layers("previous token") + a.layers("next token")))
        ),
        cls_layer_shares=tuple(
            float(a.statistics["cls"].mean(axis=1)[lyr]) for lyr in cls_layers
        ),
        strongest={s: _name(*a.strongest(s)) for s in strongest},
        strongest_value={s: float(a.statistics[s].max()) for s in strongest},
        baseline_correct=round(p.baseline_retrieval * p.n_queries),
        worst_layer=worst,
        worst_cosine=p.layer_cosine[worst],
        other_layers_cosine=float(np.delete(p.layer_cosine, worst).min()),
        single_cosine_min=float(p.single_cosine.min()),
        least=_name(*p.order[0]),  # the least damaging head alone, and the most
        most=_name(*p.order[-1]),
        least_damage=p.damage[p.order[0]],
        most_damage=p.damage[p.order[-1]],
        moves=p.largest_retrieval_move(),
        changes=(  # single-head removals that raise and lower retrieval accuracy
            int((p.single_retrieval > p.baseline_retrieval).sum()),
            int((p.single_retrieval < p.baseline_retrieval).sum()),
        ),
        literature=tuple(  # (heads, share, cosine, retrieval): Michel's, Voita's, all
            (count, count / p.n_heads, *p.at(count))
            for count in (*_literature_counts(p.n_heads), p.n_heads)
        ),
        one_query=1 / p.n_queries,
        max_tokens=head_grid.MAX_TOKENS,
        every=every,
        facts=_facts(a, p),
        figures=_figures(a, p),
    )


def _cls_shares(
    texts: Sequence[str], heads: Sequence[tuple[int, int]]
) -> tuple[float, float]:
    """The mean weight of word queries on [CLS] in ``heads`` over ``texts``, and
    [CLS]'s mean share of what those heads move (Kobayashi et al., 2020: weight times
    the norm of the value through W_O, ``mha.experiments.value_norms``).
    """
    if not heads:
        raise ValueError("heads: expected at least one (layer, head), got none")
    model = minilm.load()
    weight = moved = count = 0
    for run in minilm_corpus.runs(texts):  # the atlas's pass
        n = len(run.tokens)
        for layer, head in heads:
            w = run.weights[layer][None]  # (1, h, n, n)
            norms = value_norms(model.layers[layer].attention, run.hidden[layer][None])
            weight += float(w[0, head, 1 : n - 1, 0].sum())
            moved += float(weighted_by_norm(w, norms)[0, head, 1 : n - 1, 0].sum())
            count += n - 2
    return weight / count, moved / count


def _cls_moved(a: Atlas) -> tuple[float, float]:
    """``cls_shares`` of the atlas's [CLS] heads over the corpus, cached."""
    heads = tuple((int(i), int(j)) for i, j in np.argwhere(a.kinds == "[CLS]"))
    return cached(_cls_shares, sentences(), heads)


def _facts(
    a: Atlas, p: _Pruning, cls: tuple[float, float] | None = None
) -> dict[str, Fact]:
    """The facts the page's sentences state about the atlas and the pruning studies."""
    counts = {kind: a.count(kind) for kind in KINDS}
    cls_weight, cls_move = _cls_moved(a) if cls is None else cls
    shift = a.value("previous token") if counts["previous token"] else 0.0
    positional = a.layers("previous token") + a.layers("next token")
    broad0 = a.count_in_layer("broad", 0)
    on_cls, elsewhere = a.parked()
    worst = int(np.argmin(p.layer_cosine))
    others = np.delete(p.layer_cosine, worst)
    damage = 1 - p.layer_cosine
    half = len(p.counts) // 2
    slope = np.diff(p.cumulative_cosine) / np.diff(p.counts)
    moved = np.abs(p.cumulative_retrieval - p.baseline_retrieval).max()
    moved = round(moved * p.n_queries)
    none_of_these = counts["[SEP]"] == counts["punctuation"] == counts["same word"] == 0
    lowest, moves = p.single_cosine.min(), p.largest_retrieval_move()
    return {
        "shift": Fact(
            shift > 0.9,
            f"weight on the previous token {shift:.3f}",
            says="the typical previous-token head puts over 0.9 of its weight on the previous token",
        ),
        "none_of_these": Fact(
            none_of_these,
            f"counts {counts}",
            says="no head is classed as a [SEP], punctuation or same-word head",
        ),
        "cls_dominant": Fact(
            counts["[CLS]"] == max(counts.values()),
            f"{counts}",
            says="[CLS] heads are the most numerous kind",
        ),
        "cls_moves_little": Fact(
            cls_move < cls_weight / 3,
            f"weight {cls_weight}, moved {cls_move}",
            says="the [CLS] heads' share of what moves from [CLS] is under a third of their weight on it",
        ),
        "bottom": Fact(
            bool(positional) and max(positional) <= 1 and broad0 > a.kinds.shape[1] / 2,
            f"positional heads in layers {positional}; {broad0} broad in layer 0",
            says="every positional head is in layer 0 or 1, and more than half of layer 0's heads are broad",
        ),
        "parks_on_cls": Fact(
            (on_cls > elsewhere).all(),
            f"layer means: on [CLS] {on_cls.round(3).tolist()}, on [SEP] and "
            f"punctuation {elsewhere.round(3).tolist()}",
            says="in every layer, [CLS] gets more attention than [SEP] and punctuation together",
        ),
        "single_small": Fact(
            lowest > 0.95,
            f"lowest cosine {lowest:.3f}",
            says="removing any single head leaves every embedding cosine above 0.95",
        ),
        "borderline": Fact(
            moves <= 2,
            f"at most {moves} queries move",
            says="removing any single head moves retrieval by at most two queries",
        ),
        "last_layer": Fact(
            worst == len(p.layer_cosine) - 1,
            f"layer cosines {np.round(p.layer_cosine, 3).tolist()}",
            says="removing a whole layer's heads costs most in the last layer",
        ),
        "several_times": Fact(
            damage[worst] >= 3 * np.delete(damage, worst).max(),
            f"1 - cos by layer {np.round(damage, 3).tolist()}",
            says="the worst layer's damage (1 - cos) is at least three times any other layer's",
        ),
        "others_fine": Fact(
            others.min() > 0.9,
            f"lowest cosine of the other layers {others.min():.3f}",
            says="removing any other layer's heads leaves the cosine above 0.9",
        ),
        "slow_then_fast": Fact(
            slope[:half].mean() > slope[half:].mean(),
            f"mean slope {slope[:half].mean():.4f} then {slope[half:].mean():.4f}",
            says="the cosine's mean slope over the first half of the removals is gentler than over the second",
            qualitative="a change of slope of the curve in the figure above",
        ),
        "retrieval_flat": Fact(
            moved <= 2,
            f"largest move {moved} queries",
            says="removing heads one after another moves retrieval by at most two queries",
            qualitative="a bound on the retrieval curve of the figure above and the table below",
        ),
        "words_themselves": Fact(
            p.at(p.n_heads)[1] > 0.5,
            f"retrieval with no head {p.at(p.n_heads)[1]:.3f}",
            says="with every head removed, retrieval still answers over half of the queries",
        ),
    }


def _figures(a: Atlas, p: _Pruning) -> dict[str, Figure]:
    """The page's figures; their alt texts state what the facts check."""
    layers, heads = a.kinds.shape
    per_layer = [  # each layer's kinds, the most common first, ties by name
        f"layer {i}: "
        + ", ".join(f"{n} {k}" for k, n in Counter(sorted(row)).most_common())
        for i, row in enumerate(a.kinds)
    ]
    brightest = "; ".join(f"{s} {_name(*a.strongest(s))}" for s in TARGETS)
    papers = (
        (michel2019.BERT_PRUNABLE, michel2019.SHORT),
        (voita2019.pruned_share(), voita2019.SHORT),
    )
    return {
        "kinds": Figure(
            "real_heads.kind_grid",
            (a,),
            alt=f"A grid of {layers} layers by {heads} heads, numbered from 0, each "
            "cell coloured and lettered by the head's kind. "
            + "; ".join(per_layer)
            + ".",
            caption="The kind of every head. Look for the one previous-token and the "
            "one next-token head near the bottom, the [CLS] heads filling the middle "
            "layers, and the broad heads of layer 0.",
        ),
        "statistics": Figure(
            "real_heads.statistic_grids",
            (a,),
            alt=f"Seven heatmaps of {layers} layers by {heads} heads, one per "
            f"statistic, on a common 0 to 1 colour scale. The brightest head of each: "
            f"{brightest}.",
            caption="Each statistic for every head. The previous- and next-token "
            "maps have one bright cell each; [CLS] lights up the middle layers; the "
            "[SEP], punctuation and same-word maps stay dark.",
        ),
        "cricket": Figure(
            "real_heads.typical_heads",
            (a, _CRICKET),
            alt="Attention heatmaps of the typical previous-token, next-token, "
            "[CLS], broad and mixed heads on the cricket sentence, one row per query "
            "token.",
            caption="The typical head of each kind on the cricket sentence. Look "
            "for the diagonal just below the main one (previous token), just above it "
            "(next token), the bright first column ([CLS]) and the even wash (broad).",
        ),
        "cat": Figure(
            "real_heads.typical_heads",
            (a, _CAT),
            alt="The same heads on the sentence 'the cat sat on the warm mat .'.",
            caption="The same heads on a shorter sentence: the same patterns.",
        ),
        "damage": Figure(
            "real_heads.pruning_damage",
            (p,),
            alt=f"Left: a {layers} by {heads} heatmap of 1 minus cosine when each "
            f"head alone is removed (largest {(1 - p.single_cosine).max():.3f}). Right: "
            "bars of 1 minus cosine when all of a layer's heads are removed; layer "
            f"{np.argmin(p.layer_cosine)}'s bar is several times as long as any other.",
            caption="What removing heads costs the embeddings. Compare the "
            "single heads (left, all close to zero) with whole layers (right), and "
            f"layer {np.argmin(p.layer_cosine)} with the others.",
        ),
        "cumulative": Figure(
            "real_heads.cumulative_pruning",
            (p, papers),
            alt=f"Two curves against the number of heads removed, from 0 to "
            f"{p.n_heads}. The cosine to the unpruned embeddings falls slowly at first "
            "and faster after about half of the heads are gone; retrieval accuracy "
            "stays within a query or two of its starting value throughout. Dashed and "
            "dotted vertical lines mark the shares of heads that Michel et al. and "
            "Voita et al. pruned.",
            caption="Heads removed one after another, least damaging first. Watch "
            "where the cosine bends down, and how little retrieval moves.",
        ),
    }
