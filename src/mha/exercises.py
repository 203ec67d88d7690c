"""Checkers for the exercises a reader solves: each says whether their code is right.

A checker takes the reader's function, runs it on several inputs, compares with the
core and returns a ``Verdict``: true when every case matched, with a message that
says what was tried and, when something is wrong, which case failed and why.
A checker never raises because of the reader's code: an exception becomes a verdict.

```python
from mha.exercises import check_split_heads
from mha.heads import split_heads

verdict = check_split_heads(split_heads)
assert verdict and str(verdict).startswith("✓")
```
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mha.accounting import param_count
from mha.heads import split_heads

PASS, FAIL = "✓", "✗"


@dataclass(frozen=True)
class Verdict:
    """Whether the reader's code is right, and why; ``bool(verdict)`` is the answer.

    ```python
    from mha.exercises import Verdict

    assert not Verdict(False, "returned None")
    assert str(Verdict(True, "all good")) == "✓ all good"
    ```
    """

    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return f"{PASS if self.passed else FAIL} {self.message}"


def _call(fn: Callable, *args) -> tuple[object, str | None]:
    """``fn(*args)``, or the exception it raised, described for the reader."""
    try:
        return fn(*args), None
    except Exception as error:  # the reader's code may raise anything
        return None, f"raised {type(error).__name__}: {error}"


SPLIT_CASES = (((2, 3, 8), 2), ((1, 5, 12), 3), ((3, 4, 16), 4), ((2, 2, 6), 1))


def check_split_heads(candidate: Callable[[np.ndarray, int], np.ndarray]) -> Verdict:
    """Check ``candidate(x, n_heads)``: ``(batch, seq, d_model) -> (batch, h, seq, d_k)``.

    Head i of token t must hold columns ``i*d_k:(i+1)*d_k`` of token t.

    ```python
    from mha.exercises import check_split_heads

    def reshape_only(x, n_heads):  # a common bug: no swap of the seq and heads axes
        b, s, d = x.shape
        return x.reshape(b, n_heads, s, d // n_heads)

    verdict = check_split_heads(reshape_only)
    assert not verdict and "mixes tokens" in verdict.message
    ```
    """
    for shape, h in SPLIT_CASES:
        x = np.arange(np.prod(shape), dtype=float).reshape(shape)
        expected = split_heads(x, h)
        got, error = _call(candidate, x.copy(), h)
        case = f"x of shape {shape} with n_heads={h}"
        if error:
            return Verdict(False, f"{case}: {error}")
        got = np.asarray(got)
        if got.shape != expected.shape:
            return Verdict(
                False,
                f"{case}: got shape {got.shape}, expected {expected.shape} "
                "(batch, heads, seq, d_k)",
            )
        if not np.array_equal(got, expected):
            b, s, d = shape
            if np.array_equal(got, x.reshape(b, h, s, d // h)):
                hint = (
                    "a plain reshape to (batch, heads, seq, d_k) mixes tokens: "
                    "reshape to (batch, seq, heads, d_k), then swap seq and heads"
                )
            else:
                hint = "head i of token t must be columns i*d_k:(i+1)*d_k of token t"
            return Verdict(False, f"{case}: right shape, wrong values; {hint}")
    return Verdict(
        True, f"split_heads matched mha.split_heads on {len(SPLIT_CASES)} inputs"
    )


GQA_CASES = ((512, 8, 8), (512, 8, 2), (512, 8, 1), (768, 12, 4), (576, 9, 3))


def check_gqa_param_count(candidate: Callable[[int, int, int], int]) -> Verdict:
    """Check ``candidate(d_model, n_heads, n_kv_heads)``: parameters of a GQA layer.

    No biases. W_Q and W_O are ``d_model × d_model``; W_K and W_V have only
    ``n_kv_heads · d_k`` columns. The reference is ``mha.accounting.param_count``
    (which the tests check against the arrays of real layers).

    ```python
    from mha.exercises import check_gqa_param_count

    verdict = check_gqa_param_count(lambda d, h, h_kv: 4 * d * d)
    assert not verdict and "MHA" in verdict.message
    ```
    """
    for d_model, h, h_kv in GQA_CASES:
        expected = param_count(d_model, h, n_kv_heads=h_kv)
        got, error = _call(candidate, d_model, h, h_kv)
        case = f"d_model={d_model}, n_heads={h}, n_kv_heads={h_kv}"
        if error:
            return Verdict(False, f"{case}: {error}")
        if got != expected:
            hint = ""
            if got == 4 * d_model**2 and h_kv != h:
                hint = (
                    "; that is the MHA count: with grouped K/V heads, W_K and W_V "
                    "have n_kv_heads·d_k columns, not d_model"
                )
            return Verdict(False, f"{case}: got {got!r}, expected {expected}{hint}")
    return Verdict(
        True, f"the parameter count matched on {len(GQA_CASES)} shapes (MHA to MQA)"
    )


def best_kv_heads(n_heads: int, max_group: int) -> int:
    """The reference answer to the KV-cache exercise (the checker compares with it).

    The fewest K/V heads (the smallest KV cache) such that ``n_kv_heads`` divides
    ``n_heads`` and no K/V head serves more than ``max_group`` query heads.

    ```python
    from mha.exercises import best_kv_heads

    assert best_kv_heads(32, 4) == 8
    assert best_kv_heads(12, 5) == 3  # 12 / 2 = 6 is too many; 3 divides 12
    ```
    """
    return min(
        d
        for d in range(1, n_heads + 1)
        if n_heads % d == 0 and n_heads // d <= max_group
    )


KV_CASES = ((32, 4), (32, 1), (32, 32), (12, 5), (9, 4), (16, 3), (7, 2))


def check_best_kv_heads(candidate: Callable[[int, int], int]) -> Verdict:
    """Check ``candidate(n_heads, max_group)``: the K/V head count of the smallest cache.

    ```python
    from mha.exercises import check_best_kv_heads

    def ignores_divisibility(n_heads, max_group):  # ceil(12 / 5) = 3 happens to work
        return -(-n_heads // max_group)

    verdict = check_best_kv_heads(ignores_divisibility)
    assert not verdict and "divide" in verdict.message
    ```
    """
    for h, max_group in KV_CASES:
        expected = best_kv_heads(h, max_group)
        got, error = _call(candidate, h, max_group)
        case = f"n_heads={h}, max_group={max_group}"
        if error:
            return Verdict(False, f"{case}: {error}")
        if got != expected:
            if isinstance(got, (int, np.integer)) and got > 0 and h % got:
                why = f"{got} does not divide {h}: the heads cannot be grouped evenly"
            elif (
                isinstance(got, (int, np.integer)) and got > 0 and h // got > max_group
            ):
                why = f"{h // got} query heads would share one K/V head"
            else:
                why = "a smaller cache meets the constraint"
            return Verdict(False, f"{case}: got {got!r}, expected {expected}; {why}")
    return Verdict(True, f"the K/V head count matched on {len(KV_CASES)} cases")
