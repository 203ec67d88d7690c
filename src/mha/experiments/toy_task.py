"""The two-relation task: every token must fetch two words, found in two unrelated ways.

Each token has a position, a distinct **name**, the name it **refers to** (never its own
nor its predecessor's) and a **word**, fed as four one-hot blocks. It must output the
previous token's word (positional, cyclic) and the referenced token's (by content).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.support.validate import generator, positive_int

N_POSITIONS = 8
NAMES = ("A", "B", "C", "D", "E", "F", "G", "H")
WORDS = ("bat", "ball", "run", "over", "six", "four", "wicket", "catch")
N_NAMES, N_WORDS = len(NAMES), len(WORDS)
D_MODEL = N_POSITIONS + 2 * N_NAMES + N_WORDS  # the four one-hot blocks side by side
N_TARGETS = 2  # (word of the previous token, word of the referenced token)
CHANCE_ACCURACY = 1 / N_WORDS  # guessing a word uniformly
CHANCE_LOSS = float(np.log(N_WORDS))  # cross-entropy of the uniform guess, in nats


@dataclass(frozen=True)
class Batch:
    """``n`` sequences of the task, as integer arrays ``(n, N_POSITIONS)``."""

    names: np.ndarray  # indices into NAMES, distinct within a row
    ref_positions: np.ndarray  # where each token's reference sits: never i nor i - 1
    words: np.ndarray  # indices into WORDS

    @property
    def prev_positions(self) -> np.ndarray:
        """``(N_POSITIONS,)``: the position of each token's predecessor (cyclic)."""
        return np.roll(np.arange(N_POSITIONS), 1)

    @property
    def refs(self) -> np.ndarray:
        """``(n, N_POSITIONS)``: the name each token refers to (its input)."""
        return np.take_along_axis(self.names, self.ref_positions, axis=1)

    def inputs(self, dtype: type = np.float64) -> np.ndarray:
        """One-hot inputs ``(n, N_POSITIONS, D_MODEL)``: position, name, refers-to, word.

        ```python
        from mha.experiments.toy_task import D_MODEL, generate

        x = generate(3).inputs()
        assert x.shape == (3, 8, D_MODEL) and (x.sum(-1) == 4).all()
        ```
        """
        n = self.names.shape[0]
        positions = np.broadcast_to(np.arange(N_POSITIONS), (n, N_POSITIONS))
        blocks = np.stack([positions, self.names, self.refs, self.words], axis=-1)
        columns = blocks + np.cumsum([0, N_POSITIONS, N_NAMES, N_NAMES])  # hot columns
        x = np.zeros((n, N_POSITIONS, D_MODEL), dtype=dtype)
        np.put_along_axis(x, columns, dtype(1), axis=-1)
        return x

    def targets(self) -> np.ndarray:
        """``(n, N_POSITIONS, 2)`` word indices: [previous token's, referenced token's].

        ```python
        from mha.experiments.toy_task import generate

        batch = generate(2)
        y = batch.targets()
        assert (y[:, 3, 0] == batch.words[:, 2]).all()  # token 3's predecessor is 2
        ```
        """
        previous = self.words[:, self.prev_positions]
        referenced = np.take_along_axis(self.words, self.ref_positions, axis=1)
        return np.stack([previous, referenced], axis=-1)


def generate(n: int, rng: np.random.Generator | None = None) -> Batch:
    """``n`` random sequences: distinct names, references uniform over the positions
    that are neither the token nor its predecessor, words uniform.

    ```python
    import numpy as np
    from mha.experiments.toy_task import generate

    batch = generate(100, np.random.default_rng(1))
    targets = np.arange(8)
    assert (batch.ref_positions != targets).all()
    assert (batch.ref_positions != batch.prev_positions).all()
    ```
    """
    n = positive_int("n", n)
    rng = generator(rng)
    names = np.argsort(rng.random((n, N_NAMES)), axis=1)[:, :N_POSITIONS]
    # offset 1..N-2 from i skips i itself (offset 0) and i - 1 (offset N - 1)
    offsets = rng.integers(1, N_POSITIONS - 1, size=(n, N_POSITIONS))
    ref_positions = (np.arange(N_POSITIONS) + offsets) % N_POSITIONS
    words = rng.integers(0, N_WORDS, size=(n, N_POSITIONS))
    return Batch(names=names, ref_positions=ref_positions, words=words)


@dataclass(frozen=True)
class Token:
    """One token of a sequence in words, with the two words it must output."""

    position: int
    name: str
    refers_to: str
    word: str
    previous_position: int  # position - 1, cyclically
    previous_word: str  # target 1: the word at previous_position
    ref_position: int  # where the token it refers to sits
    referenced_word: str  # target 2: the word at ref_position


def describe(batch: Batch, index: int = 0) -> tuple[Token, ...]:
    """Sequence ``index`` of ``batch``, token by token, in names and words.

    ```python
    from mha.experiments.toy_task import describe, generate

    tokens = describe(generate(1))
    assert tokens[1].previous_word == tokens[0].word
    assert tokens[0].referenced_word == tokens[tokens[0].ref_position].word
    ```
    """
    if not 0 <= index < batch.names.shape[0]:
        raise ValueError(
            f"index: expected 0 <= index < {batch.names.shape[0]}, got {index}"
        )
    targets, refs = batch.targets()[index], batch.refs[index]
    return tuple(
        Token(
            position=i,
            name=NAMES[batch.names[index, i]],
            refers_to=NAMES[refs[i]],
            word=WORDS[batch.words[index, i]],
            previous_position=int(batch.prev_positions[i]),
            previous_word=WORDS[targets[i, 0]],
            ref_position=int(batch.ref_positions[index, i]),
            referenced_word=WORDS[targets[i, 1]],
        )
        for i in range(N_POSITIONS)
    )
