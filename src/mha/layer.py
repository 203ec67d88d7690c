"""``MultiHeadAttention``: project, split into heads, attend, merge, project back."""

from __future__ import annotations

import numpy as np

from mha._validate import float_array, generator, head_dim
from mha.attention import scaled_dot_product_attention
from mha.heads import merge_heads, repeat_kv, split_heads


class MultiHeadAttention:
    """Multi-head self-attention with ``n_kv_heads`` K/V heads (MHA, GQA or MQA).

    Weights are plain attributes applied as ``x @ w`` and read on every call:
    ``w_q (d_model, h*d_k)``, ``w_k, w_v (d_model, h_kv*d_k)``, ``w_o (h*d_k, d_model)``,
    biases ``b_q b_k b_v b_o`` (``None`` unless ``bias=True``). Query head i uses
    columns ``i*d_k:(i+1)*d_k`` and reads K/V head ``i // (h // h_kv)``.

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

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_kv_heads: int | None = None,
        bias: bool = False,
        rng: np.random.Generator | None = None,
        dtype: np.dtype | type = np.float64,
    ) -> None:
        self.d_k = head_dim(d_model, n_heads, n_kv_heads)
        self.d_model = d_model
        self.n_heads = n_heads
        self.n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        rng = generator(rng)
        width_q, width_kv = n_heads * self.d_k, self.n_kv_heads * self.d_k

        def init(rows: int, cols: int) -> np.ndarray:
            return rng.normal(0.0, rows**-0.5, size=(rows, cols)).astype(dtype)

        def zeros(size: int) -> np.ndarray | None:
            return np.zeros(size, dtype=dtype) if bias else None

        self.w_q, self.b_q = init(d_model, width_q), zeros(width_q)
        self.w_k, self.b_k = init(d_model, width_kv), zeros(width_kv)
        self.w_v, self.b_v = init(d_model, width_kv), zeros(width_kv)
        self.w_o, self.b_o = init(width_q, d_model), zeros(d_model)

    @property
    def param_count(self) -> int:
        """Number of parameters, counted from the arrays themselves."""
        arrays = (self.w_q, self.w_k, self.w_v, self.w_o)
        biases = (self.b_q, self.b_k, self.b_v, self.b_o)
        return sum(a.size for a in arrays + biases if a is not None)

    def __call__(
        self, x: np.ndarray, mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Self-attention over ``x (..., seq, d_model)``.

        ``mask`` is boolean (True = may attend), broadcastable to
        ``(..., h, seq, seq)``. Returns ``(out (..., seq, d_model),
        weights (..., h, seq, seq))`` in x's dtype.
        """
        x = self._check_input(x)
        q = split_heads(_linear(x, self.w_q, self.b_q), self.n_heads)
        k = split_heads(_linear(x, self.w_k, self.b_k), self.n_kv_heads)
        v = split_heads(_linear(x, self.w_v, self.b_v), self.n_kv_heads)
        group = self.n_heads // self.n_kv_heads
        heads, weights = scaled_dot_product_attention(
            q, repeat_kv(k, group), repeat_kv(v, group), mask
        )  # heads (..., h, seq, d_k)
        return _linear(merge_heads(heads), self.w_o, self.b_o), weights

    def _check_input(self, x: np.ndarray) -> np.ndarray:
        x = float_array("x", x)
        if x.ndim < 2 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"x: expected shape (..., seq, d_model={self.d_model}), got {x.shape}"
            )
        return x


def _linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """``x @ w + b`` computed in x's dtype (a float32 input stays float32)."""
    y = x @ w.astype(x.dtype, copy=False)
    if b is not None:
        y += b.astype(x.dtype, copy=False)
    return y
