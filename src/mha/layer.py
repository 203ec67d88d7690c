"""``MultiHeadAttention``: project, split into heads, attend, merge, project back."""

from __future__ import annotations

import copy

import numpy as np

from mha.attention import attend, check_mask
from mha.heads import _merge, _repeat, _split, mean_pool_heads
from mha.kv_cache import KVCache
from mha.rope import RotaryEmbedding
from mha.support.validate import (
    ArgumentTypeError,
    CheckedArray,
    allocatable,
    as_array,
    fits,
    flag,
    float_array,
    float_dtype,
    generator,
    head_dim,
    integer,
    positive_int,
)


class MultiHeadAttention:
    """Multi-head self-attention with ``n_kv_heads`` K/V heads (MHA, GQA or MQA).

    Weights are attributes applied as ``x @ w`` and read on every call:
    ``w_q (d_model, h*d_k)``, ``w_k, w_v (d_model, h_kv*d_k)``, ``w_o (h*d_k, d_model)``,
    biases ``b_q b_k b_v b_o`` (``None`` unless ``bias=True``). Assigning one checks
    its shape, dtype (float32 or float64) and values (finite), once: a call reads it
    unchecked, so an array edited in place after it was assigned (``w_q[0, 0] =
    np.inf``) is not checked again: assign it again (``layer.w_q = w``) to have it
    checked; a NaN or inf that reaches the scores is still refused by ``attend``.
    Query head i uses columns ``i*d_k:(i+1)*d_k`` and reads K/V head
    ``i // (h // h_kv)``. ``rope`` (``None`` by default) rotates queries and keys by
    their positions after projection.

    ```python
    import numpy as np
    from mha import MultiHeadAttention

    layer = MultiHeadAttention(d_model=8, n_heads=2)
    x = np.random.default_rng(1).normal(size=(1, 5, 8))  # (batch, seq, d_model)
    out, weights = layer(x)
    assert out.shape == (1, 5, 8) and weights.shape == (1, 2, 5, 5)
    assert layer.param_count == 4 * 8 * 8
    ```
    """

    # checked when assigned (shape, float32 or float64, finite), read as they are
    w_q = CheckedArray("d_model", "n_heads*d_k")
    w_k = CheckedArray("d_model", "n_kv_heads*d_k")
    w_v = CheckedArray("d_model", "n_kv_heads*d_k")
    w_o = CheckedArray("n_heads*d_k", "d_model")
    b_q = CheckedArray("n_heads*d_k", optional=True)
    b_k = CheckedArray("n_kv_heads*d_k", optional=True)
    b_v = CheckedArray("n_kv_heads*d_k", optional=True)
    b_o = CheckedArray("d_model", optional=True)

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_kv_heads: int | None = None,
        bias: bool = False,
        rng: np.random.Generator | None = None,
        dtype: np.dtype | type = np.float64,
    ) -> None:
        self.d_k = head_dim(d_model, n_heads, n_kv_heads)  # checks the three sizes
        self.n_heads = positive_int("n_heads", n_heads)
        self.n_kv_heads = self.n_heads if n_kv_heads is None else int(n_kv_heads)
        d_model = self.d_model = self.n_heads * self.d_k  # a Python int
        width_q, width_kv = d_model, self.n_kv_heads * self.d_k
        rng, dtype = generator(rng), float_dtype("dtype", dtype)
        bias = flag("bias", bias)

        def init(rows: int, cols: int) -> np.ndarray:
            allocatable("d_model", (rows, cols), np.dtype(np.float64))  # drawn so
            return rng.normal(0.0, rows**-0.5, size=(rows, cols)).astype(dtype)

        def zeros(size: int) -> np.ndarray | None:
            return np.zeros(size, dtype=dtype) if bias else None

        self.w_q, self.b_q = init(d_model, width_q), zeros(width_q)
        self.w_k, self.b_k = init(d_model, width_kv), zeros(width_kv)
        self.w_v, self.b_v = init(d_model, width_kv), zeros(width_kv)
        self.w_o, self.b_o = init(width_q, d_model), zeros(d_model)
        self.rope: RotaryEmbedding | None = None

    @property
    def param_count(self) -> int:
        """Number of parameters, counted from the arrays themselves."""
        arrays = (self.w_q, self.w_k, self.w_v, self.w_o)
        biases = (self.b_q, self.b_k, self.b_v, self.b_o)
        return sum(a.size for a in arrays + biases if a is not None)

    def __call__(
        self,
        x: np.ndarray,
        mask: np.ndarray | None = None,
        head_mask: np.ndarray | None = None,
        *,
        kv: np.ndarray | None = None,
        start: int = 0,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Attention from ``x (..., seq, d_model)`` to ``kv (..., kv_seq, d_model)``.

        ``kv`` is the sequence keys and values are read from: ``x`` itself by
        default (self-attention), another sequence for cross-attention (a decoder
        reading its encoder's output). ``mask`` is boolean (True = may attend),
        broadcastable to ``(..., h, seq, kv_seq)``. ``head_mask (h,)`` scales each
        head's output before W_O (0 removes the head: pruning). With ``rope``, the
        tokens sit at positions ``start, start + 1, ...`` (0 by default). Returns
        ``(out (..., seq, d_model), weights (..., h, seq, kv_seq))`` in x's dtype.

        ```python
        import numpy as np
        from mha import MultiHeadAttention

        layer = MultiHeadAttention(d_model=8, n_heads=4, n_kv_heads=2)
        rng = np.random.default_rng(0)
        x, memory = rng.normal(size=(1, 3, 8)), rng.normal(size=(1, 5, 8))
        out, weights = layer(x, kv=memory)  # 3 queries read 5 keys and values
        assert out.shape == (1, 3, 8) and weights.shape == (1, 4, 3, 5)
        assert np.allclose(layer(x, kv=x)[0], layer(x)[0])
        ```
        """
        x, kv, start, mask, head_mask = self._check_call(x, kv, start, mask, head_mask)
        q, k, v = self._project(x, kv, start)
        return self._attend(q, k, v, mask, head_mask)

    def step(self, x_new: np.ndarray, cache: KVCache) -> tuple[np.ndarray, np.ndarray]:
        """Attend from new tokens to every cached one, appending their K/V first.

        ``x_new (batch, n_new, d_model)``: one token or a whole prompt. New token i
        may attend to all earlier tokens and to new tokens up to itself (causal).
        Returns ``(out (batch, n_new, d_model), weights (batch, h, n_new, length))``.

        ```python
        import numpy as np
        from mha import KVCache, MultiHeadAttention, causal_mask

        layer = MultiHeadAttention(d_model=8, n_heads=4, n_kv_heads=2)
        x = np.random.default_rng(1).normal(size=(1, 5, 8))
        cache = KVCache(1, n_kv_heads=2, d_k=2, max_len=5)
        prompt, _ = layer.step(x[:, :3], cache)
        last, _ = layer.step(x[:, 3:], cache)
        full, _ = layer(x, mask=causal_mask(5))
        assert np.allclose(np.concatenate([prompt, last], axis=1), full)
        ```
        """
        x_new = self._check_step(x_new, cache)
        start, n_new = cache.length, x_new.shape[1]
        self._check_rope(x_new.shape, x_new.shape, start)
        q, k, v = self._project(x_new, x_new, start)
        keys, values = cache.append(k, v)  # (batch, h_kv, length, d_k)
        mask = None
        if n_new > 1:  # new token i (at position start + i) sees keys 0 .. start + i
            positions = np.arange(start, start + n_new)[:, None]
            # (1, 1, n_new, length): four axes, so that a batch as long as the chunk
            # is not read as a (batch, key) padding mask
            mask = (np.arange(cache.length) <= positions)[None, None]
        return self._attend(q, keys, values, mask, None)

    def head_writes(
        self, x: np.ndarray, mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """What each head adds to the output: ``(..., h, seq, d_model)``, and the weights.

        Head i's output times its rows ``i*d_k:(i+1)*d_k`` of W_O; the writes summed
        over heads, plus ``b_o``, are the layer's output.

        ```python
        import numpy as np
        from mha import MultiHeadAttention, causal_mask

        layer = MultiHeadAttention(d_model=8, n_heads=4, n_kv_heads=2)
        x = np.random.default_rng(0).normal(size=(1, 5, 8))
        writes, _ = layer.head_writes(x, causal_mask(5))
        assert writes.shape == (1, 4, 5, 8)
        assert np.allclose(writes.sum(axis=-3), layer(x, causal_mask(5))[0])
        ```
        """
        x, _, _, mask, _ = self._check_call(x, None, 0, mask, None)
        q, k, v = self._project(x, x, 0)
        group = self.n_heads // self.n_kv_heads
        heads, weights = attend(q, _repeat(k, group), _repeat(v, group), mask)
        w_o = self.w_o.astype(x.dtype, copy=False)
        return heads @ w_o.reshape(self.n_heads, self.d_k, self.d_model), weights

    def to_gqa(self, n_kv_heads: int) -> MultiHeadAttention:
        """A copy with ``n_kv_heads`` K/V heads, each the mean of its group's heads.

        The conversion of Ainslie et al. (2023): queries and W_O are kept; the K and V
        projections of each group of ``h_kv // n_kv_heads`` heads are averaged.
        ``n_kv_heads=1`` gives multi-query attention.

        ```python
        from mha import MultiHeadAttention

        mha_layer = MultiHeadAttention(d_model=8, n_heads=4)
        mqa = mha_layer.to_gqa(1)
        assert mqa.w_k.shape == (8, 2) and mqa.param_count < mha_layer.param_count
        ```
        """
        head_dim(self.d_model, self.n_heads, n_kv_heads)
        n_kv_heads = positive_int("n_kv_heads", n_kv_heads)
        if self.n_kv_heads % n_kv_heads:
            raise ValueError(
                f"n_kv_heads: expected a divisor of the current {self.n_kv_heads}, "
                f"got {n_kv_heads}"
            )
        grouped = copy.copy(self)
        grouped.n_kv_heads = n_kv_heads
        for name in ("w_k", "b_k", "w_v", "b_v"):
            array = getattr(self, name)
            if array is not None:
                pooled = mean_pool_heads(array, self.n_kv_heads, n_kv_heads)
                setattr(grouped, name, pooled)
        return grouped

    def _project(
        self, x: np.ndarray, kv: np.ndarray, start: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Q (..., h, seq, d_k) of ``x`` and K, V (..., h_kv, kv_seq, d_k) of ``kv``,
        the tokens at positions ``start, start + 1, ...``, rotated if ``rope``."""
        # a projection past the dtype's range is refused by name in attend (q, k), in
        # the rotation, or in _attend (v, through W_O), not warned about here first
        with np.errstate(over="ignore", invalid="ignore"):
            q = _split(_linear(x, self.w_q, self.b_q), self.n_heads)
            k = _split(_linear(kv, self.w_k, self.b_k), self.n_kv_heads)
            v = _split(_linear(kv, self.w_v, self.b_v), self.n_kv_heads)
        if self.rope is not None:
            q = self.rope._from_position(q, start)
            k = self.rope._from_position(k, start)
        return q, k, v

    def _attend(
        self,
        q: np.ndarray,
        k: np.ndarray,
        v: np.ndarray,
        mask: np.ndarray | None,
        head_mask: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each query head attends with its K/V head; heads merge, then W_O. The
        inputs were checked on entry and the weights when assigned: none is checked
        again here (``mask`` and ``head_mask`` come checked, or ``None``)."""
        group = self.n_heads // self.n_kv_heads
        k, v = _repeat(k, group), _repeat(v, group)  # query head i: K/V i // group
        heads, weights = attend(q, k, v, mask)  # (..., h, seq, d_k), (..., h, seq, len)
        with np.errstate(over="ignore", invalid="ignore"):  # refused by name below
            if head_mask is not None:
                heads = fits(
                    "head_mask",
                    "product with the heads",
                    heads * head_mask[:, None, None],
                )
            output = _linear(_merge(heads), self.w_o, self.b_o)
        return fits("x", "output through W_O", output), weights

    # --- input checks ---------------------------------------------------------------

    def _check_call(
        self,
        x: np.ndarray,
        kv: np.ndarray | None,
        start: int,
        mask: np.ndarray | None,
        head_mask: np.ndarray | None,
    ) -> tuple:
        """Every input of a call, checked once: ``x``, ``kv`` (``x`` if ``None``),
        ``start``, the mask against the scores' shape, the head mask as x's dtype."""
        x = self._check_input(x)
        kv = x if kv is None else self._check_input(kv, "kv")
        if kv.shape[-2] == 0 and x.shape[-2]:
            raise ValueError(
                f"kv: expected at least one token to attend to for the {x.shape[-2]} "
                f"queries of x, got shape {kv.shape}"
            )
        start = integer("start", start, minimum=0)
        self._check_rope(x.shape, kv.shape, start)
        if mask is not None:
            scores = (*x.shape[:-2], self.n_heads, x.shape[-2], kv.shape[-2])
            mask = check_mask(mask, scores)
        if head_mask is not None:
            head_mask = self._check_head_mask(head_mask, x.dtype)
        return x, kv, start, mask, head_mask

    def _check_rope(self, x_shape: tuple, kv_shape: tuple, start: int) -> None:
        """The rotation's checks on the queries' and keys' shapes, before projecting."""
        if self.rope is None:
            return
        for shape, heads in ((x_shape, self.n_heads), (kv_shape, self.n_kv_heads)):
            self.rope._check_shape((*shape[:-2], heads, shape[-2], self.d_k))
            self.rope._check_start(start, shape[-2])

    def _check_input(self, x: np.ndarray, name: str = "x") -> np.ndarray:
        x = float_array(name, x)
        if x.ndim < 2 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"{name}: expected shape (..., seq, d_model={self.d_model}), "
                f"got {x.shape}"
            )
        return x

    def _check_step(self, x_new: np.ndarray, cache: KVCache) -> np.ndarray:
        if not isinstance(cache, KVCache):
            raise ArgumentTypeError(
                f"cache: expected a KVCache, got {type(cache).__name__} {cache!r:.60}"
            )
        x_new = self._check_input(x_new, "x_new")
        if x_new.ndim != 3 or x_new.dtype != cache.dtype:
            raise ValueError(
                f"x_new: expected shape (batch, n_new, {self.d_model}) with the "
                f"cache's dtype {cache.dtype}, got {x_new.shape} {x_new.dtype}"
            )
        if x_new.shape[0] != cache.batch:
            raise ValueError(
                f"x_new: expected batch={cache.batch} (the cache's), got shape {x_new.shape}"
            )
        if (cache.n_kv_heads, cache.d_k) != (self.n_kv_heads, self.d_k):
            raise ValueError(
                f"cache: expected n_kv_heads={self.n_kv_heads}, d_k={self.d_k}, "
                f"got n_kv_heads={cache.n_kv_heads}, d_k={cache.d_k}"
            )
        cache.check_layer((self.d_model, self.n_heads, self.n_kv_heads), self)
        return x_new

    def _check_head_mask(self, head_mask: np.ndarray, dtype: np.dtype) -> np.ndarray:
        head_mask = as_array("head_mask", head_mask)
        if head_mask.dtype.kind not in "biuf":
            raise ArgumentTypeError(
                "head_mask: expected numbers (one factor per head), "
                f"got dtype {head_mask.dtype}"
            )
        if head_mask.shape != (self.n_heads,):
            raise ValueError(
                f"head_mask: expected shape ({self.n_heads},) (one per head), "
                f"got {head_mask.shape}"
            )
        if not np.isfinite(head_mask).all():
            raise ValueError(f"head_mask: expected finite values, got {head_mask}")
        return head_mask.astype(dtype, copy=False)


def _linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """``x @ w + b`` computed in x's dtype (a float32 input stays float32)."""
    y = x @ w.astype(x.dtype, copy=False)
    if b is not None:
        y += b.astype(x.dtype, copy=False)
    return y
