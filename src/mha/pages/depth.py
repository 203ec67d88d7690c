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

from dataclasses import dataclass

import numpy as np

from mha.experiments import induction
from mha.experiments.induction_training import D_K, D_MODEL, Shape, Training, train
from mha.pretrained import smollm2
from mha.support.cache import cached
from mha.support.claims import Claim
from mha.support.formatting import percent

HALF = 50  # T: tokens in each copy of a repeated sequence
N_SEQUENCES = 8  # repeated sequences the scores average over
N_ABLATED = 5  # heads removed at once
N_RANDOM_SETS = 10  # random sets of N_ABLATED heads to compare with
N_ABLATION_SEQUENCES = 1  # sequences each ablation is measured on (each is a pass)
SEED = 18

SEEDS = (0, 1, 2)  # training seeds
N_SEEDS = len(SEEDS)
STEPS = 1000
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


@dataclass(frozen=True)
class Trained:
    """The accuracies of every trained model on the held-out sequences."""

    shape: Shape
    accuracy: np.ndarray  # (seeds,)
    final_loss: np.ndarray  # (seeds,) mean loss over the last tenth of training


def _train(shape: Shape) -> Trained:
    run: Training = train(shape, SEEDS, STEPS, BATCH_SIZE)
    tail = run.losses[-STEPS // 10 :].mean(axis=0)
    return Trained(shape, run.accuracy(test_batch()), tail)


def trained() -> dict[str, Trained]:
    """Both shapes trained on every seed (cached): ``{"one": ..., "two": ...}``.

    ```python
    from mha.pages.depth import trained

    result = trained()
    assert result["two"].accuracy.min() > result["one"].accuracy.max()
    ```
    """
    one, two = (cached(_train, shape) for shape in SHAPES)
    return {"one": one, "two": two}


@dataclass(frozen=True)
class Task:
    """What the page prints about the induction task."""

    vocab: int
    length: int
    chance: float
    constructed: float  # accuracy of the built circuit on the held-out sequences
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


def task() -> Task:
    """The induction task's numbers: chance, the circuit, the trained models.

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
        count_guess=count_guess(batch),
        uniform_guess=uniform_guess(),
        one=models["one"],
        two=models["two"],
        n_test_positions=int(batch.scored.sum()),
    )


# --- SmolLM2 ------------------------------------------------------------------------


def repeated_sequences(
    model: smollm2.SmolLM2, rng: np.random.Generator | None = None
) -> np.ndarray:
    """``(N_SEQUENCES, 2 HALF)`` token ids: HALF ids drawn uniformly from the tokens
    that are not control tokens, then the same HALF again (no BOS).

    ``rng`` draws them (``None``: the page's own seed).

    ```python
    from mha.pages.depth import HALF, repeated_sequences
    from mha.pretrained import smollm2

    ids = repeated_sequences(smollm2.load())
    assert (ids[:, :HALF] == ids[:, HALF:]).all()
    ```
    """
    control = set(model.tokenizer.get_added_tokens_decoder())
    allowed = np.array([i for i in range(model.config.vocab_size) if i not in control])
    rng = np.random.default_rng([SEED, 3]) if rng is None else rng
    first = rng.choice(allowed, size=(N_SEQUENCES, HALF))
    return np.concatenate([first, first], axis=1)


def induction_scores(weights: np.ndarray, half: int = HALF) -> np.ndarray:
    """Mean attention of each query t in [T, 2T - 1] on key t - T + 1, per head.

    ``weights (..., n, n)`` with n = 2T; the key t - T + 1 holds the token that came
    after the previous occurrence of the query's token. Returns ``weights.shape[:-2]``.

    ```python
    import numpy as np
    from mha.pages.depth import induction_scores

    perfect = np.zeros((4, 4))
    perfect[2, 1] = perfect[3, 2] = 1  # T = 2: query 2 -> key 1, query 3 -> key 2
    assert induction_scores(perfect, half=2) == 1.0
    ```
    """
    _check_square(weights, 2 * half)
    queries = np.arange(half, 2 * half)
    return weights[..., queries, queries - half + 1].mean(axis=-1)


def previous_token_scores(weights: np.ndarray) -> np.ndarray:
    """Mean attention of each query t in [1, n - 1] on key t - 1, per head.

    ```python
    import numpy as np
    from mha.pages.depth import previous_token_scores

    assert previous_token_scores(np.eye(5, k=-1)) == 1.0
    ```
    """
    _check_square(weights, weights.shape[-1])
    queries = np.arange(1, weights.shape[-1])
    return weights[..., queries, queries - 1].mean(axis=-1)


def _check_square(weights: np.ndarray, n: int) -> None:
    if weights.ndim < 2 or weights.shape[-2:] != (n, n) or n < 2:
        raise ValueError(
            f"weights: expected shape (..., {n}, {n}), got {np.shape(weights)}"
        )


def second_copy_loss(logits: np.ndarray, ids: np.ndarray, half: int = HALF) -> float:
    """Mean next-token loss (nats) of the second copy: queries T .. 2T - 2.

    ```python
    import numpy as np
    from mha.pages.depth import second_copy_loss

    logits = np.zeros((4, 10))  # uniform: log 10 everywhere
    assert np.isclose(second_copy_loss(logits, np.arange(4), half=2), np.log(10))
    ```
    """
    queries = np.arange(half, 2 * half - 1)
    return _loss(logits[queries], np.asarray(ids)[queries + 1])


def first_copy_loss(logits: np.ndarray, ids: np.ndarray, half: int = HALF) -> float:
    """Mean next-token loss (nats) of the first copy: queries 0 .. T - 2.

    ```python
    import numpy as np
    from mha.pages.depth import first_copy_loss

    assert np.isclose(first_copy_loss(np.zeros((4, 10)), np.arange(4), half=2), np.log(10))
    ```
    """
    queries = np.arange(0, half - 1)
    return _loss(logits[queries], np.asarray(ids)[queries + 1])


def _loss(logits: np.ndarray, targets: np.ndarray) -> float:
    """Mean cross-entropy (nats) of ``targets (k,)`` under ``logits (k, vocab)``."""
    rows = np.asarray(logits, dtype=np.float64)
    peak = rows.max(axis=-1, keepdims=True)
    log_z = peak[:, 0] + np.log(np.exp(rows - peak).sum(axis=-1))
    return float(np.mean(log_z - rows[np.arange(len(targets)), targets]))


@dataclass(frozen=True)
class Scan:
    """Everything the page measures on SmolLM2's repeated sequences."""

    induction: np.ndarray  # (layers, heads) mean over the sequences
    previous: np.ndarray  # (layers, heads)
    first_token: np.ndarray  # (layers,) share of attention on token 0, queries t >= 1
    uniform_first_token: float  # that share if every query spread its weight evenly
    stream_norm: np.ndarray  # (layers + 1,) mean |x| entering each block (t >= 1)
    attention_norm: np.ndarray  # (layers,) mean |attention write| (t >= 1)
    mlp_norm: np.ndarray  # (layers,) mean |feed-forward write| (t >= 1)
    first_stream_norm: np.ndarray  # (layers + 1,) |x| of the first token
    loss_first: float  # on the first copy, every sequence
    loss_second: float  # on the second copy, every sequence
    loss_clean: float  # second copy, the ablation sequences, nothing removed
    loss_top: float  # ... with the strongest induction heads removed
    loss_random: np.ndarray  # (N_RANDOM_SETS,) ... with random sets removed
    random_sets: np.ndarray  # (N_RANDOM_SETS, N_ABLATED, 2) (layer, head)


def _scan() -> Scan:
    model = smollm2.load()
    sequences = repeated_sequences(model)
    n_layers, n_heads = model.config.n_layers, model.config.n_heads
    induction_sum = np.zeros((n_layers, n_heads))
    previous_sum = np.zeros((n_layers, n_heads))
    first_token = np.zeros(n_layers)
    stream = np.zeros(n_layers + 1)
    attention = np.zeros(n_layers)
    mlp = np.zeros(n_layers)
    first_stream = np.zeros(n_layers + 1)
    first, second = [], []
    for ids in sequences:
        trace = model.trace(ids)
        w = trace.weights.astype(np.float64)  # (layers, heads, n, n)
        induction_sum += induction_scores(w)
        previous_sum += previous_token_scores(w)
        first_token += w[:, :, 1:, 0].mean(axis=(1, 2))
        stream += np.linalg.norm(trace.stream[:, 1:], axis=-1).mean(axis=-1)
        attention += np.linalg.norm(trace.attention_writes[:, 1:], axis=-1).mean(-1)
        mlp += np.linalg.norm(trace.mlp_writes[:, 1:], axis=-1).mean(axis=-1)
        first_stream += np.linalg.norm(trace.stream[:, 0], axis=-1)
        logits = model.head(trace.stream[-1])
        first.append(first_copy_loss(logits, ids))
        second.append(second_copy_loss(logits, ids))
    k = len(sequences)
    scores = induction_sum / k
    top = strongest(scores, N_ABLATED)
    rng = np.random.default_rng([SEED, 4])
    others = [h for h in np.ndindex(n_layers, n_heads) if h not in set(top)]
    random_sets = np.array(
        [
            [others[i] for i in rng.choice(len(others), N_ABLATED, replace=False)]
            for _ in range(N_RANDOM_SETS)
        ]
    )

    def ablated_loss(heads) -> float:
        mask = np.ones((n_layers, n_heads))
        for layer, head in heads:
            mask[layer, head] = 0.0
        losses = []
        for ids in sequences[:N_ABLATION_SEQUENCES]:
            final = model.trace(ids, mask).stream[-1]  # (n, d_model)
            # the head only where the loss reads it: the second copy's queries
            queries = np.arange(HALF, 2 * HALF - 1)
            losses.append(_loss(model.head(final[queries]), ids[queries + 1]))
        return float(np.mean(losses))

    n = sequences.shape[1]
    return Scan(
        induction=scores,
        previous=previous_sum / k,
        first_token=first_token / k,
        uniform_first_token=float(np.mean(1 / np.arange(2, n + 1))),
        stream_norm=stream / k,
        attention_norm=attention / k,
        mlp_norm=mlp / k,
        first_stream_norm=first_stream / k,
        loss_first=float(np.mean(first)),
        loss_second=float(np.mean(second)),
        loss_clean=float(np.mean(second[:N_ABLATION_SEQUENCES])),
        loss_top=ablated_loss(top),
        loss_random=np.array([ablated_loss(heads) for heads in random_sets]),
        random_sets=random_sets,
    )


def strongest(scores: np.ndarray, k: int) -> list[tuple[int, int]]:
    """The ``k`` heads with the highest ``scores (layers, heads)``, strongest first.

    ```python
    import numpy as np
    from mha.pages.depth import strongest

    assert strongest(np.array([[0.1, 0.9], [0.5, 0.2]]), 2) == [(0, 1), (1, 0)]
    ```
    """
    order = np.argsort(-scores, axis=None, kind="stable")[:k]
    return [tuple(int(i) for i in np.unravel_index(j, scores.shape)) for j in order]


def scan() -> Scan:
    """SmolLM2 on repeated random sequences (cached: about N s of model passes).

    ```python
    from mha.pages.depth import scan

    result = scan()
    assert result.induction.shape == (30, 9) and result.loss_second < result.loss_first
    ```
    """
    return cached(_scan)


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

    assert example_circuit().predict(EXAMPLE[None])[0, -1] == 5  # after the first 3
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
