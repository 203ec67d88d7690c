"""Byte-level BPE, the tokenizer of GPT-2 and of SmolLM2, from a vocabulary and merges.

Text becomes ids in four steps. Control tokens (``<|im_start|>``...) are cut out whole.
The rest is pre-split: every digit on its own first (SmolLM2 learned no multi-digit
tokens), then the GPT-2 pattern (contractions, words with their leading space, runs
of punctuation, whitespace). Each piece is spelled as UTF-8 bytes, each byte as one
printable character (``Ġ`` is the space), and the merges are applied best-ranked
first until none applies. Decoding maps the characters back to bytes.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Sequence

import regex

# GPT-2's pre-tokenizer pattern; SmolLM2 splits every digit apart before it.
DIGIT = regex.compile(r"\p{N}")
GPT2_SPLIT = regex.compile(
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
)


@functools.cache
def byte_alphabet() -> dict[int, str]:
    """The printable character standing for each byte (GPT-2's ``bytes_to_unicode``).

    Printable Latin-1 bytes stand for themselves; the others (space, control bytes)
    are moved to code points from 256 on, so no token contains a space.

    ```python
    from mha.pretrained.bpe import byte_alphabet

    assert byte_alphabet()[ord("a")] == "a" and byte_alphabet()[ord(" ")] == "Ġ"
    assert len(set(byte_alphabet().values())) == 256
    ```
    """
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    moved = [b for b in range(256) if b not in printable]
    alphabet = {b: chr(b) for b in printable}
    alphabet.update({b: chr(256 + i) for i, b in enumerate(moved)})
    return dict(sorted(alphabet.items()))


class ByteLevelBPE:
    """Encode text to ids and back with a byte-level BPE vocabulary.

    ``tokens``: the vocabulary, id i spelled ``tokens[i]`` in the byte alphabet;
    ``merges``: the merge rules best first, each ``"left right"``; ``control``: ids of
    tokens matched whole in the text (never split, never built by merges).

    ```python
    from mha.pretrained.bpe import ByteLevelBPE

    tokens = ["<|end|>", "a", "b", "Ġ", "1", "2", "ab", "Ġab"]
    bpe = ByteLevelBPE(tokens, ["a b", "Ġ ab"], control=[0])
    assert bpe.encode("ab ab12<|end|>") == [6, 7, 4, 5, 0]
    assert bpe.decode([6, 7, 4, 5, 0]) == "ab ab12<|end|>"
    ```
    """

    def __init__(
        self, tokens: Sequence[str], merges: Iterable[str], control: Iterable[int] = ()
    ) -> None:
        self.tokens = list(tokens)
        self.ids = {token: i for i, token in enumerate(self.tokens)}
        self.ranks = {tuple(m.split(" ")): rank for rank, m in enumerate(merges)}
        self.control = {self.tokens[i]: i for i in control}
        # longest first, so a control token that contains another one wins
        names = sorted(self.control, key=len, reverse=True)
        self._control_split = regex.compile(
            "(" + "|".join(regex.escape(n) for n in names) + ")" if names else "(?!)"
        )
        self._to_char = byte_alphabet()
        self._to_byte = {c: b for b, c in self._to_char.items()}
        self._merge = functools.lru_cache(maxsize=65536)(self._merge_word)

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``; no BOS or other token is added.

        ```python
        from mha.pretrained.bpe import ByteLevelBPE

        bpe = ByteLevelBPE(["h", "i", "hi"], ["h i"])
        assert bpe.encode("hi") == [2] and bpe.encode("ih") == [1, 0]
        ```
        """
        if not isinstance(text, str):
            raise ValueError(f"text: expected a str, got {type(text).__name__}")
        ids: list[int] = []
        for segment in self._control_split.split(text):
            if segment in self.control:
                ids.append(self.control[segment])
                continue
            for piece in pre_split(segment):
                spelled = "".join(self._to_char[b] for b in piece.encode("utf-8"))
                ids.extend(self.ids[part] for part in self._merge(spelled))
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids`` (bytes that are not valid UTF-8 become U+FFFD).

        ```python
        from mha.pretrained.bpe import ByteLevelBPE

        bpe = ByteLevelBPE(["h", "i", "Ġ"], [])
        assert bpe.decode([0, 2, 1]) == "h i"
        ```
        """
        ids = list(ids)
        bad = [i for i in ids if not 0 <= i < len(self.tokens)]
        if bad:
            raise ValueError(
                f"ids: expected ids in [0, {len(self.tokens)}), got {bad[0]!r}"
            )
        data = bytearray()
        for i in ids:
            token = self.tokens[i]
            if token in self.control:
                data += token.encode("utf-8")
            else:
                data += bytes(self._to_byte[c] for c in token)
        return data.decode("utf-8", errors="replace")

    def _merge_word(self, word: str) -> tuple[str, ...]:
        """Apply the best-ranked merge until none applies: ``"Ġab"`` -> ``("Ġab",)``."""
        parts = list(word)
        while len(parts) > 1:
            rank, i = min(
                (self.ranks.get(pair, len(self.ranks)), i)
                for i, pair in enumerate(itertools.pairwise(parts))
            )
            if rank == len(self.ranks):
                break
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        return tuple(parts)


def pre_split(text: str) -> list[str]:
    """Cut ``text`` into the pieces BPE works on: each digit alone, then GPT-2's rule.

    ```python
    from mha.pretrained.bpe import pre_split

    assert pre_split("I'm 42  now") == ["I", "'m", " ", "4", "2", " ", " now"]
    assert pre_split("a  1") == ["a", "  ", "1"]  # the digit ends the space run
    ```
    """
    pieces = []
    start = 0
    for digit in DIGIT.finditer(text):
        pieces += GPT2_SPLIT.findall(text[start : digit.start()])
        pieces.append(digit.group())
        start = digit.end()
    return pieces + GPT2_SPLIT.findall(text[start:])
