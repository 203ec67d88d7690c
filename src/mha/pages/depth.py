"""Depth: what one attention layer cannot do and two can.

Page: ``docs/depth.md``.

1. The residual stream of SmolLM2-135M-Instruct: how large the stream is at each
   layer, and how much each sublayer (attention, feed-forward) adds to it.
2. The induction task (``mha.experiments.induction``): a circuit of two attention
   layers, built by hand, solves it; trained models (``induction_training``) show that
   two layers of one head learn it and one layer of two heads does not.
3. Induction heads in SmolLM2: on random token sequences repeated once, which heads
   attend to the token after the previous occurrence of the current one, what the
   repeat does to the loss, and what removing those heads does.
4. Attention sinks: how much of each layer's attention goes to the first token.

Layers and heads are numbered from 0: ``L17H3`` is head 3 of layer 17.

```python
from mha.pages.depth import head_label

assert head_label(17, 3) == "L17H3"
```
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from mha.experiments import induction
from mha.experiments.induction_training import (
    D_K,
    D_MODEL,
    Shape,
    Trained,
    train_and_score,
)
from mha.experiments.repeated_tokens import (
    N_ABLATED,
    N_ABLATION_SEQUENCES,
    Scan,
    scan,
    strongest,
)
from mha.support.cache import cached
from mha.support.claims import Claim
from mha.support.formatting import percent

SEED = 18

SEEDS = (0, 1, 2)  # training seeds
N_SEEDS = len(SEEDS)
STEPS = 800
BATCH_SIZE = 32
N_TEST = 2000  # held-out sequences
SHAPES = (Shape(1, 2), Shape(2, 1))


def head_label(layer: int, head: int) -> str:
    """A head's name, layer and head counted from 0: ``L<layer>H<head>``.

    ```python
    from mha.pages.depth import head_label

    assert head_label(0, 8) == "L0H8"
    ```
    """
    return f"L{layer}H{head}"


def layer_label(layer: int) -> str:
    """A layer's name, counted from 0: ``L<layer>``.

    ```python
    from mha.pages.depth import layer_label

    assert layer_label(29) == "L29"
    ```
    """
    return f"L{layer}"


# --- the induction task -------------------------------------------------------------


def test_batch() -> induction.Batch:
    """The held-out sequences every model of the page is scored on.

    ```python
    from mha.pages.depth import N_TEST, test_batch

    assert test_batch().tokens.shape[0] == N_TEST
    ```
    """
    return induction.sample(N_TEST, np.random.default_rng([SEED, 1]))


def uniform_guess() -> float:
    """Accuracy of guessing from counts alone on *uniform* random sequences.

    The guess at each scored position: the token seen most often so far (the current
    token's own occurrence not counted). It uses no order, so one attention layer can
    compute it; on uniform sequences it is far above chance, which is why the task's
    sequences are two shuffles of the vocabulary instead (``count_guess``).

    ```python
    from mha.experiments.induction import VOCAB
    from mha.pages.depth import uniform_guess

    assert uniform_guess() > 2 / VOCAB
    ```
    """
    rng = np.random.default_rng([SEED, 2])
    tokens = rng.integers(0, induction.VOCAB, size=(N_TEST, induction.LENGTH))
    return count_guess(induction.Batch(tokens, induction.targets_of(tokens)))


def count_guess(batch: induction.Batch) -> float:
    """Accuracy on ``batch`` of guessing the most frequent earlier token (ties: lowest id).

    ```python
    from mha.pages.depth import count_guess, test_batch

    assert count_guess(test_batch()) < 0.1  # two shuffles: every count is 1 or 2
    ```
    """
    vocab = induction.VOCAB
    one_hot = batch.tokens[..., None] == np.arange(vocab)  # (B, n, vocab)
    counts = np.cumsum(one_hot, axis=1) - one_hot  # seen before each position
    return induction.accuracy(counts.argmax(axis=-1), batch)


def silenced(circuit: induction.Circuit) -> induction.Circuit:
    """``circuit`` with its previous-token head's write removed (a zero W_O in L0).

    ```python
    from mha.experiments.induction import build
    from mha.pages.depth import silenced, test_batch

    assert silenced(build()).accuracy(test_batch()) < build().accuracy(test_batch())
    ```
    """
    previous = copy.copy(circuit.layers[0])
    previous.w_o = np.zeros_like(previous.w_o)
    return dataclasses.replace(circuit, layers=(previous, circuit.layers[1]))


def trained() -> dict[str, Trained]:
    """Both shapes trained on every seed (cached): ``{"one": ..., "two": ...}``.

    ```python
    from mha.pages.depth import trained

    result = trained()
    assert result["two"].accuracy.min() > result["one"].accuracy.max()
    ```
    """
    batch = test_batch()
    one, two = (
        cached(train_and_score, shape, SEEDS, STEPS, BATCH_SIZE, batch)
        for shape in SHAPES
    )
    return {"one": one, "two": two}


@dataclass(frozen=True)
class Task:
    """What the page prints about the induction task."""

    vocab: int
    length: int
    chance: float
    constructed: float  # accuracy of the built circuit on the held-out sequences
    without_previous: float  # ... with its previous-token head's write removed
    count_guess: float  # the best order-free guess on the task's sequences
    uniform_guess: float  # the same guess on uniform random sequences
    one: Trained
    two: Trained
    n_test_positions: int
    d_k: int = D_K  # width of every trained head
    d_model: int = D_MODEL  # width of the trained models' residual stream

    @property
    def one_below_twice_chance(self) -> bool:
        """Whether every one-layer model stays below twice chance."""
        return bool((self.one.accuracy < 2 * self.chance).all())

    @property
    def two_reach_ninety(self) -> bool:
        """Whether every two-layer model reaches 90%."""
        return bool((self.two.accuracy >= 0.9).all())


@functools.cache
def task() -> Task:
    """The induction task's numbers: chance, the circuit, the trained models
    (computed once per process).

    ```python
    from mha.pages.depth import task

    t = task()
    assert t.constructed > 0.99 and t.one.accuracy.max() < t.two.accuracy.min()
    ```
    """
    batch = test_batch()
    models = trained()
    return Task(
        vocab=induction.VOCAB,
        length=induction.LENGTH,
        chance=1 / induction.VOCAB,
        constructed=induction.build().accuracy(batch),
        without_previous=silenced(induction.build()).accuracy(batch),
        count_guess=count_guess(batch),
        uniform_guess=uniform_guess(),
        one=models["one"],
        two=models["two"],
        n_test_positions=int(batch.scored.sum()),
    )


# --- what the page prints -----------------------------------------------------------


def percents(values: np.ndarray) -> str:
    """Percentages in prose: ``"10.3%, 16.1% and 14.6%"``.

    ```python
    from mha.pages.depth import percents

    assert percents([0.5, 0.25, 0.125]) == "50.0%, 25.0% and 12.5%"
    ```
    """
    texts = [percent(v) for v in np.ravel(values)]
    return texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " and " + texts[-1]


def top_heads(result: Scan) -> list[tuple[str, float]]:
    """The strongest induction heads, strongest first: ``[("L18H6", 0.902), ...]``.

    ```python
    from mha.pages.depth import N_ABLATED, scan, top_heads

    heads = top_heads(scan())
    assert len(heads) == N_ABLATED and heads[0][1] >= heads[-1][1]
    ```
    """
    return [
        (head_label(*h), float(result.induction[h]))
        for h in strongest(result.induction, N_ABLATED)
    ]


def previous_partners(result: Scan) -> list[tuple[str, str, float]]:
    """For each strongest induction head, the best previous-token head below it.

    ``[(induction head, previous-token head in an earlier layer, its score), ...]``:
    K-composition needs the previous token written before the induction head reads it.

    ```python
    from mha.pages.depth import previous_partners, scan

    for head, partner, score in previous_partners(scan()):
        assert int(partner[1:].split("H")[0]) < int(head[1:].split("H")[0])
    ```
    """
    partners = []
    for layer, head in strongest(result.induction, N_ABLATED):
        below = result.previous[:layer]
        best = np.unravel_index(np.argmax(below), below.shape)
        partners.append(
            (head_label(layer, head), head_label(*best), float(below[best]))
        )
    return partners


def head_table(result: Scan) -> list[tuple[str, float, str, float]]:
    """Rows of the page's table: induction head, score, previous-token partner, score.

    ```python
    from mha.pages.depth import N_ABLATED, head_table, scan

    assert len(head_table(scan())) == N_ABLATED
    ```
    """
    return [
        (head, score, partner, partner_score)
        for (head, score), (_, partner, partner_score) in zip(
            top_heads(result), previous_partners(result), strict=True
        )
    ]


def random_median(result: Scan) -> float:
    """Median second-copy loss over the random sets of removed heads.

    ```python
    from mha.pages.depth import random_median, scan

    assert random_median(scan()) > 0
    ```
    """
    return float(np.median(result.loss_random))


def random_range(result: Scan) -> tuple[float, float]:
    """Lowest and highest second-copy loss over the random sets of removed heads.

    ```python
    from mha.pages.depth import random_range, scan

    low, high = random_range(scan())
    assert low <= high
    ```
    """
    return float(result.loss_random.min()), float(result.loss_random.max())


def ablation_scope() -> str:
    """Which sequences the ablation losses are measured on, in words.

    ```python
    from mha.pages.depth import ablation_scope

    assert ablation_scope().startswith("on the first")
    ```
    """
    k = N_ABLATION_SEQUENCES
    return "on the first sequence" if k == 1 else f"on the first {k} sequences"


def ablation_ratio(result: Scan) -> float:
    """How many times the clean second-copy loss the top heads' removal leaves.

    ```python
    from mha.pages.depth import ablation_ratio, scan

    assert ablation_ratio(scan()) > 1
    ```
    """
    return result.loss_top / result.loss_clean


def sink_ratio(result: Scan) -> float:
    """Median over layers of the first token's share, over an even spread's share.

    ```python
    from mha.pages.depth import scan, sink_ratio

    assert sink_ratio(scan()) > 1
    ```
    """
    return float(np.median(result.first_token) / result.uniform_first_token)


def massive_ratio(result: Scan) -> float:
    """Largest norm of the first token's stream over the other tokens' mean, same layer.

    ```python
    from mha.pages.depth import massive_ratio, scan

    assert massive_ratio(scan()) > 1
    ```
    """
    return float(np.max(result.first_stream_norm / result.stream_norm))


def growth(result: Scan) -> float:
    """How many times its norm after the embedding the stream has after the last layer.

    ```python
    from mha.pages.depth import growth, scan

    assert growth(scan()) > 1
    ```
    """
    return float(result.stream_norm[-1] / result.stream_norm[1])


def claims() -> dict[str, Claim]:
    """The page's sentences that compare computed values, each checked or chosen.

    ```python
    from mha.pages.depth import claims

    assert all(claim.holds for claim in claims().values())
    ```
    """
    t, s = task(), scan()
    one, two = t.one.accuracy, t.two.accuracy
    twice = 2 * t.chance
    writes = np.maximum(s.attention_norm, s.mlp_norm)
    louder = [layer_label(i) for i in np.flatnonzero(writes > s.stream_norm[:-1])]
    below_even = np.flatnonzero(s.first_token <= s.uniform_first_token)
    partners = previous_partners(s)
    return {
        "one_layer": Claim(
            "every one-layer model stays below twice chance"
            if t.one_below_twice_chance
            else "the one-layer models do better than chance, some above twice chance, "
            "yet far below the two-layer models",
            holds=one.max() < two.min(),
            because=f"one layer {one}, two layers {two}, twice chance {twice}",
        ),
        "two_layers": Claim(
            "every two-layer model reaches 90% or more"
            if t.two_reach_ninety
            else "not every two-layer model reaches 90%",
            holds=True,
            because=f"two layers {two}",
        ),
        "count_guess": Claim(
            "below twice chance on these sequences, far above it on uniform ones",
            holds=t.count_guess < twice < t.uniform_guess,
            because=f"{t.count_guess} and {t.uniform_guess} against {twice}",
        ),
        "louder": Claim(
            "every sublayer writes less than the stream it joins"
            if not louder
            else "except in "
            + " and ".join(louder)
            + ", each sublayer writes less than the stream it joins",
            holds=True,
            because=f"writes {writes}, stream {s.stream_norm}",
        ),
        "partners": Claim(
            "each of them has a previous-token head in an earlier layer",
            holds=all(score >= 0.5 for _, _, score in partners),
            because=f"{partners}",
        ),
        "second_copy": Claim(
            "far lower",
            holds=s.loss_second < s.loss_first / 2,
            because=f"{s.loss_second} vs {s.loss_first}",
        ),
        "ablation": Claim(
            "more than any random set of as many heads",
            holds=s.loss_top > s.loss_random.max(),
            because=f"{s.loss_top} vs {s.loss_random}",
        ),
        "sinks": Claim(
            "every layer but "
            + " and ".join(layer_label(i) for i in below_even)
            + " puts more weight on it than an even spread would"
            if len(below_even)
            else "every layer puts more weight on it than an even spread would",
            holds=len(below_even) < len(s.first_token) / 2,
            because=f"shares {s.first_token}, even {s.uniform_first_token}",
        ),
    }


EXAMPLE = np.array([3, 0, 5, 1, 4, 2, 1, 5, 0, 3])  # two shuffles of 6 tokens, cut


def example_circuit() -> induction.Circuit:
    """The built circuit for the page's small example: 6 tokens, 10 positions.

    ```python
    from mha.pages.depth import EXAMPLE, example_circuit

    assert example_circuit().predict(EXAMPLE[None])[0, -1] == 0  # what followed the first 3
    ```
    """
    return induction.build(6, len(EXAMPLE))


def figure_text(name: str) -> dict[str, str]:
    """The alt text and caption of the page's figure ``name``: ``{"alt", "caption"}``.

    Every value they mention is computed here.

    ```python
    from mha.pages.depth import figure_text

    assert figure_text("head_scores")["caption"]
    ```
    """
    makers = {
        "residual_norms": _residual_text,
        "circuit_attention": _circuit_text,
        "training": _training_text,
        "head_scores": _head_scores_text,
        "attention_sinks": _sinks_text,
    }
    if name not in makers:
        raise ValueError(f"name: expected one of {sorted(makers)}, got {name!r}")
    return makers[name]()


def _words(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _residual_text() -> dict[str, str]:
    s = scan()
    writes = np.maximum(s.attention_norm, s.mlp_norm)
    louder = [layer_label(i) for i in np.flatnonzero(writes > s.stream_norm[:-1])]
    exception = f" except in {_words(louder)}" if louder else ""
    return {
        "alt": f"Three lines over SmolLM2's {len(s.attention_norm)} layers on a log "
        f"scale: the residual stream's norm grows from {s.stream_norm[1]:.0f} after "
        f"L0's input to {s.stream_norm[-1]:.0f} after the last layer; the norms of "
        f"the attention and feed-forward writes stay below it{exception}.",
        "caption": "The residual stream of SmolLM2-135M-Instruct: mean norm per "
        "token (the first token left out) over the repeated random sequences. Look "
        "at the gap between the top line and the other two: each sublayer adds a "
        "change to a stream that keeps what came before.",
    }


def _circuit_text() -> dict[str, str]:
    circuit = example_circuit()
    answers = circuit.predict(EXAMPLE[None])[0]
    scored = np.flatnonzero(induction.targets_of(EXAMPLE) >= 0)
    queries = _words([str(EXAMPLE[t]) for t in scored])
    found = _words([str(answers[t]) for t in scored])
    sequence = " ".join(str(t) for t in EXAMPLE)
    return {
        "alt": f"Two heatmaps of the built circuit on the sequence {sequence}. Left, "
        "layer 0: each row's weight sits just left of the diagonal (the previous "
        "token). Right, layer 1: in the rows of repeated tokens the weight sits on "
        "the token after the earlier occurrence of the row's token.",
        "caption": f"The built circuit's two heads on a short example "
        f"({example_circuit().space.vocab} tokens). L0H0 looks one position back. "
        f"L1H0, from the second {queries}, looks at the token that followed their "
        f"first occurrence: {found}.",
    }


def _training_text() -> dict[str, str]:
    t = task()
    return {
        "alt": f"Bar chart of held-out accuracy, {len(SEEDS)} seeds per shape: the "
        f"one-layer bars reach {percent(t.one.accuracy.max())} at most, the "
        f"two-layer bars {percent(t.two.accuracy.min())} at least; dotted and "
        "dashed lines mark chance and twice chance.",
        "caption": "Held-out accuracy of each trained model, one bar per seed. The "
        "two shapes have the same attention weights; only stacking lets the second "
        "head read what the first one wrote.",
    }


def _head_scores_text() -> dict[str, str]:
    s = scan()
    n_layers, n_heads = s.induction.shape
    heads = strongest(s.induction, N_ABLATED)
    layers = sorted({layer for layer, _ in heads})
    return {
        "alt": f"Two heatmaps of {n_layers} layers by {n_heads} heads. The induction "
        f"score is near zero almost everywhere and bright at a few heads of "
        f"{_words([layer_label(i) for i in layers])}, brightest at "
        f"{head_label(*heads[0])}; the previous-token score is bright at a few heads "
        "of earlier layers.",
        "caption": "Induction score (left) and previous-token score (right) of every "
        "head of SmolLM2, averaged over the repeated sequences; the strongest "
        "induction heads are framed. Look at where they sit: above the layers of "
        "the strong previous-token heads.",
    }


def _sinks_text() -> dict[str, str]:
    s = scan()
    low = [layer_label(i) for i in np.flatnonzero(s.first_token < 0.1)]
    return {
        "alt": f"Bar chart over the {len(s.first_token)} layers of the weight queries "
        f"put on the first token: under 0.1 in {_words(low) if low else 'no layer'}, "
        f"up to {s.first_token.max():.2f} elsewhere, against "
        f"{s.uniform_first_token:.3f} for an even spread (dashed line).",
        "caption": "The share of attention that goes to the first token, per layer, "
        "averaged over heads and queries. The dashed line is what an even spread "
        "over the visible tokens would give it.",
    }
