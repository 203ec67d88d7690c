"""The induction task, and a two-layer attention-only circuit built by hand to solve it.

Task: in a sequence of tokens, at every position t whose token occurred earlier,
predict the token that followed the most recent earlier occurrence of it. In
``a b c a`` the answer at the second ``a`` is ``b``. Positions whose token is new
have no answer and are not scored, so chance is ``1 / vocab``.

The sequences (``sample``) are a shuffle of the whole vocabulary, then a second
shuffle, cut to fill ``length``, of every token but the first shuffle's last. Two
shortcuts that need no induction are so ruled out: on uniform random sequences,
guessing the token seen most often so far is right far above chance (in a shuffle
every token occurs once); and the token after the first shuffle's last one always
sits at position ``vocab``, where a single layer can find it by position alone.

One attention layer cannot do it: to find position j + 1 (the answer) a query must
recognise it by the token *before* it, x_j, but the key at j + 1 is computed from
x_{j+1} and its position only. Two layers can (Elhage et al. 2021; Olsson et al. 2022):

- layer 0, a previous-token head: each position attends to the one before it and
  writes that token into a subspace of its own (``prev``) in the residual stream;
- layer 1, an induction head: the query is the current token, the keys read
  ``prev`` (K-composition), so position j + 1 matches when x_j = x_t; the value
  copies the token at j + 1 into the ``out`` subspace the readout reads.

``build`` returns that circuit on the core's ``MultiHeadAttention``, with every
weight set by hand; ``accuracy`` scores any predictions on held-out sequences.

```python
import numpy as np
from mha.experiments.induction import build, sample

circuit = build()
batch = sample(200, np.random.default_rng(5))
assert circuit.accuracy(batch) > 0.99
```
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.attention import causal_mask
from mha.layer import MultiHeadAttention
from mha.support.validate import generator, positive_int

VOCAB = 12  # tokens 0 .. VOCAB - 1
LENGTH = 23  # tokens per sequence
SHARPNESS = 200.0  # attention score of a match; every other key scores 0 ...
RECENCY = 4.0  # ... plus, in layer 1, this much per position: the latest match wins


@dataclass(frozen=True)
class Batch:
    """Sequences ``tokens (B, n)`` and their answers ``targets (B, n)``, -1 where none."""

    tokens: np.ndarray
    targets: np.ndarray

    @property
    def scored(self) -> np.ndarray:
        """``(B, n)`` boolean: positions whose token occurred earlier (they have an answer)."""
        return self.targets >= 0


def targets_of(tokens: np.ndarray) -> np.ndarray:
    """The answer at each position: the token after the most recent earlier occurrence.

    ``tokens (..., n)`` ints; the result has the same shape, -1 where the token is new.

    ```python
    import numpy as np
    from mha.experiments.induction import targets_of

    assert targets_of(np.array([0, 1, 2, 0, 1, 0])).tolist() == [-1, -1, -1, 1, 2, 1]
    ```
    """
    tokens = np.asarray(tokens)
    if tokens.ndim < 1 or tokens.dtype.kind not in "iu" or (tokens < 0).any():
        raise ValueError(
            f"tokens: expected non-negative ints (..., n), got {tokens.dtype} "
            f"{tokens.shape}"
        )
    n = tokens.shape[-1]
    flat = tokens.reshape(-1, n)
    rows = np.arange(len(flat))
    last = np.full((len(flat), int(tokens.max(initial=0)) + 1), -1)  # token -> position
    answers = np.full(flat.shape, -1)
    for t in range(n):
        seen = last[rows, flat[:, t]]  # the most recent earlier position, or -1
        after = flat[rows, np.minimum(seen + 1, n - 1)]
        answers[:, t] = np.where(seen >= 0, after, -1)
        last[rows, flat[:, t]] = t
    return answers.reshape(tokens.shape)


def sample(
    batch_size: int,
    rng: np.random.Generator | None = None,
    vocab: int = VOCAB,
    length: int = LENGTH,
) -> Batch:
    """``batch_size`` sequences of ``length`` tokens: a shuffle of the ``vocab``
    tokens, then a shuffle of all of them but the first shuffle's last, cut.

    Only the second part is scored: every token there occurred once before.

    ```python
    from mha.experiments.induction import sample

    batch = sample(3)
    assert batch.tokens.shape == batch.targets.shape == (3, 23)
    assert not batch.scored[:, :12].any() and batch.scored[:, 12:].all()
    ```
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
    return Batch(tokens, targets_of(tokens))


def accuracy(predictions: np.ndarray, batch: Batch) -> float:
    """Fraction of the scored positions of ``batch`` where ``predictions (B, n)`` is right.

    ```python
    import numpy as np
    from mha.experiments.induction import accuracy, sample

    batch = sample(10)
    assert accuracy(batch.targets, batch) == 1.0
    ```
    """
    if np.shape(predictions) != batch.tokens.shape:
        raise ValueError(
            f"predictions: expected shape {batch.tokens.shape}, "
            f"got {np.shape(predictions)}"
        )
    return float((predictions == batch.targets)[batch.scored].mean())


@dataclass(frozen=True)
class Subspaces:
    """Where each kind of information lives in the built circuit's residual stream.

    Each is a slice of ``d_model`` coordinates: ``token`` (one-hot of the token at
    the position), ``prev`` (one-hot of the token before it, written by layer 0),
    ``out`` (one-hot of the predicted token, written by layer 1), ``position``
    (one-hot of the position), and ``one``, a coordinate that is always 1.
    """

    vocab: int
    length: int

    @property
    def token(self) -> slice:
        return slice(0, self.vocab)

    @property
    def prev(self) -> slice:
        return slice(self.vocab, 2 * self.vocab)

    @property
    def out(self) -> slice:
        return slice(2 * self.vocab, 3 * self.vocab)

    @property
    def position(self) -> slice:
        return slice(3 * self.vocab, 3 * self.vocab + self.length)

    @property
    def one(self) -> int:
        return 3 * self.vocab + self.length

    @property
    def d_model(self) -> int:
        return self.one + 1


@dataclass(frozen=True)
class Circuit:
    """Embedding, two single-head attention layers with residual adds, and a readout."""

    space: Subspaces
    layers: tuple[MultiHeadAttention, MultiHeadAttention]
    unembed: np.ndarray  # (d_model, vocab): reads the out subspace

    def embed(self, tokens: np.ndarray) -> np.ndarray:
        """``(B, n)`` tokens -> ``(B, n, d_model)``: one-hot token, position and the 1."""
        s = self.space
        tokens = np.asarray(tokens)
        x = np.zeros((*tokens.shape, s.d_model))
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

    def accuracy(self, batch: Batch) -> float:
        """Accuracy on the scored positions of ``batch``."""
        return accuracy(self.predict(batch.tokens), batch)


def build(vocab: int = VOCAB, length: int = LENGTH) -> Circuit:
    """The two-layer induction circuit, every weight set by hand.

    Both layers are ``MultiHeadAttention(d_model, 1)`` (one head, d_k = d_model);
    scores are multiplied by sqrt(d_k) in W_Q to undo the layer's 1/sqrt(d_k).

    - Layer 0 (previous-token head): W_Q maps position one-hot t to position one-hot
      t - 1, W_K reads the position one-hot, so the score is ``SHARPNESS`` at j = t - 1
      and 0 elsewhere. W_V W_O copies the token one-hot of j into ``prev``.
    - Layer 1 (induction head): W_Q reads the token one-hot, W_K reads ``prev``: the
      score is ``SHARPNESS`` where the previous token of j equals x_t. W_Q also puts
      the constant 1 against W_K's ``RECENCY * j``, so among matches the latest wins.
      W_V W_O copies the token one-hot of j into ``out``, which the readout reads.

    ```python
    import numpy as np
    from mha.experiments.induction import build

    circuit = build(vocab=4, length=6)
    stream, weights = circuit.run(np.array([[0, 1, 2, 0, 3, 1]]))
    assert weights[0][0, 0, 3].argmax() == 2  # position 3 looks at position 2
    assert weights[1][0, 0, 3].argmax() == 1  # ... and, in layer 1, at 1 (after the 0)
    assert circuit.predict(np.array([[0, 1, 2, 0, 3, 1]]))[0, 3] == 1
    ```
    """
    vocab, length = positive_int("vocab", vocab), positive_int("length", length)
    if RECENCY * (length - 1) >= SHARPNESS:
        raise ValueError(
            f"length: expected at most {int(SHARPNESS / RECENCY)} positions (so that "
            f"recency never outweighs a match), got {length}"
        )
    s = Subspaces(vocab, length)
    d = s.d_model
    undo_scale = np.sqrt(d)  # attend divides scores by sqrt(d_k) = sqrt(d_model)
    eye_v = np.eye(vocab)

    previous = MultiHeadAttention(d, 1)
    previous.w_q = np.zeros((d, d))
    # query at position t (rows) points at key coordinate t - 1 (columns)
    previous.w_q[s.position, s.position] = np.eye(length, k=-1) * SHARPNESS * undo_scale
    previous.w_k = np.zeros((d, d))
    previous.w_k[s.position, s.position] = np.eye(length)
    previous.w_v = np.zeros((d, d))
    previous.w_v[s.token, s.token] = eye_v  # the attended token's one-hot ...
    previous.w_o = np.zeros((d, d))
    previous.w_o[s.token, s.prev] = eye_v  # ... written into prev

    induction = MultiHeadAttention(d, 1)
    induction.w_q = np.zeros((d, d))
    induction.w_q[s.token, s.prev] = eye_v * SHARPNESS * undo_scale
    induction.w_q[s.one, s.one] = undo_scale  # the query's constant 1 ...
    induction.w_k = np.zeros((d, d))
    induction.w_k[s.prev, s.prev] = eye_v  # keys read prev: K-composition
    induction.w_k[s.position, s.one] = RECENCY * np.arange(length)  # ... meets j
    induction.w_v = np.zeros((d, d))
    induction.w_v[s.token, s.token] = eye_v
    induction.w_o = np.zeros((d, d))
    induction.w_o[s.token, s.out] = eye_v  # the token after the match, into out

    unembed = np.zeros((d, vocab))
    unembed[s.out] = eye_v
    return Circuit(s, (previous, induction), unembed)
