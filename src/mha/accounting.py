"""What a multi-head attention layer costs: parameters, multiply-adds, KV-cache bytes."""

from __future__ import annotations

import math
from dataclasses import dataclass

from mha.support.validate import flag, head_dim, positive_int


def param_count(
    d_model: int, n_heads: int, n_kv_heads: int | None = None, bias: bool = False
) -> int:
    """Parameters of W_Q, W_K, W_V, W_O (and their biases) for the given shape.

    With ``n_kv_heads == n_heads`` this is 4·d_model² (+ 4·d_model with biases),
    whatever the number of heads.

    ```python
    from mha.accounting import param_count

    assert param_count(768, 12) == 4 * 768**2 == 2_359_296
    assert param_count(512, 8, bias=True) == 4 * 512**2 + 4 * 512
    assert param_count(512, 8, n_kv_heads=2) < param_count(512, 8)
    ```
    """
    d_k = head_dim(d_model, n_heads, n_kv_heads)  # checks the sizes
    h = positive_int("n_heads", n_heads)  # Python ints: no overflow
    h_kv = h if n_kv_heads is None else positive_int("n_kv_heads", n_kv_heads)
    d_model, width_q, width_kv = h * d_k, h * d_k, h_kv * d_k
    weights = d_model * width_q + 2 * d_model * width_kv + width_q * d_model
    biases = width_q + 2 * width_kv + d_model if flag("bias", bias) else 0
    return weights + biases


def score_multiply_adds(n: int, d_model: int, n_heads: int) -> int:
    """Multiply-adds to form every head's ``n × n`` score matrix Q Kᵀ.

    Each head costs n²·d_k, so h heads cost n²·d_model for any h. FLOPs are twice
    this (one multiply and one add each).

    ```python
    from mha.accounting import score_multiply_adds

    assert score_multiply_adds(100, 512, 1) == score_multiply_adds(100, 512, 8) == 5_120_000
    ```
    """
    n = positive_int("n", n)  # Python ints: no overflow
    d_k = head_dim(d_model, n_heads)
    return positive_int("n_heads", n_heads) * n * n * d_k


def score_flops(n: int, d_model: int, n_heads: int) -> int:
    """FLOPs to form every head's score matrix: two per multiply-add (n²·d_model·2).

    ```python
    from mha.accounting import score_flops

    assert score_flops(100, 512, 8) == 2 * 5_120_000
    ```
    """
    return 2 * score_multiply_adds(n, d_model, n_heads)


@dataclass(frozen=True)
class LayerMultiplyAdds:
    """The multiply-adds of one multi-head attention layer on ``n`` tokens, by step."""

    n: int
    projections: int  # X W_Q, X W_K, X W_V and concat(heads) W_O: grows with n
    scores: int  # every head's Q_i K_iᵀ: grows with n²
    weighted_sum: int  # every head's weights times V_i: grows with n²

    @property
    def attention(self) -> int:
        """The part that grows with n²: the scores and the weighted sum."""
        return self.scores + self.weighted_sum

    @property
    def total(self) -> int:
        """The whole layer: projections, scores and weighted sum."""
        return self.projections + self.attention

    @property
    def crossover(self) -> float:
        """The token count at which the n² part costs as much as the projections
        (2·d_model for multi-head attention): n · projections / attention, since the
        projections grow as n and the rest as n²."""
        return self.n * self.projections / self.attention


def layer_multiply_adds(
    n: int,
    d_model: int,
    n_heads: int,
    n_kv_heads: int | None = None,
    d_k: int | None = None,
) -> LayerMultiplyAdds:
    """Multiply-adds of one layer's forward pass on ``n`` tokens, softmax aside.

    The projections cost 4·n·d_model² (each of W_Q, W_K, W_V, W_O is a
    d_model × d_model product per token); the scores and the weighted sum cost
    n²·d_model each, for any h. With grouped K/V heads, W_K and W_V have
    ``n_kv_heads · d_k`` columns; ``d_k`` is d_model / n_heads unless given (some
    models choose it apart, as PaLM 540B does).

    ```python
    from mha.accounting import layer_multiply_adds

    cost = layer_multiply_adds(100, 512, 8)
    assert cost.projections == 4 * 100 * 512**2 == 104_857_600
    assert cost.scores == cost.weighted_sum == 100**2 * 512 == 5_120_000
    assert layer_multiply_adds(1024, 512, 8).crossover == 2 * 512
    ```
    """
    width = head_dim(d_model, n_heads, n_kv_heads) if d_k is None else d_k
    d_k = positive_int("d_k", width)  # Python ints: the products cannot overflow
    n, d_model = positive_int("n", n), positive_int("d_model", d_model)
    h = positive_int("n_heads", n_heads)
    h_kv = h if n_kv_heads is None else positive_int("n_kv_heads", n_kv_heads)
    if h % h_kv:
        raise ValueError(f"n_kv_heads: expected a divisor of n_heads={h}, got {h_kv}")
    projections = n * d_model * (2 * h * d_k + 2 * h_kv * d_k)  # Q and O, K and V
    per_step = h * n * n * d_k  # h heads, n queries, n keys, d_k each
    return LayerMultiplyAdds(n, projections, per_step, per_step)


def kv_cache_bytes(
    batch: int, n_kv_heads: int, d_k: int, length: int, itemsize: int
) -> int:
    """Bytes of a KV cache holding ``length`` tokens: 2·batch·h_kv·d_k·length·itemsize.

    The 2 counts keys and values. The number of query heads does not appear: only
    the K/V heads are cached.

    ```python
    from mha.accounting import kv_cache_bytes

    # 8 K/V heads of 64 dims, 1,024 tokens, float16 (2 bytes)
    assert kv_cache_bytes(1, 8, 64, 1024, 2) == 2 * 8 * 64 * 1024 * 2
    ```
    """
    sizes = [
        positive_int(name, value)  # a Python int: the product cannot overflow
        for name, value in (
            ("batch", batch),
            ("n_kv_heads", n_kv_heads),
            ("d_k", d_k),
            ("length", length),
            ("itemsize", itemsize),
        )
    ]
    return 2 * math.prod(sizes)
