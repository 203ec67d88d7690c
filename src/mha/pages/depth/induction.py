"""The induction task, and a two-layer attention-only circuit built by hand to solve it.

At every position whose token occurred earlier, predict the token that followed its
most recent earlier occurrence (``a b c a``: ``b`` at the second ``a``); new tokens
are not scored. ``sample`` draws two shuffles of the vocabulary, the second without
the first's last token and cut, which leaves one layer no shortcut (``count_guess``,
or reading a fixed position). ``build`` sets every weight of the circuit of Elhage
et al. (2021) and Olsson et al. (2022) on the core's ``MultiHeadAttention``: a
previous-token head writes x_j into ``prev`` at j + 1, an induction head's keys read
``prev`` (K-composition) and copy the token after the match into ``out``.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass

import numpy as np

from mha.attention import causal_mask
from mha.layer import MultiHeadAttention
from mha.support.validate import generator, positive_int

_VOCAB = 12  # tokens 0 .. VOCAB - 1
_LENGTH = 23  # tokens per sequence
_SHARPNESS = 200.0  # attention score of a match; every other key scores 0 ...
_RECENCY = 4.0  # ... plus, in layer 1, this much per position: the latest match wins
_CHUNK = 250  # sequences per pass in score_one_layer


@dataclass(frozen=True)
class _Batch:
    """Sequences ``tokens (B, n)`` and their answers ``targets (B, n)``, -1 where none."""

    tokens: np.ndarray
    targets: np.ndarray

    @property
    def scored(self) -> np.ndarray:
        """``(B, n)`` boolean: positions whose token occurred earlier (they have an answer)."""
        return self.targets >= 0

    def accuracy(self, predictions: np.ndarray) -> float:
        """The share of the scored positions where ``predictions (B, n)`` is right."""
        if np.shape(predictions) != self.tokens.shape:
            raise ValueError(
                f"predictions: expected shape {self.tokens.shape}, "
                f"got {np.shape(predictions)}"
            )
        return float((predictions == self.targets)[self.scored].mean())


def targets_of(tokens: np.ndarray) -> np.ndarray:
    """The answer at each position: the token after the most recent earlier occurrence.

    ``tokens (..., n)`` ints; the result has the same shape, -1 where the token is new.
    """
    tokens = np.asarray(tokens)
    seen = _earlier(tokens)
    after = np.take_along_axis(tokens, np.minimum(seen + 1, tokens.shape[-1] - 1), -1)
    return np.where(seen >= 0, after, -1)


def _offsets_of(tokens: np.ndarray) -> np.ndarray:
    """How far back each position's token occurred last: ``t - j``, -1 where it is new."""
    seen = _earlier(np.asarray(tokens))
    return np.where(seen >= 0, np.arange(seen.shape[-1]) - seen, -1)


def _earlier(tokens: np.ndarray) -> np.ndarray:
    """The position of each token's most recent earlier occurrence, -1 if none."""
    if tokens.ndim < 1 or tokens.dtype.kind not in "iu" or (tokens < 0).any():
        raise ValueError(
            f"tokens: expected non-negative ints (..., n), got {tokens.dtype} "
            f"{tokens.shape}"
        )
    n = tokens.shape[-1]
    flat = tokens.reshape(-1, n)
    rows = np.arange(len(flat))
    last = np.full((len(flat), int(tokens.max(initial=0)) + 1), -1)  # token -> position
    seen = np.full(flat.shape, -1)
    for t in range(n):
        seen[:, t] = last[rows, flat[:, t]]
        last[rows, flat[:, t]] = t
    return seen.reshape(tokens.shape)


def sample(
    batch_size: int,
    rng: np.random.Generator | None = None,
    vocab: int = _VOCAB,
    length: int = _LENGTH,
) -> _Batch:
    """``batch_size`` sequences of ``length`` tokens: a shuffle of the ``vocab``
    tokens, then a shuffle of all of them but the first shuffle's last, cut (scored).
    """
    batch_size = positive_int("batch_size", batch_size)
    vocab, length = positive_int("vocab", vocab), positive_int("length", length)
    rng = generator(rng)
    if not vocab < length < 2 * vocab:
        raise ValueError(
            f"length: expected between vocab + 1 = {vocab + 1} and "
            f"2 vocab - 1 = {2 * vocab - 1}, got {length}"
        )
    ordered = np.tile(np.arange(vocab), (2, batch_size, 1))
    first, shuffled = rng.permuted(ordered, axis=-1)  # two shuffles of the vocabulary
    # the second leaves out the first's last token (see the module's docstring)
    second = shuffled[shuffled != first[:, -1:]].reshape(batch_size, vocab - 1)
    tokens = np.concatenate([first, second[:, : length - vocab]], axis=1)
    return _Batch(tokens, targets_of(tokens))


class _Subspaces:
    """The built circuit's residual stream of ``d_model`` coordinates: one-hots (slices)
    of the ``token``, the ``prev`` token (written by layer 0), the predicted token
    (``out``, by layer 1) and the ``position``, and ``one``, a coordinate always 1;
    then zeros up to ``width``, if that is wider (a layer's heads must divide it)."""

    def __init__(self, vocab: int, length: int, width: int = 0) -> None:
        self.vocab, self.length, v = vocab, length, vocab
        self.token, self.prev, self.out = (slice(i * v, (i + 1) * v) for i in range(3))
        self.position, self.one = slice(3 * v, 3 * v + length), 3 * v + length
        self.d_model = max(self.one + 1, width)


@dataclass(frozen=True)
class _Circuit:
    """Embedding, attention layers with residual adds, and a readout."""

    space: _Subspaces
    layers: tuple[MultiHeadAttention, ...]
    unembed: np.ndarray  # (d_model, vocab): reads the out subspace

    def embed(self, tokens: np.ndarray) -> np.ndarray:
        """``(B, n)`` tokens -> ``(B, n, d_model)``: one-hot token, position and the 1."""
        s = self.space
        tokens = np.asarray(tokens)
        x = np.zeros((*tokens.shape, s.d_model), dtype=self.layers[0].w_q.dtype)
        x[..., s.token] = np.eye(s.vocab)[tokens]
        x[..., s.position] = np.eye(s.length)[: tokens.shape[-1]]
        x[..., s.one] = 1.0
        return x

    def run(self, tokens: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The residual stream after the embedding and each layer, and each layer's weights."""
        x = self.embed(tokens)
        mask = causal_mask(x.shape[-2])
        stream, weights = [x], []
        for layer in self.layers:
            out, w = layer(x, mask=mask)
            x = x + out
            stream.append(x)
            weights.append(w)
        return stream, weights

    def predict(self, tokens: np.ndarray) -> np.ndarray:
        """The predicted token at every position, ``(B, n)``."""
        stream, _ = self.run(tokens)
        return (stream[-1] @ self.unembed).argmax(axis=-1)

    def accuracy(self, batch: _Batch) -> float:
        """Accuracy on the scored positions of ``batch``."""
        return batch.accuracy(self.predict(batch.tokens))

    def silenced(self) -> _Circuit:
        """This circuit with its previous-token head's write removed (zero W_O in L0)."""
        previous = copy.copy(self.layers[0])
        previous.w_o = np.zeros_like(previous.w_o)
        return dataclasses.replace(self, layers=(previous, self.layers[1]))


def _count_guess(batch: _Batch) -> float:
    """Accuracy on ``batch`` of guessing the most frequent earlier token (ties: lowest
    id): the order-free guess one layer can compute by averaging.
    """
    one_hot = batch.tokens[..., None] == np.arange(_VOCAB)
    counts = np.cumsum(one_hot, axis=1) - one_hot  # seen before each position
    return batch.accuracy(counts.argmax(axis=-1))


def build(vocab: int = _VOCAB, length: int = _LENGTH) -> _Circuit:
    """The two-layer induction circuit, every weight set by hand (one head per layer,
    d_k = d_model; W_Q carries sqrt(d_k) to undo the layer's 1/sqrt(d_k)).
    """
    vocab, length = positive_int("vocab", vocab), positive_int("length", length)
    if _RECENCY * (length - 1) >= _SHARPNESS:
        raise ValueError(
            f"length: expected at most {int(_SHARPNESS / _RECENCY)} positions (so that "
            f"recency never outweighs a match), got {length}"
        )
    s = _Subspaces(vocab, length)
    d = s.d_model
    undo_scale = np.sqrt(d)  # attend divides scores by sqrt(d_k) = sqrt(d_model)
    eye_v = np.eye(vocab)

    previous, induction = MultiHeadAttention(d, 1), MultiHeadAttention(d, 1)
    for layer in (previous, induction):
        layer.w_q, layer.w_k, layer.w_v, layer.w_o = (
            np.zeros((d, d)) for _ in range(4)
        )
        layer.w_v[s.token, s.token] = eye_v  # each reads the attended token's one-hot
    # query at position t (rows) points at key coordinate t - 1 (columns)
    previous.w_q[s.position, s.position] = (
        np.eye(length, k=-1) * _SHARPNESS * undo_scale
    )
    previous.w_k[s.position, s.position] = np.eye(length)
    previous.w_o[s.token, s.prev] = eye_v  # ... and writes it into prev

    induction.w_q[s.token, s.prev] = eye_v * _SHARPNESS * undo_scale
    induction.w_q[s.one, s.one] = undo_scale  # the query's constant 1 ...
    induction.w_k[s.prev, s.prev] = eye_v  # keys read prev: K-composition
    induction.w_k[s.position, s.one] = _RECENCY * np.arange(length)  # ... meets j
    induction.w_o[s.token, s.out] = eye_v  # the token after the match, into out

    return _circuit(s, previous, induction)


def _build_one_layer(
    offsets: tuple[int, ...], vocab: int = _VOCAB, length: int = _LENGTH
) -> _Circuit:
    """One attention layer, every weight set by hand, that answers where the earlier
    occurrence lies ``d`` back for a ``d`` in ``offsets``: a head per offset, one more.

    No key can say "the token before me matches": it is computed from its own token
    and position. So head ``d`` scores keys by position, 2 ``SHARPNESS`` at ``t - d``
    and ``SHARPNESS`` at ``t - d + 1``, minus 3 ``SHARPNESS`` where the key's token is
    the query's: it reads ``t - d + 1`` if ``x[t - d] = x[t]``, else ``t - d``, and
    copies the token into ``out``. The last head reads every ``t - d`` alike and
    subtracts their tokens: what stays in ``out`` is the token after a match at a
    covered offset (minus the query's own token), else nothing, and the readout is
    ``out``. Before position ``d`` there is no ``t - d``: head ``d`` reads position
    0 whatever it holds, and the last head subtracts it. Meant for the task's
    sequences, where a token occurs at most twice.
    """
    vocab, length = positive_int("vocab", vocab), positive_int("length", length)
    offsets = tuple(sorted({positive_int("offsets", d) for d in offsets}))
    if not offsets or max(offsets) >= length:
        raise ValueError(
            f"offsets: expected at least one, each below length={length}, got {offsets}"
        )
    n_heads = len(offsets) + 1
    # each head's query and key: the token's one-hot, then the position's
    d_k = max(vocab + length, -(-_Subspaces(vocab, length).d_model // n_heads))
    s = _Subspaces(vocab, length, width=n_heads * d_k)
    d, undo_scale, t = s.d_model, np.sqrt(d_k), np.arange(length)
    eye_v = np.eye(vocab)
    # float32: the widest layer (a head for every offset) is 22 heads of 35
    w_q, w_k, w_v, w_o = (np.zeros((d, d), dtype=np.float32) for _ in range(4))
    behind = {dist: np.clip(t - dist, 0, None) for dist in offsets}  # t - d, or 0
    for head in range(n_heads):
        tok = np.arange(head * d_k, head * d_k + vocab)
        pos = np.arange(head * d_k + vocab, head * d_k + vocab + length)
        scores = np.zeros((length, length))  # query position t -> key position
        if head < len(offsets):  # the head of offset d
            dist = offsets[head]
            scores[t, np.clip(t - dist + 1, 0, None)] = _SHARPNESS
            scores[t, behind[dist]] = 2 * _SHARPNESS
            scores[t < dist, 0] = 4 * _SHARPNESS  # no t - d yet: 0, whatever it holds
            w_q[s.token, tok] = -3 * _SHARPNESS * eye_v * undo_scale  # own token: down
            w_k[s.token, tok] = eye_v
            sign = 1.0
        else:  # weight on each t - d in proportion to how many heads read it
            for dist in offsets:
                scores[t, behind[dist]] += 1
            with np.errstate(divide="ignore"):
                scores = np.where(scores > 0, _SHARPNESS + np.log(scores), 0.0)
            sign = -float(len(offsets))
        w_q[s.position, pos] = scores * undo_scale
        w_k[s.position, pos] = np.eye(length)
        w_v[s.token, tok] = eye_v
        w_o[tok, s.out] = sign * eye_v
    layer = MultiHeadAttention(d, n_heads, dtype=np.float32)
    layer.w_q, layer.w_k, layer.w_v, layer.w_o = w_q, w_k, w_v, w_o
    return _circuit(s, layer)


def _circuit(space: _Subspaces, *layers: MultiHeadAttention) -> _Circuit:
    """The layers, with the readout of the ``out`` subspace in their dtype."""
    unembed = np.zeros((space.d_model, space.vocab), dtype=layers[0].w_q.dtype)
    unembed[space.out] = np.eye(space.vocab)
    return _Circuit(space, layers, unembed)


@dataclass(frozen=True)
class _OffsetScore:
    """How ``build_one_layer(offsets)`` does on a batch, by offset of the earlier
    occurrence: at the covered offsets, at the others, and over every scored position.
    Where its readout stays below one half for every token it gives no answer."""

    offsets: tuple[int, ...]
    n_heads: int  # one per offset, one more
    share: float  # of the scored positions, those whose offset is covered
    covered: float  # accuracy there
    elsewhere: float  # accuracy at the other scored positions (nan if none)
    overall: float


def _score_one_layer(
    batch: _Batch, offsets: tuple[int, ...], vocab: int = _VOCAB
) -> _OffsetScore:
    """Build the one-layer model for ``offsets`` and score it on ``batch`` by offset."""
    circuit = _build_one_layer(offsets, vocab, batch.tokens.shape[1])
    # CHUNK sequences at a time: the widest layer's arrays stay a few MB (measured:
    # about a fifth less CPU time than one pass over 2000 sequences, the same logits)
    chunks = np.array_split(batch.tokens, -(-len(batch.tokens) // _CHUNK))
    logits = np.concatenate([circuit.run(c)[0][-1] @ circuit.unembed for c in chunks])
    answers = np.where(logits.max(axis=-1) > 0.5, logits.argmax(axis=-1), -1)
    right = (answers == batch.targets)[batch.scored]
    covered = np.isin(_offsets_of(batch.tokens)[batch.scored], offsets)
    return _OffsetScore(
        offsets=tuple(sorted(offsets)),
        n_heads=circuit.layers[0].n_heads,
        share=float(covered.mean()),
        covered=float(right[covered].mean()),
        elsewhere=float(right[~covered].mean()) if (~covered).any() else float("nan"),
        overall=float(right.mean()),
    )
