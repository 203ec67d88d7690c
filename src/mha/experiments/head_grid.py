"""Every head of a real model on a few short sentences, as data for the heads-grid widget.

The real-heads (all-MiniLM-L6-v2) and real-gqa-model (SmolLM2-135M-Instruct) pages embed
``payload(...)`` as JSON, drawn by ``docs/assets/js/model-heads.js``: weights as 8-bit
``round(255 w)`` in base64 (a causal model's: only the keys each query sees). Heads get
kinds by the atlas's rule, ``classify``; SmolLM2's from ``causal_statistics``.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mha.experiments.corpus import sentences
from mha.pretrained import minilm, smollm2
from mha.support.cache import cached

MAX_TOKENS = 16  # a sentence's tokens, in either model: its map fits a phone
COUNT = 6  # sentences per widget
LEVELS = 255  # 8-bit weights: round(LEVELS * w)
MAJORITY = 0.5  # a target kind needs at least half of the head's attention on average
BROAD = 0.75  # a broad head's entropy is at least this fraction of the uniform one

# a causal model's kinds and the statistic that defines each
CAUSAL_KINDS: dict[str, str] = {
    "previous token": "previous",
    "first token": "first",
    "broad": "spread",
    "mixed": "",
}

# what a kind means, for the widget's panel
MEANINGS: dict[str, str] = {
    "previous token": "most of its weight on the token just before the query",
    "next token": "most of its weight on the token just after the query",
    "[CLS]": "most of its weight on [CLS], the token that opens the input",
    "[SEP]": "most of its weight on [SEP], the token that closes the input",
    "punctuation": "most of its weight on punctuation",
    "same word": "most of its weight on other occurrences of the query's token",
    "first token": "most of its weight on the first token, the sink that plays [CLS]'s part",
    "broad": "no single target; its weight spread evenly over the sentence",
    "mixed": "no single target, and not spread evenly: a blend",
}


@dataclass(frozen=True)
class Sentence:
    """One sentence's tokens and every head's attention on it."""

    text: str
    tokens: tuple[str, ...]
    weights: np.ndarray  # (layers, heads, n, n), rows sum to 1


def _short_texts(texts: Sequence[str], count: int, limit: int) -> tuple[str, ...]:
    """The first ``count`` of ``texts`` with at most ``limit`` tokens in both models."""
    encoder, decoder = minilm.load(), smollm2.load()
    sizes = ((len(encoder.batch([t]).tokens[0]), len(decoder.encode(t))) for t in texts)
    return tuple(t for t, n in zip(texts, sizes, strict=True) if max(n) <= limit)[
        :count
    ]


def texts() -> tuple[str, ...]:
    """The sentences both widgets show: the corpus's first short ones, seeds first.

    ```python
    from mha.experiments.head_grid import COUNT, texts

    assert len(texts()) == COUNT and texts()[0] == "the cat sat on the warm mat ."
    ```
    """
    return cached(_short_texts, sentences(), COUNT, MAX_TOKENS)


def minilm_sentences(texts: Sequence[str]) -> tuple[Sentence, ...]:
    """all-MiniLM-L6-v2's tokens and attention on each of ``texts``.

    ```python
    from mha.experiments.head_grid import minilm_sentences

    (s,) = minilm_sentences(["the cat sat ."])
    assert s.tokens[0] == "[CLS]" and s.weights.shape == (6, 12, 6, 6)
    ```
    """
    model = minilm.load()
    batch = model.batch(list(texts))
    weights = model.forward(batch).weights  # (layers, B, h, n, n), padded keys at 0
    return tuple(
        Sentence(text, tuple(toks), weights[:, s, :, : len(toks), : len(toks)])
        for s, (text, toks) in enumerate(zip(texts, batch.tokens, strict=True))
    )


def causal_statistics(sentences: Sequence[Sentence]) -> dict[str, np.ndarray]:
    """Each head's ``(layers, heads)`` mean over every query but the first of its
    weight on the ``previous`` token, on the ``first`` (the sink), and its ``spread``:
    the entropy as a fraction of the uniform one over the keys the query sees.

    ```python
    import numpy as np
    from mha.experiments.head_grid import Sentence, causal_statistics

    shift = np.eye(4, k=-1)[None, None]
    shift[..., 0, 0] = 1  # the first token sees only itself
    stats = causal_statistics([Sentence("a b c d", tuple("abcd"), shift)])
    assert stats["previous"][0, 0] == 1 and stats["spread"][0, 0] == 0
    assert stats["first"][0, 0] == 1 / 3  # only query 1's previous token is the first
    ```
    """
    if not sentences:
        raise ValueError("sentences: expected at least one sentence, got none")
    shape = sentences[0].weights.shape[:2]
    sums = {name: np.zeros(shape) for name in ("previous", "first", "spread")}
    n_queries = 0
    for s, sentence in enumerate(sentences):
        w, n = sentence.weights, len(sentence.tokens)
        if w.shape != (*shape, n, n) or n < 2:
            raise ValueError(
                f"sentences[{s}].weights: expected shape {(*shape, n, n)} for {n} "
                f"tokens (at least 2), got {w.shape}"
            )
        q = np.arange(1, n)
        rows = w[..., q, :]
        entropy = -(rows * np.log(np.where(rows > 0, rows, 1))).sum(-1)
        sums["previous"] += w[..., q, q - 1].sum(-1)
        sums["first"] += rows[..., 0].sum(-1)
        sums["spread"] += (entropy / np.log(q + 1)).sum(-1)
        n_queries += len(q)
    return {name: total / n_queries for name, total in sums.items()}


def classify(statistics: dict[str, np.ndarray], kinds: dict[str, str]) -> np.ndarray:
    """Every head's kind, ``(layers, heads)``: the target of ``kinds`` (kind ->
    statistic) with ``MAJORITY`` of the weight (the largest), else ``broad`` (spread
    >= ``BROAD``) or ``mixed``.

    ```python
    import numpy as np
    from mha.experiments.head_grid import CAUSAL_KINDS, classify

    stats = {"previous": np.array([[0.9, 0.1, 0.1]]), "first": np.array([[0.1, 0.8, 0.2]]),
             "spread": np.array([[0.1, 0.2, 0.9]])}
    found = classify(stats, CAUSAL_KINDS)
    assert found.tolist() == [["previous token", "first token", "broad"]]
    ```
    """
    names = [kind for kind, stat in kinds.items() if stat not in ("spread", "")]
    targets = np.stack([statistics[kinds[kind]] for kind in names])  # (targets, L, H)
    strongest = np.array(names, dtype=object)[targets.argmax(axis=0)]
    rest = np.where(statistics["spread"] >= BROAD, "broad", "mixed")
    return np.where(targets.max(axis=0) >= MAJORITY, strongest, rest).astype(object)


def payload(
    model: str,
    sentences: Sequence[Sentence],
    kinds: np.ndarray,
    kind_names: Sequence[str],
    causal: bool,
) -> dict:
    """The widget's data: the model, every head's kind, each sentence's tokens and
    weights (8-bit, base64).

    ```python
    import numpy as np
    from mha.experiments.head_grid import Sentence, payload

    w = np.full((1, 2, 2, 2), 0.5)
    data = payload("toy", [Sentence("a b", ("a", "b"), w)],
                   np.array([["broad", "mixed"]], dtype=object), ["broad", "mixed"], True)
    assert data["kinds"] == [[0, 1]] and data["sentences"][0]["tokens"] == ["a", "b"]
    assert data["sentences"][0]["weights"] == "gICAgICA"  # 2 heads x 3 visible weights
    ```
    """
    kind_names = list(kind_names)
    layers, heads = kinds.shape
    unknown = sorted(set(kinds.ravel()) - set(kind_names))
    if unknown:
        raise ValueError(f"kinds: {unknown} not among kind_names {kind_names}")
    packed = []
    for s, sentence in enumerate(sentences):
        n, w = len(sentence.tokens), np.asarray(sentence.weights, dtype=np.float64)
        if w.shape != (layers, heads, n, n):
            raise ValueError(
                f"sentences[{s}].weights: expected {(layers, heads, n, n)}, got {w.shape}"
            )
        if not np.all(np.isfinite(w) & (w >= -1e-6) & (w <= 1 + 1e-6)):
            raise ValueError(
                f"sentences[{s}].weights: expected finite values in [0, 1]"
            )
        levels = np.rint(np.clip(w, 0, 1) * LEVELS).astype(np.uint8)
        if causal:
            levels = levels[..., *np.tril_indices(n)]
        packed.append(base64.b64encode(levels.tobytes()).decode("ascii"))
    return {
        "model": model,
        "layers": layers,
        "heads": heads,
        "causal": causal,
        "levels": LEVELS,
        "kindNames": kind_names,
        "meanings": [MEANINGS[k] for k in kind_names],
        "kinds": [[kind_names.index(k) for k in row] for row in kinds],
        "sentences": [
            {"text": s.text, "tokens": list(s.tokens), "weights": weights}
            for s, weights in zip(sentences, packed, strict=True)
        ],
    }


def payload_json(data: dict) -> str:
    """``data`` as compact JSON, safe inside a ``<script>`` element.

    ```python
    from mha.experiments.head_grid import payload_json

    assert payload_json({"t": "</script>"}) == '{"t":"<\\\\/script>"}'
    ```
    """
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).replace(
        "</", "<\\/"
    )


def smollm2_payload(texts: Sequence[str], model_digest: str) -> dict:
    """SmolLM2-135M-Instruct's widget data on ``texts``, its heads classified here;
    ``model_digest`` puts the model file in the cache key.

    ```python
    from mha.experiments.head_grid import CAUSAL_KINDS, smollm2_payload
    from mha.pretrained import smollm2

    data = smollm2_payload(["the cat sat ."], smollm2.gguf_digest())
    assert (data["layers"], data["heads"], data["causal"]) == (30, 9, True)
    assert data["kindNames"] == list(CAUSAL_KINDS)
    assert data["sentences"][0]["tokens"] == ["the", " cat", " sat", " ."]
    ```
    """
    if model_digest != smollm2.gguf_digest():
        raise ValueError(
            f"model_digest: expected the installed file's {smollm2.gguf_digest()}, "
            f"got {model_digest}"
        )
    model, chosen = smollm2.load(), []
    for text in texts:
        ids = model.encode(text)
        tokens = tuple(model.decode([i]) for i in ids)
        chosen.append(Sentence(text, tokens, np.asarray(model.attentions(ids), float)))
    kinds = classify(causal_statistics(chosen), CAUSAL_KINDS)
    return payload("SmolLM2-135M-Instruct", chosen, kinds, list(CAUSAL_KINDS), True)


@dataclass(frozen=True)
class Widget:
    """One page's widget: its data, accessible name, caption and no-script note.

    ```python
    from mha.experiments.head_grid import Widget

    w = Widget({"layers": 1, "heads": 2, "kindNames": ["broad"], "kinds": [[0, 0]],
                "sentences": []}, "Every head", "Choose a head.", "Needs JavaScript.")
    assert w.n_heads == 2 and w.counts == {"broad": 2} and 'class="mha-heads"' in w.html
    ```
    """

    data: dict
    label: str
    caption: str
    note: str

    @property
    def html(self) -> str:
        """The container, the JSON, the no-script ``note`` and the ``caption``."""
        return (
            f'<div class="mhg-figure"><div class="mha-heads" role="group" '
            f'aria-label="{html.escape(self.label)}">'
            f'<script type="application/json" class="mhg-data">'
            f"{payload_json(self.data)}</script><noscript><p>"
            f"{html.escape(self.note)}</p></noscript></div>"
            f'<p class="mhg-caption">{html.escape(self.caption)}</p></div>'
        )

    @property
    def nbytes(self) -> int:
        """Bytes of the embedded JSON (UTF-8)."""
        return len(payload_json(self.data).encode())

    @property
    def n_heads(self) -> int:
        """Heads in the grid, layers x heads."""
        return self.data["layers"] * self.data["heads"]

    @property
    def n_sentences(self) -> int:
        """Sentences the chooser offers."""
        return len(self.data["sentences"])

    @property
    def counts(self) -> dict[str, int]:
        """How many heads are of each kind, in the order of ``kindNames``."""
        flat = [k for row in self.data["kinds"] for k in row]
        return {name: flat.count(i) for i, name in enumerate(self.data["kindNames"])}
