"""What a multi-head attention layer costs: parameters and score multiply-adds."""

from __future__ import annotations

from mha._validate import head_dim, positive_int


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
    d_k = head_dim(d_model, n_heads, n_kv_heads)
    h_kv = n_heads if n_kv_heads is None else n_kv_heads
    width_q, width_kv = n_heads * d_k, h_kv * d_k
    weights = d_model * width_q + 2 * d_model * width_kv + width_q * d_model
    biases = width_q + 2 * width_kv + d_model if bias else 0
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
    n = positive_int("n", n)
    d_k = head_dim(d_model, n_heads)
    return n_heads * n * n * d_k
