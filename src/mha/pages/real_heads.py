"""What each of all-MiniLM-L6-v2's 72 heads looks at, measured over a small corpus.

Page: ``docs/real-heads.md``.

For every head, each statistic is averaged over every word token of every sentence
of ``mha.experiments.corpus`` as a query ([CLS] and [SEP] are keys, not queries):

- ``previous``, ``next``: the weight on the token just before / just after;
- ``cls``, ``sep``: the weight on [CLS] / on [SEP];
- ``punctuation``: the total weight on punctuation tokens;
- ``same_word``: the total weight on the other occurrences of the query's own token
  (averaged over the queries whose token occurs more than once in the sentence);
- ``entropy``: the entropy of the query's distribution, in nats, and ``spread``, that
  entropy as a fraction of the uniform distribution's, log n (0 = all weight on one
  token, 1 = spread evenly over the sentence).

``classify`` names each head by the rule of ``KINDS``: a head whose mean weight on
one target reaches ``MAJORITY`` is of that target's kind (the largest, if several);
otherwise it is ``broad`` if its spread reaches ``BROAD``, else ``mixed``.

```python
from mha.pages.real_heads import atlas

result = atlas()
assert result.kinds.shape == (6, 12)
assert result.count("previous token") >= 1
```
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mha.experiments import head_grid
from mha.experiments.corpus import SEEDS, sentences
from mha.experiments.pruning import literature_counts, pruning
from mha.support.cache import cached
from mha.support.claims import Claim

MAJORITY = 0.5  # a target kind needs at least half of the head's attention on average
BROAD = 0.75  # a broad head's entropy is at least this fraction of the uniform one
CRICKET, CAT = range(2)  # positions in Atlas.examples (SEEDS order)
FIRST_LAYER = 0  # layers are numbered from 0

# kind -> the statistic that defines it, in the order the page lists them
KINDS: dict[str, str] = {
    "previous token": "previous",
    "next token": "next",
    "[CLS]": "cls",
    "[SEP]": "sep",
    "punctuation": "punctuation",
    "same word": "same_word",
    "broad": "spread",
    "mixed": "",  # no statistic: none of the rules above applies
}
TARGETS = ("previous", "next", "cls", "sep", "punctuation", "same_word")
STATISTICS = (*TARGETS, "entropy", "spread")


def is_punctuation(token: str) -> bool:
    """True for a token made only of punctuation marks, such as "," or "...".

    ```python
    from mha.pages.real_heads import is_punctuation

    assert is_punctuation(",") and is_punctuation("...") and not is_punctuation("47th")
    ```
    """
    return bool(token) and all(c in string.punctuation for c in token)


def head_name(layer: int, head: int) -> str:
    """A head's name on this site, ``L<layer>H<head>``, both counted from 0.

    ```python
    from mha.pages.real_heads import head_name

    assert head_name(1, 8) == "L1H8"  # layer index 1, head index 8
    ```
    """
    return f"L{layer}H{head}"


def clark_name(layer: int, head: int) -> str:
    """The same head as Clark et al. (2019) write it: layer-head, both counted from 1.

    ```python
    from mha.pages.real_heads import clark_name

    assert clark_name(1, 8) == "2-9"
    ```
    """
    return f"{layer + 1}-{head + 1}"


def head_statistics(
    tokens: Sequence[Sequence[str]], weights: Sequence[np.ndarray]
) -> dict[str, np.ndarray]:
    """Every statistic of ``STATISTICS`` per head, ``(layers, heads)`` each.

    ``tokens[s]`` are sentence s's n tokens, [CLS] first and [SEP] last;
    ``weights[s]`` its attention ``(layers, heads, n, n)``. Averages are taken over
    all word-token queries of all sentences together.

    ```python
    import numpy as np
    from mha.pages.real_heads import head_statistics

    tokens = ["[CLS]", "a", "b", "a", "[SEP]"]
    previous = np.eye(5, k=-1)[None, None]  # (1 layer, 1 head, 5, 5)
    previous[..., 0, 0] = 1  # [CLS] attends to itself
    stats = head_statistics([tokens], [previous])
    assert stats["previous"][0, 0] == 1 and stats["next"][0, 0] == 0
    assert stats["cls"][0, 0] == 1 / 3  # only "a" (the first word) looks at [CLS]
    assert stats["entropy"][0, 0] == 0
    ```
    """
    if len(tokens) != len(weights) or not tokens:
        raise ValueError(
            f"tokens, weights: expected one weight array per sentence, got "
            f"{len(tokens)} token lists and {len(weights)} arrays"
        )
    sums = {name: np.zeros(weights[0].shape[:-2]) for name in STATISTICS}
    n_queries = n_repeated = 0
    for s, (toks, w) in enumerate(zip(tokens, weights, strict=True)):
        n = len(toks)
        if w.shape != (*sums["cls"].shape, n, n) or n < 3:
            raise ValueError(
                f"weights[{s}]: expected shape {(*sums['cls'].shape, n, n)} for "
                f"{n} tokens ([CLS], at least one word, [SEP]), got {w.shape}"
            )
        w = np.asarray(w, dtype=np.float64)
        q = np.arange(1, n - 1)  # word tokens as queries
        rows = w[..., q, :]  # (layers, heads, queries, n)
        punctuation = [j for j in q if is_punctuation(toks[j])]
        entropy = -(rows * np.log(np.where(rows > 0, rows, 1))).sum(-1)
        sums["previous"] += w[..., q, q - 1].sum(-1)
        sums["next"] += w[..., q, q + 1].sum(-1)
        sums["cls"] += rows[..., 0].sum(-1)
        sums["sep"] += rows[..., n - 1].sum(-1)
        sums["punctuation"] += rows[..., punctuation].sum((-1, -2))
        sums["entropy"] += entropy.sum(-1)
        sums["spread"] += entropy.sum(-1) / np.log(n)
        for i in q:
            same = [j for j in q if j != i and toks[j] == toks[i]]
            if same:
                sums["same_word"] += w[..., i, same].sum(-1)
                n_repeated += 1
        n_queries += len(q)
    means = {name: total / n_queries for name, total in sums.items()}
    means["same_word"] = sums["same_word"] / max(n_repeated, 1)
    return means


def classify(statistics: dict[str, np.ndarray]) -> np.ndarray:
    """The kind of every head, ``(layers, heads)`` strings, by the rule of ``KINDS``.

    ```python
    import numpy as np
    from mha.pages.real_heads import STATISTICS, classify

    stats = {name: np.zeros((1, 3)) for name in STATISTICS}
    stats["previous"][0, 0] = 0.9
    stats["spread"][0, 1] = 0.8
    assert classify(stats).tolist() == [["previous token", "broad", "mixed"]]
    ```
    """
    targets = np.stack([statistics[name] for name in TARGETS])  # (targets, L, H)
    names = [kind for kind, stat in KINDS.items() if stat in TARGETS]
    strongest = np.array(names, dtype=object)[targets.argmax(axis=0)]
    broad = np.where(statistics["spread"] >= BROAD, "broad", "mixed")
    kinds = np.where(targets.max(axis=0) >= MAJORITY, strongest, broad)
    return kinds.astype(object)


@dataclass(frozen=True)
class Example:
    """One seed sentence's tokens and every head's attention on it."""

    text: str
    tokens: tuple[str, ...]
    weights: np.ndarray  # (layers, heads, n, n)


@dataclass(frozen=True)
class Atlas:
    """The statistics and kinds of every head, and its attention on the seeds."""

    statistics: dict[str, np.ndarray]  # name -> (layers, heads)
    kinds: np.ndarray  # (layers, heads) of str
    examples: tuple[Example, ...]  # the seed sentences
    n_sentences: int
    n_queries: int  # word tokens over the corpus

    def count(self, kind: str) -> int:
        """How many heads are of ``kind`` (one of ``KINDS``)."""
        _check_kind(kind)
        return int((self.kinds == kind).sum())

    def heads(self, kind: str) -> list[tuple[int, int]]:
        """``(layer, head)`` of every head of ``kind``, layer by layer."""
        _check_kind(kind)
        return [(int(i), int(j)) for i, j in np.argwhere(self.kinds == kind)]

    def count_in_layer(self, kind: str, layer: int) -> int:
        """How many of ``layer``'s heads are of ``kind``."""
        return sum(1 for lyr, _ in self.heads(kind) if lyr == layer)

    def layers(self, kind: str) -> list[int]:
        """The layers that have at least one head of ``kind``, in order."""
        return sorted({layer for layer, _ in self.heads(kind)})

    def present(self) -> list[str]:
        """The kinds that at least one head has, in the order of ``KINDS``."""
        return [kind for kind in KINDS if self.count(kind)]

    def typical(self, kind: str) -> tuple[int, int]:
        """The head of ``kind`` with the highest value of the statistic defining it.

        ``mixed`` heads have no defining statistic: the typical one shown is the
        most focused, the one with the lowest spread (attention that follows
        content rather than position or a fixed token).
        """
        heads = self.heads(kind)
        if not heads:
            raise ValueError(f"kind: no head is of kind {kind!r}")
        score = self.statistics[KINDS[kind] or "spread"]
        sign = 1 if KINDS[kind] else -1
        return max(heads, key=lambda head: sign * score[head])

    def strongest(self, statistic: str) -> tuple[int, int]:
        """``(layer, head)`` with the highest mean of ``statistic``."""
        values = self.statistics[_check_statistic(statistic)]
        return tuple(int(i) for i in np.unravel_index(values.argmax(), values.shape))

    def layer_means(self, statistic: str) -> np.ndarray:
        """``(layers,)``: ``statistic`` averaged over each layer's heads."""
        return self.statistics[_check_statistic(statistic)].mean(axis=1)

    def value(self, kind: str) -> float:
        """The defining statistic (for ``mixed``: the spread) of ``kind``'s typical head."""
        return float(self.statistics[KINDS[kind] or "spread"][self.typical(kind)])


def compute(texts: Sequence[str], seeds: Sequence[str]) -> Atlas:
    """Run all-MiniLM-L6-v2 on ``texts`` and build the atlas (a second or two).

    ``seeds`` (a subset of ``texts``) are kept whole for the heatmaps.

    ```python
    from mha.pages.real_heads import compute

    small = compute(["the cat sat .", "a dog ran to the gate ."], ["the cat sat ."])
    assert small.n_queries == 4 + 7 and small.examples[0].tokens[1] == "the"
    ```
    """
    from mha.pretrained import minilm

    model = minilm.load()
    batch = model.batch(list(texts))
    weights = model.forward(batch).weights  # (layers, B, h, n, n)
    per_sentence = [
        weights[:, s, :, : len(toks), : len(toks)]
        for s, toks in enumerate(batch.tokens)
    ]
    stats = head_statistics(batch.tokens, per_sentence)
    examples = tuple(
        Example(text, batch.tokens[i], per_sentence[i])
        for text in seeds
        for i in [list(texts).index(text)]
    )
    n_queries = sum(len(toks) - 2 for toks in batch.tokens)
    return Atlas(stats, classify(stats), examples, len(texts), n_queries)


def atlas() -> Atlas:
    """The atlas of the project's corpus, computed once per code version (cached).

    ```python
    from mha.pages.real_heads import atlas

    assert atlas().n_sentences >= 30
    ```
    """
    return cached(compute, sentences(), SEEDS)


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {list(KINDS)}, got {kind!r}")


def _check_statistic(statistic: str) -> str:
    if statistic not in STATISTICS:
        raise ValueError(
            f"statistic: expected one of {list(STATISTICS)}, got {statistic!r}"
        )
    return statistic


# --- what the page prints -------------------------------------------------------------


def layer_list(layers: Sequence[int]) -> str:
    """Layer numbers as prose: ``[1, 2, 4]`` -> "1, 2 and 4".

    ```python
    from mha.pages.real_heads import layer_list

    assert layer_list([1, 2, 4]) == "1, 2 and 4" and layer_list([3]) == "3"
    ```
    """
    words = [str(int(layer)) for layer in layers]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def named(layer_head: tuple[int, int]) -> str:
    """``head_name`` of a ``(layer, head)`` pair.

    ```python
    from mha.pages.real_heads import named

    assert named((0, 2)) == "L0H2"
    ```
    """
    return head_name(*layer_head)


@dataclass(frozen=True)
class Values:
    """Every value the page prints that is not an attribute of the atlas or study."""

    total_heads: int
    counts: dict[str, int]  # kind -> heads of that kind
    previous: str  # the typical previous-token head, named
    previous_clark: str  # the same head as Clark et al. name it
    next: str
    cls: str
    broad: str
    cls_layers: str  # "1, 2, 3 and 4"
    broad_layers: str
    positional_layers: str
    cls_layer_shares: tuple[float, ...]  # [CLS]'s share in each [CLS] layer
    strongest: dict[str, str]  # statistic -> strongest head, named
    strongest_value: dict[str, float]
    baseline_correct: int  # queries the whole model answers
    worst_layer: int  # whose heads, removed together, cost most
    other_layers_cosine: float  # the lowest cosine when another layer's heads go
    single_cosine_min: float  # the lowest cosine with one head removed
    least: str  # least damaging single head, named
    most: str
    literature: tuple[tuple[int, float, float, float], ...]  # count, share, cos, retr
    one_query: float  # the share one query is of the retrieval score


def values() -> Values:
    """The page's values, from the cached atlas and pruning studies.

    ```python
    from mha.pages.real_heads import values

    v = values()
    assert v.total_heads == 72 and v.previous.startswith("L0H")
    ```
    """
    a, p = atlas(), pruning()
    layers, heads = a.kinds.shape
    worst = int(np.argmin(p.layer_cosine))
    others = np.delete(p.layer_cosine, worst)
    counts = (*literature_counts(p.n_heads), p.n_heads)
    cls_layers = a.layers("[CLS]")
    return Values(
        total_heads=layers * heads,
        counts={kind: a.count(kind) for kind in KINDS},
        previous=named(a.typical("previous token")),
        previous_clark=clark_name(*a.typical("previous token")),
        next=named(a.typical("next token")),
        cls=named(a.typical("[CLS]")),
        broad=named(a.typical("broad")),
        cls_layers=layer_list(cls_layers),
        broad_layers=layer_list(a.layers("broad")),
        positional_layers=layer_list(
            sorted(set(a.layers("previous token") + a.layers("next token")))
        ),
        cls_layer_shares=tuple(float(a.layer_means("cls")[lyr]) for lyr in cls_layers),
        strongest={
            s: named(a.strongest(s)) for s in ("sep", "punctuation", "same_word")
        },
        strongest_value={
            s: float(a.statistics[s].max()) for s in ("sep", "punctuation", "same_word")
        },
        baseline_correct=round(p.baseline_retrieval * p.n_queries),
        worst_layer=worst,
        other_layers_cosine=float(others.min()),
        single_cosine_min=float(p.single_cosine.min()),
        least=named(p.least_damaging()),
        most=named(p.most_damaging()),
        literature=tuple((count, count / p.n_heads, *p.at(count)) for count in counts),
        one_query=1 / p.n_queries,
    )


def claims() -> dict[str, Claim]:
    """The page's sentences about the atlas and the pruning studies, checked.

    ```python
    from mha.pages.real_heads import claims

    assert all(c.holds for c in claims().values())
    ```
    """
    a, p = atlas(), pruning()
    layers = a.kinds.shape[0]
    counts = {kind: a.count(kind) for kind in KINDS}
    positional = a.layers("previous token") + a.layers("next token")
    worst = int(np.argmin(p.layer_cosine))
    others = np.delete(p.layer_cosine, worst)
    damage = 1 - p.layer_cosine
    half = len(p.counts) // 2
    slope = np.diff(p.cumulative_cosine) / np.diff(p.counts)
    retrieval_move = np.abs(p.cumulative_retrieval - p.baseline_retrieval).max()
    return {
        "shift": Claim(
            "it is almost a hard-wired shift by one",
            a.value("previous token") > 0.9,
            f"its weight on the previous token {a.value('previous token'):.3f}",
        ),
        "none_of_these": Claim(
            "No [SEP], punctuation or same-word head.",
            counts["[SEP]"] == counts["punctuation"] == counts["same word"] == 0,
            f"counts {counts}",
        ),
        "cls_dominant": Claim(
            "the dominant kind",
            counts["[CLS]"] == max(counts.values()),
            f"counts {counts}",
        ),
        "bottom": Claim(
            "positional heads sit at the bottom of the network, and the lowest layer "
            "attends broadly",
            max(positional) <= 1
            and a.count_in_layer("broad", 0) > a.kinds.shape[1] / 2,
            f"positional heads in layers {positional}; "
            f"{a.count_in_layer('broad', 0)} broad heads in layer 0",
        ),
        "parks_on_cls": Claim(
            "this model parks it on **[CLS]** instead: in every layer, [CLS] gets more "
            "of the attention than [SEP] and punctuation together",
            bool(
                (
                    a.layer_means("cls")
                    > a.layer_means("sep") + a.layer_means("punctuation")
                ).all()
            ),
            f"layer means: [CLS] {np.round(a.layer_means('cls'), 3).tolist()}, "
            f"[SEP] {np.round(a.layer_means('sep'), 3).tolist()}, "
            f"punctuation {np.round(a.layer_means('punctuation'), 3).tolist()}",
        ),
        "single_small": Claim(
            "Removing any single head leaves the embeddings almost where they were",
            p.single_cosine.min() > 0.95,
            f"lowest cosine {p.single_cosine.min():.3f}",
        ),
        "borderline": Claim(
            "which says more about a few borderline queries than about the heads",
            p.largest_retrieval_move() <= 2,
            f"at most {p.largest_retrieval_move()} queries move",
        ),
        "last_layer": Claim(
            "the last" if worst == layers - 1 else "not the last",
            True,
            f"layer cosines {np.round(p.layer_cosine, 3).tolist()}",
        ),
        "several_times": Claim(
            "several times",
            damage[worst] >= 3 * np.delete(damage, worst).max(),
            f"1 - cos by layer {np.round(damage, 3).tolist()}",
        ),
        "slow_then_fast": Claim(
            "falls slowly at first and faster after about half of the heads are gone",
            slope[:half].mean() > slope[half:].mean(),
            f"mean slope {slope[:half].mean():.4f} then {slope[half:].mean():.4f}",
        ),
        "retrieval_flat": Claim(
            "retrieval accuracy stays within a query or two of its starting value "
            "throughout",
            round(retrieval_move * p.n_queries) <= 2,
            f"largest move {round(retrieval_move * p.n_queries)} queries",
        ),
        "words_themselves": Claim(
            "Much of this small task can be solved from the words themselves",
            p.at(p.n_heads)[1] > 0.5,
            f"retrieval with no head {p.at(p.n_heads)[1]:.3f}",
        ),
        "others_fine": Claim(
            "any other layer's heads can all go",
            others.min() > 0.9,
            f"lowest cosine of the other layers {others.min():.3f}",
        ),
    }


def figure_texts() -> dict[str, dict[str, str]]:
    """Alt text and caption of each figure of the page, from the values.

    ```python
    from mha.pages.real_heads import figure_texts

    assert set(figure_texts()) == {"kinds", "statistics", "cricket", "cat", "damage",
                                   "cumulative"}
    ```
    """
    a, p, c = atlas(), pruning(), claims()
    layers, heads = a.kinds.shape
    per_layer = []
    for layer in range(layers):
        kinds, n = np.unique(a.kinds[layer], return_counts=True)
        order = np.argsort(-n, kind="stable")
        per_layer.append(
            f"layer {layer}: " + ", ".join(f"{n[i]} {kinds[i]}" for i in order)
        )
    worst = int(np.argmin(p.layer_cosine))
    return {
        "kinds": {
            "alt": f"A grid of {layers} layers by {heads} heads, numbered from 0, each "
            "cell coloured and lettered by the head's kind. "
            + "; ".join(per_layer)
            + ".",
            "caption": "The kind of every head. Look for the one previous-token and the "
            "one next-token head near the bottom, the [CLS] heads filling the middle "
            "layers, and the broad heads of layer 0.",
        },
        "statistics": {
            "alt": f"Seven heatmaps of {layers} layers by {heads} heads, one per "
            "statistic, on a common 0 to 1 colour scale. The brightest head of each: "
            + "; ".join(
                f"{s} {head_name(*a.strongest(s))}"
                for s in ("previous", "next", "cls", "sep", "punctuation", "same_word")
            )
            + ".",
            "caption": "Each statistic for every head. The previous- and next-token "
            "maps have one bright cell each; [CLS] lights up the middle layers; the "
            "[SEP], punctuation and same-word maps stay dark.",
        },
        "cricket": {
            "alt": "Attention heatmaps of the typical previous-token, next-token, "
            "[CLS], broad and mixed heads on the cricket sentence, one row per query "
            "token.",
            "caption": "The typical head of each kind on the cricket sentence. Look "
            "for the diagonal just below the main one (previous token), just above it "
            "(next token), the bright first column ([CLS]) and the even wash (broad).",
        },
        "cat": {
            "alt": "The same five heads on the sentence 'the cat sat on the warm mat .'.",
            "caption": "The same heads on a shorter sentence: the same patterns.",
        },
        "damage": {
            "alt": f"Left: a {layers} by {heads} heatmap of 1 minus cosine when each "
            f"head alone is removed (largest {(1 - p.single_cosine).max():.3f}). Right: "
            "bars of 1 minus cosine when all of a layer's heads are removed; layer "
            f"{worst}'s bar is {c['several_times'].text} as long as any other.",
            "caption": "What removing heads costs the embeddings. Compare the "
            "single heads (left, all close to zero) with whole layers (right), and "
            f"layer {worst} with the others.",
        },
        "cumulative": {
            "alt": f"Two curves against the number of heads removed, from 0 to "
            f"{p.n_heads}. The cosine to the unpruned embeddings "
            f"{c['slow_then_fast'].text}; {c['retrieval_flat'].text}. Dashed and dotted "
            "vertical lines mark the shares of heads that Michel et al. and Voita et "
            "al. pruned.",
            "caption": "Heads removed one after another, least damaging first. Watch "
            "where the cosine bends down, and how little retrieval moves.",
        },
    }


# --- every head, interactive (the section "Explore every head") -----------------------


def every_head() -> head_grid.Widget:
    """The widget of every head on the corpus's short sentences: each head's map and
    arcs, lettered and coloured by its kind in the atlas (data cached).

    ```python
    from mha.pages.real_heads import KINDS, atlas, every_head

    widget = every_head()
    assert widget.n_heads == 72 and widget.nbytes <= 150_000
    assert widget.counts == {kind: atlas().count(kind) for kind in KINDS}
    ```
    """
    a = atlas()
    layers, heads = a.kinds.shape
    data = cached(
        head_grid.minilm_payload,
        head_grid.texts(),
        tuple(tuple(row) for row in a.kinds),
        tuple(KINDS),
    )
    return head_grid.Widget(
        data,
        label=f"Every head of all-MiniLM-L6-v2, {layers} layers by {heads} heads: "
        "choose one to see its attention map",
        caption="A button per head, a row per layer, lettered and coloured by its kind "
        "in the atlas. Choose one to draw its map on the chosen sentence; hover over "
        "or focus a query token to draw its arcs, one line per key, as opaque as its "
        f"weight. Try {head_name(*a.typical('previous token'))} (a diagonal just "
        f"below the main one), {head_name(*a.typical('[CLS]'))} (a bright first "
        f"column) and {head_name(*a.typical('broad'))} (an even wash).",
        note="The interactive grid needs JavaScript; the figures above show the "
        "typical head of each kind.",
    )
