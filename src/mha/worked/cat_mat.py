"""Four constructed heads on "the cat sat on the warm mat .", and what one or two heads do.

The heads are built by hand, not trained: each head's W_Q and W_K compute one
relation. The features (``features()``, ``(8, 64)``) are four blocks of sixteen
columns: position one-hot (0-15), part of speech over ``POS_TAGS`` (16-31), word over
``VOCAB`` (32-47), the delimiter flag (48). Head i (d_k = 16) owns columns
``16*i:16*(i+1)`` of W_Q and W_K:

- neighbour: a query at position i matches keys at positions i-1 and i+1;
- part of speech: a query matches keys with the same tag (itself included);
- same word: a query matches the *other* occurrences of its word: the query carries
  its word and its position, the key its word and minus its position, so a token's
  match with itself cancels; a word that occurs once matches nothing and spreads;
- sink: every query is the same vector, and only the delimiter's key points its way.

``STRENGTH`` is q·k of a match (0 otherwise); W_V = W_O = identity. The one- and
two-head layers are the same matrices with n_heads 1 or 2: one softmax over the sum.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from mha.layer import MultiHeadAttention
from mha.support.validate import positive_int

TOKENS = ("the", "cat", "sat", "on", "the", "warm", "mat", ".")
TAGS = ("DET", "NOUN", "VERB", "ADP", "DET", "ADJ", "NOUN", "PUNCT")  # one per token
POS_TAGS = ("DET", "NOUN", "VERB", "ADP", "ADJ", "PUNCT")
VOCAB = ("the", "cat", "sat", "on", "warm", "mat", ".")
DELIMITERS = (".",)

BLOCK = 16  # columns per feature block = d_k of each of the four heads
D_MODEL = 4 * BLOCK
HEADS = ("neighbour", "part of speech", "same word", "sink")
HEAD_COUNTS = (1, 2, 4)
# q·k between a query and a key that match in a head's relation (0 when they do not).
# The sink is the strongest signal, the neighbour band next.
STRENGTH = {"neighbour": 20.0, "part of speech": 12.0, "same word": 16.0, "sink": 24.0}
# The sink strengths the heads explorer's slider offers (STRENGTH["sink"] among them).
SINK_STRENGTHS = (0.0, 8.0, 16.0, 24.0, 32.0)

_POSITION, _TAG, _WORD, _DELIMITER = (BLOCK * b for b in range(4))  # first columns


def index_of(
    word: str, words: tuple[str, ...] | None = None, name: str = "TOKENS"
) -> int:
    """Where ``word`` is in ``words`` (this module's ``name``), or a ``ValueError``
    naming the stale input.

    ```python
    import pytest
    from mha.worked.cat_mat import index_of

    assert index_of("cat") == 1
    with pytest.raises(ValueError, match="stale worked example"):
        index_of("dog")
    ```
    """
    words = TOKENS if words is None else words
    if word not in words:
        raise ValueError(
            f"mha.worked.cat_mat.{name}: expected {word!r}, which the explorer reads, "
            f"got {words}: a stale worked example; put the word back or change "
            "what reads it (mha.worked.cat_mat, mha.pages.heads_explorer)"
        )
    return words.index(word)


def features() -> np.ndarray:
    """The token features ``x``, shape ``(8 tokens, d_model = 64)``, one-hot blocks.

    ```python
    from mha.worked.cat_mat import TOKENS, features

    x = features()
    assert x.shape == (8, 64)
    assert x[TOKENS.index("."), 48] == 1  # the delimiter flag
    assert (x[0] == x[4])[16:].all()  # the two "the" differ only in position
    ```
    """
    x = np.zeros((len(TOKENS), D_MODEL))
    for i, (word, tag) in enumerate(zip(TOKENS, TAGS, strict=True)):
        x[i, _POSITION + i] = 1.0
        x[i, _TAG + index_of(tag, POS_TAGS, "POS_TAGS")] = 1.0
        x[i, _WORD + index_of(word, VOCAB, "VOCAB")] = 1.0
        x[i, _DELIMITER] = float(word in DELIMITERS)
    return x


@dataclass(frozen=True)
class Projections:
    """The layer's four matrices, each ``(d_model, d_model)``, applied as ``x @ w``."""

    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray


def strengths(sink: float | None = None) -> dict[str, float]:
    """``STRENGTH``, with the sink's strength replaced by ``sink`` if given.

    ```python
    from mha.worked.cat_mat import STRENGTH, strengths

    assert strengths() == STRENGTH and strengths(0.0)["sink"] == 0.0
    ```
    """
    chosen = dict(STRENGTH)
    if sink is not None:
        if not isinstance(sink, int | float) or isinstance(sink, bool):
            raise TypeError(f"sink: expected a number, got {type(sink).__name__}")
        if not np.isfinite(sink) or sink < 0:
            raise ValueError(f"sink: expected a finite number >= 0, got {sink!r}")
        chosen["sink"] = float(sink)
    return chosen


def _head_block(head: str, s: float) -> tuple[np.ndarray, np.ndarray]:
    """One head's W_Q and W_K columns, each ``(d_model, d_k = 16)``, match strength s."""
    w_q, w_k = np.zeros((D_MODEL, BLOCK)), np.zeros((D_MODEL, BLOCK))
    n = len(TOKENS)
    positions = slice(_POSITION, _POSITION + n)
    if head == "neighbour":
        w_q[positions, :n] = s * np.eye(n)  # query of position i: s·e_i
        w_k[positions, :n] = np.eye(n, k=1) + np.eye(n, k=-1)  # key: e_(j-1) + e_(j+1)
    elif head == "part of speech":
        tags = slice(_TAG, _TAG + len(POS_TAGS))
        w_q[tags, : len(POS_TAGS)] = s * np.eye(len(POS_TAGS))  # query: s·e_tag
        w_k[tags, : len(POS_TAGS)] = np.eye(len(POS_TAGS))  # key: e_tag
    elif head == "same word":
        v = len(VOCAB)
        words = slice(_WORD, _WORD + v)
        w_q[words, :v] = s * np.eye(v)  # query: s·e_word ...
        w_k[words, :v] = np.eye(v)  # key: e_word ...
        w_q[positions, v : v + n] = s * np.eye(n)  # ... and s·e_position
        w_k[positions, v : v + n] = -np.eye(n)  # ... and -e_position: self cancels
    elif head == "sink":
        w_q[positions, 0] = s  # every position asks the same: s·e_0
        w_k[_DELIMITER, 0] = 1.0  # only a delimiter's key is e_0
    else:
        raise ValueError(f"head: expected one of {HEADS}, got {head!r}")
    return w_q, w_k


def projections(strength: Mapping[str, float] | None = None) -> Projections:
    """W_Q and W_K: the four heads' blocks side by side; W_V = W_O = identity.
    ``strength`` maps each of ``HEADS`` to its match strength (``STRENGTH`` if None).

    ```python
    import numpy as np
    from mha.worked.cat_mat import features, projections

    x = features()
    p = projections()
    q, k = x @ p.w_q, x @ p.w_k
    sink = q[:, 48:64] @ k[:, 48:64].T  # head 3's dot products, (8, 8)
    assert (sink[:, 7] == 24).all() and (sink[:, :7] == 0).all()
    word = q[:, 32:48] @ k[:, 32:48].T  # same word: the two "the", not themselves
    assert word[0, 4] == word[4, 0] == 16 and (np.diag(word) == 0).all()
    ```
    """
    strength = STRENGTH if strength is None else strength
    if not isinstance(strength, Mapping) or set(strength) != set(HEADS):
        raise ValueError(
            f"strength: expected a mapping with keys {HEADS}, got {strength!r}"
        )
    w_q, w_k = zip(*(_head_block(h, float(strength[h])) for h in HEADS), strict=True)
    return Projections(np.hstack(w_q), np.hstack(w_k), np.eye(D_MODEL), np.eye(D_MODEL))


def _head_count(n_heads: int) -> int:
    """``n_heads`` if the four heads split into that many, else a ``ValueError``."""
    if positive_int("n_heads", n_heads) not in HEAD_COUNTS:
        raise ValueError(f"n_heads: expected one of {HEAD_COUNTS}, got {n_heads!r}")
    return int(n_heads)


def layer(
    n_heads: int = 4, strength: Mapping[str, float] | None = None
) -> MultiHeadAttention:
    """The ``MultiHeadAttention`` layer with the constructed weights (``strength``
    as in ``projections``): the same four matrices for 1, 2 or 4 heads.

    ```python
    import numpy as np
    from mha.worked.cat_mat import layer

    one, four = layer(1), layer(4)
    assert one.d_k == 64 and four.d_k == 16
    assert np.array_equal(one.w_q, four.w_q)
    ```
    """
    mha, p = MultiHeadAttention(D_MODEL, _head_count(n_heads)), projections(strength)
    mha.w_q, mha.w_k, mha.w_v, mha.w_o = p.w_q, p.w_k, p.w_v, p.w_o
    return mha


def attention_weights(
    n_heads: int = 4, strength: Mapping[str, float] | None = None
) -> np.ndarray:
    """The layer's attention weights on the sentence, shape ``(n_heads, 8, 8)``.

    ```python
    from mha.worked.cat_mat import attention_weights

    w = attention_weights(4)
    assert w.shape == (4, 8, 8)
    assert w[3, :, 7].min() > 0.98  # the sink head: almost everything on "."
    assert (w[2, 1] == 1 / 8).all()  # "cat" occurs once: same word spreads evenly
    ```
    """
    _, weights = layer(n_heads, strength)(features())
    return weights


def head_names(n_heads: int = 4) -> tuple[str, ...]:
    """What each head of the ``n_heads`` layer holds, e.g. ``"neighbour + part of speech"``.

    ```python
    from mha.worked.cat_mat import head_names

    assert head_names(2) == ("neighbour + part of speech", "same word + sink")
    ```
    """
    n_heads = _head_count(n_heads)
    group = len(HEADS) // n_heads
    return tuple(" + ".join(HEADS[i * group : (i + 1) * group]) for i in range(n_heads))


@dataclass(frozen=True)
class Patterns:
    """The numbers the page quotes about the heads (weights are attention weights)."""

    sink_min: float  # least weight any row of the sink head puts on "."
    neighbour_min: float  # least total weight a neighbour-head row gives its neighbours
    the_to_the: tuple[float, ...]  # first "the" -> second "the", per head of four
    cat_to_mat: tuple[float, ...]  # "cat" -> "mat", per head of four
    two_heads_the_to_the: tuple[float, ...]  # first "the" -> second, per head of two
    entropy_bits: dict[int, float]  # head count -> mean row entropy over heads and rows


def solve() -> Patterns:
    """Measure the four patterns, and the blur of fewer heads, on the layer's weights.

    ```python
    from mha.worked.cat_mat import solve

    p = solve()
    assert p.sink_min > 0.98 and p.entropy_bits[1] > p.entropy_bits[4]
    ```
    """
    w = {h: attention_weights(h) for h in HEAD_COUNTS}
    entropy = {h: -w[h] * np.log2(np.where(w[h] > 0, w[h], 1.0)) for h in HEAD_COUNTS}
    the, second_the = (i for i, t in enumerate(TOKENS) if t == "the")
    cat, mat, stop = index_of("cat"), index_of("mat"), index_of(".")
    n = len(TOKENS)
    neighbours = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) == 1  # (n, n)
    neighbour_head, sink_head = HEADS.index("neighbour"), HEADS.index("sink")
    return Patterns(
        sink_min=float(w[4][sink_head, :, stop].min()),
        neighbour_min=float((w[4][neighbour_head] * neighbours).sum(axis=-1).min()),
        the_to_the=tuple(float(v) for v in w[4][:, the, second_the]),
        cat_to_mat=tuple(float(v) for v in w[4][:, cat, mat]),
        two_heads_the_to_the=tuple(float(v) for v in w[2][:, the, second_the]),
        entropy_bits={h: float(e.sum(axis=-1).mean()) for h, e in entropy.items()},
    )
