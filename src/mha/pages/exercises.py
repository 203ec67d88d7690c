"""The "Recall and exercises" page, ``docs/exercises.md``: recall answers, checkers.

``page()`` computes what the recall answers print. A checker runs the reader's function
apart (``mha.support.apart``: its own process, only each case's inputs, each call
stopped after ``TIME_LIMIT`` seconds) on random cases seeded by the function's code and
the values it reads, compares with the core in its own process and returns a ``Verdict``
naming the case that failed and why. It guards against honest mistakes, not attackers.
"""

from __future__ import annotations

import functools
import hashlib
import operator
import re
import types
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mha.accounting import (
    LayerMultiplyAdds,
    kv_cache_bytes,
    layer_multiply_adds,
    param_count,
    score_flops,
    score_multiply_adds,
)
from mha.attention import causal_mask, scaled_dot_product_attention, softmax
from mha.data import published
from mha.heads import merge_heads, split_heads
from mha.layer import MultiHeadAttention
from mha.pages import circuits, fast_attention
from mha.pages import cricket as cricket_page
from mha.positions import sinusoidal
from mha.rope import RotaryEmbedding
from mha.support.apart import Apart, Raised, global_names, raised, shown
from mha.support.page import Fact, Page
from mha.worked import cricket
from mha.worked.cricket import Cricket


@dataclass(frozen=True)
class Verdict:
    """Whether the reader's code is right, and why; ``bool(verdict)`` is the answer.

    ```python
    from mha.pages.exercises import Verdict

    assert not Verdict(False, "returned None")
    assert str(Verdict(True, "all good")) == "✓ all good"
    ```
    """

    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return f"{'✓' if self.passed else '✗'} {self.message}"


def check_split_heads(candidate: Callable[[np.ndarray, int], np.ndarray]) -> Verdict:
    """Check ``candidate(x, n_heads)``: ``(batch, seq, d_model) -> (batch, h, seq, d_k)``,
    head i of token t holding columns ``i*d_k:(i+1)*d_k`` of token t in x's dtype.

    ```python
    from mha.pages.exercises import check_split_heads

    def reshape_only(x, n_heads):  # a common bug: no swap of the seq and heads axes
        b, s, d = x.shape
        return x.reshape(b, n_heads, s, d // n_heads)

    verdict = check_split_heads(reshape_only)
    assert not verdict and "mixes tokens" in verdict.message
    ```
    """
    return _judged(_check_split_heads, candidate, "split_heads(x, n_heads)")


def check_gqa_param_count(candidate: Callable[[int, int, int], int]) -> Verdict:
    """Check ``candidate(d_model, n_heads, n_kv_heads)``, a GQA layer's parameters
    without biases, against ``mha.accounting.param_count`` from MHA to MQA.

    ```python
    from mha.pages.exercises import check_gqa_param_count

    verdict = check_gqa_param_count(lambda d, h, h_kv: 4 * d * d)
    assert not verdict and "MHA" in verdict.message
    ```
    """
    signature = "gqa_param_count(d_model, n_heads, n_kv_heads)"
    return _judged(_check_gqa_param_count, candidate, signature)


def best_kv_heads(n_heads: int, max_group: int) -> int:
    """The KV-cache exercise's answer: the fewest K/V heads that divide ``n_heads``
    with no K/V head serving more than ``max_group`` query heads.

    ```python
    from mha.pages.exercises import best_kv_heads

    assert best_kv_heads(32, 4) == 8
    assert best_kv_heads(12, 5) == 3  # 12 / 2 = 6 is too many; 3 divides 12
    ```
    """
    fits = (d for d in range(1, n_heads + 1) if n_heads // d <= max_group)
    return min(d for d in fits if n_heads % d == 0)


def check_best_kv_heads(candidate: Callable[[int, int], int]) -> Verdict:
    """Check ``candidate(n_heads, max_group)``, the smallest cache's K/V head count, on
    random cases with MHA, MQA and a ``ceil(n_heads / max_group)`` that does not divide.

    ```python
    from mha.pages.exercises import check_best_kv_heads

    def ignores_divisibility(n_heads, max_group):  # ceil(12 / 5) = 3 happens to work
        return -(-n_heads // max_group)

    verdict = check_best_kv_heads(ignores_divisibility)
    assert not verdict and "divide" in verdict.message
    ```
    """
    return _judged(_check_best_kv_heads, candidate, "best_kv_heads(n_heads, max_group)")


PAIRINGS = ("half-split", "interleaved")  # RoPE's pairings, as check_rope names them


def check_rope(
    candidate: Callable[[np.ndarray, np.ndarray, float], np.ndarray],
    pairing: str = "half-split",
) -> Verdict:
    """Check ``candidate(x, positions, base)``, ``x (..., seq, d_k)`` rotated by RoPE
    with ``pairing`` "half-split" (pairs (j, j + d_k/2), Hugging Face's Llama) or
    "interleaved" ((2j, 2j + 1), RoFormer), against ``mha.rope.RotaryEmbedding``.

    ```python
    from mha.pages.exercises import check_rope

    verdict = check_rope(lambda x, positions, base: x)  # no rotation at all
    assert not verdict and "unchanged" in verdict.message
    ```
    """
    if pairing not in PAIRINGS:
        raise ValueError(f"pairing: expected one of {PAIRINGS}, got {pairing!r}")
    check = functools.partial(_check_rope, interleaved=pairing == "interleaved")
    return _judged(check, candidate, "rope(x, positions, base)")


def check_multi_head_attention(candidate: Callable[..., np.ndarray]) -> Verdict:
    """Check ``candidate(x, w_q, w_k, w_v, w_o, n_heads, mask)``, the whole layer in x's
    dtype, against the core's ``MultiHeadAttention`` on random inputs, float32 and
    float64, with no mask, a causal, a padding and a random one (True = may attend).

    ```python
    import numpy as np
    from mha import merge_heads, scaled_dot_product_attention, split_heads
    from mha.pages.exercises import check_multi_head_attention

    def no_w_o(x, w_q, w_k, w_v, w_o, n_heads, mask=None):  # stops at the heads
        q, k, v = (split_heads(x @ w, n_heads) for w in (w_q, w_k, w_v))
        return merge_heads(scaled_dot_product_attention(q, k, v, mask)[0])

    verdict = check_multi_head_attention(no_w_o)
    assert not verdict and "W_O" in verdict.message
    ```
    """
    signature = "multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads, mask=None)"
    return _judged(functools.partial(_check_layer, cross=False), candidate, signature)


def check_cross_attention(candidate: Callable[..., np.ndarray]) -> Verdict:
    """Check ``candidate(x, memory, w_q, w_k, w_v, w_o, n_heads, mask)``: queries from
    x, keys and values from a longer memory, against the core's ``layer(x, mask,
    kv=memory)``, with no mask, a padding one over the memory and a random one.

    ```python
    from mha.pages.exercises import check_cross_attention

    verdict = check_cross_attention(lambda x, memory, *rest: memory)  # a row per key
    assert not verdict and "one row per query" in verdict.message
    ```
    """
    signature = "cross_attention(x, memory, w_q, w_k, w_v, w_o, n_heads, mask=None)"
    return _judged(functools.partial(_check_layer, cross=True), candidate, signature)


def padding_mask(lengths: np.ndarray, seq_len: int) -> np.ndarray:
    """The reference answer to the padding exercise: ``(batch, 1, 1, seq_len)``,
    True where key j is one of sentence b's ``lengths[b]`` real tokens.

    ```python
    import numpy as np
    from mha.pages.exercises import padding_mask

    mask = padding_mask(np.array([2, 3]), 3)
    assert mask.shape == (2, 1, 1, 3) and mask[0, 0, 0].tolist() == [True, True, False]
    ```
    """
    return (np.arange(seq_len) < np.asarray(lengths)[:, None])[:, None, None, :]


def check_padding_mask(candidate: Callable[[np.ndarray, int], np.ndarray]) -> Verdict:
    """Check ``candidate(lengths, seq_len)``: a boolean mask broadcasting to the scores
    that lets every query see its sentence's real keys, on random batches.

    ```python
    import numpy as np
    from mha.pages.exercises import check_padding_mask

    def masks_the_queries(lengths, seq_len):  # the sequence axis in the wrong place
        return (np.arange(seq_len) < lengths[:, None])[:, None, :, None]

    verdict = check_padding_mask(masks_the_queries)
    assert not verdict and "queries" in verdict.message
    ```
    """
    return _judged(_check_padding_mask, candidate, "padding_mask(lengths, seq_len)")


# --- how the checkers work: the same function gets the same cases, so the same
# verdict, on every run; an answer fitted to some fixed cases meets others.

TIME_LIMIT = 10.0  # seconds for each call of the reader's function
APART = "run apart in its own process: a check for honest mistakes, not a sandbox"
SPLIT_D_KS = (1, 2, 3, 4, 6, 8)  # one case each, in a random order
GQA_D_KS = (1, 2, 3, 5, 8, 16, 24, 40, 64)  # with 2 to 12 heads
KV_HEADS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 14, 16, 18, 24, 25, 32, 40, 48, 64, 96)
ROPE_D_KS = (2, 4, 6, 8, 16, 64)  # one case each, in a random order
ROPE_POSITIONS = 5_000  # positions drawn below this, in order, with gaps
LAYER_D_KS = (1, 2, 3, 4, 6)  # with 2 to 4 heads, the last case one head
LAYER_MASKS = ("none", "causal", "padding", "random")  # twice each; no causal for cross
LAYER_BUGS = tuple(  # (bug, what to tell the reader): each one change, tried in order
    {
        "no W_O": "this is the heads' concatenation: multiply it by W_O",
        "no mask": "the mask was not applied: where it is False, set the score to -inf before the softmax",
        "inverted mask": "the mask is inverted: True means may attend (the PyTorch convention)",
        "plain reshape": "a plain reshape to (batch, heads, seq, d_k) mixes tokens: reshape to (batch, seq, heads, d_k), then swap seq and heads (and back to merge)",
        "no scale": "the scores are not divided by √d_k",
        "sqrt d_model": "divide the scores by √d_k, the head's width, not √d_model",
        "softmax over queries": "the softmax runs over the keys: the last axis",
        "keys from x": "keys and values come from memory, queries from x",
    }.items()
)


def _judged(check: Callable, candidate: object, signature: str) -> Verdict:
    """``check(answer, rng)``, ``answer`` calling the candidate apart, with any failure
    to judge turned into a verdict."""
    if not callable(candidate):
        return Verdict(
            False, f"expected a function {signature}, got {shown(candidate)}"
        )
    try:
        with Apart(candidate, TIME_LIMIT) as answer:
            verdict = check(answer, np.random.default_rng(_seed(candidate)))
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # the answer returned something unreadable
        return Verdict(False, f"the answer's result could not be read: {raised(error)}")
    return Verdict(True, f"{verdict.message} ({APART})") if verdict else verdict


def _cases(
    answer: Callable, cases: list, problem: Callable, success: str, changed: str = ""
) -> Verdict:
    """Call ``answer`` on copies of each case's ``args``: the first case ``(what,
    args)`` where it raises, changes one of its arrays (``changed`` says how) or
    returns what ``problem(got, *args)`` finds wrong fails; else ``success``."""
    for what, args in cases:
        given = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        try:
            got = answer(*given)
        except Raised as error:
            found = error.description
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # the reader's code may raise anything, exit too
            found = raised(error)
        else:
            kept = all(
                not isinstance(a, np.ndarray)
                or (a.dtype == b.dtype and np.array_equal(a, b))
                for a, b in zip(args, given, strict=True)
            )
            found = problem(got, *args) if kept else changed
        if found:
            return Verdict(False, f"{what}: {found}")
    return Verdict(True, success)


def _array_problem(got: object, shape: tuple, dtype: np.dtype, hint: str) -> str | None:
    """What is wrong with ``got`` as an array of ``shape`` and ``dtype``, or None."""
    if not isinstance(got, np.ndarray):
        return f"returned {shown(got)}, expected a NumPy array"
    if got.shape != shape:
        return f"got shape {got.shape}, expected {shape}{hint}"
    if got.dtype.kind in "biu":
        return f"the values became {got.dtype}: keep x's dtype"
    if got.dtype != dtype:
        return f"returned dtype {got.dtype} for a {dtype} x: keep x's dtype"
    return None


def _count_problem(got: object, expected: int, why: Callable[[int], str]) -> str | None:
    """What is wrong with ``got`` as the integer ``expected`` (``why(count)`` for a
    wrong count), or None."""
    if isinstance(got, (bool, np.bool_)):
        return f"got {got!r}, expected an integer"
    if isinstance(got, (float, np.floating)):
        return (
            f"got {shown(got)}, a float: a count is an integer (divide with //, not /)"
        )
    try:
        count = operator.index(got)  # int, NumPy integers, 0-d integer arrays
    except TypeError:
        return f"got {shown(got)}, expected an integer"
    if count != expected:
        return f"got {count}, expected {expected}{why(count)}"
    return None


def _check_split_heads(answer: Callable, rng: np.random.Generator) -> Verdict:
    d_ks, cases = rng.permutation(SPLIT_D_KS), []
    for i, d_k in enumerate(d_ks):
        n_heads = 1 if i == len(d_ks) - 1 else int(rng.integers(2, 6))
        batch = int(rng.integers(2 if i == 0 else 1, 4))  # the first: several sentences
        shape = (batch, int(rng.integers(2, 6)), n_heads * int(d_k))
        x = rng.normal(size=shape).astype((np.float32, np.float64)[i % 2])
        what = f"x of shape {shape} ({x.dtype}) with n_heads={n_heads}"
        cases.append((what, (x, n_heads)))
    success = (
        f"split_heads matched mha.split_heads on {len(d_ks)} random inputs (d_k from "
        f"{min(d_ks)} to {max(d_ks)}, float32 and float64), keeping x's dtype and "
        "leaving x unchanged"
    )
    changed = "changed its input x: a split must leave the caller's array as it was"
    return _cases(answer, cases, _split_problem, success, changed)


def _split_problem(got: object, x: np.ndarray, n_heads: int) -> str | None:
    expected = split_heads(x, n_heads)
    hint = " (batch, heads, seq, d_k)"
    if problem := _array_problem(got, expected.shape, x.dtype, hint):
        return problem
    if np.array_equal(got, expected):
        return None
    if np.array_equal(got, x.reshape(x.shape[0], n_heads, x.shape[1], -1)):
        hint = dict(LAYER_BUGS)["plain reshape"].removesuffix(" (and back to merge)")
    else:
        hint = "head i of token t must be columns i*d_k:(i+1)*d_k of token t"
    return f"right shape, wrong values; {hint}"


def _check_gqa_param_count(answer: Callable, rng: np.random.Generator) -> Verdict:
    d_ks, cases = rng.permutation(GQA_D_KS)[:6], []
    for i, d_k in enumerate(d_ks):
        n_heads = int(rng.integers(2, 13))
        divisors = [g for g in range(1, n_heads + 1) if n_heads % g == 0]
        n_kv_heads = (n_heads, 1, int(rng.choice(divisors)))[min(i, 2)]  # MHA, MQA, any
        d_model = n_heads * int(d_k)
        what = f"d_model={d_model}, n_heads={n_heads}, n_kv_heads={n_kv_heads}"
        cases.append((what, (d_model, n_heads, n_kv_heads)))
    success = (
        f"the parameter count matched on {len(d_ks)} random shapes "
        f"(MHA to MQA, d_k from {min(d_ks)} to {max(d_ks)})"
    )
    return _cases(answer, cases, _gqa_problem, success)


def _gqa_problem(got: object, d_model: int, *heads: int) -> str | None:
    mha = "; that is the MHA count: with grouped K/V heads, W_K and W_V have n_kv_heads·d_k columns, not d_model"
    expected = param_count(d_model, heads[0], n_kv_heads=heads[1])
    return _count_problem(got, expected, lambda c: mha if c == 4 * d_model**2 else "")


def _check_best_kv_heads(answer: Callable, rng: np.random.Generator) -> Verdict:
    pairs = [(int(rng.choice(KV_HEADS)), 1)]  # MHA: every query head its own K/V
    n_heads = int(rng.choice(KV_HEADS))
    pairs.append((n_heads, n_heads + int(rng.integers(0, 3))))  # MQA
    # and cases up to eight, one where ceil(h / g) will not do
    while len(pairs) < 8 or not any(h % -(-h // g) for h, g in pairs):
        n_heads = int(rng.choice(KV_HEADS[1:]))
        pairs.append((n_heads, int(rng.integers(2, n_heads + 1))))
    heads = [h for h, _ in pairs]
    success = (
        f"the K/V head count matched on {len(pairs)} random cases "
        f"(n_heads from {min(heads)} to {max(heads)})"
    )
    cases = [(f"n_heads={h}, max_group={g}", (h, g)) for h, g in pairs]
    return _cases(answer, cases, _kv_problem, success)


def _kv_problem(got: object, n_heads: int, max_group: int) -> str | None:
    def why(count: int) -> str:
        if count > 0 and n_heads % count:
            return f"; {count} does not divide {n_heads}: the heads cannot be grouped evenly"
        if count > 0 and n_heads // count > max_group:
            return f"; {n_heads // count} query heads would share one K/V head"
        return "; a smaller cache meets the constraint"

    return _count_problem(got, best_kv_heads(n_heads, max_group), why)


def _check_rope(
    answer: Callable, rng: np.random.Generator, interleaved: bool
) -> Verdict:
    d_ks, bases, cases = rng.permutation(ROPE_D_KS), [], []
    for i, d_k in enumerate(d_ks):
        seq = 1 if i == len(d_ks) - 1 else int(rng.integers(2, 7))
        lead = tuple(int(n) for n in rng.integers(1, 4, size=i % 3))  # batch, heads
        x = rng.normal(size=(*lead, seq, int(d_k)))
        positions = np.sort(rng.choice(ROPE_POSITIONS, size=seq, replace=False))
        base = float(np.round(10 ** rng.uniform(3, 6)))  # log-uniform, 1e3 to 1e6
        bases.append(base)
        what = f"x of shape {x.shape}, positions {positions.tolist()}, base={base:g}"
        cases.append((what, (x, positions, base)))
    success = (
        f"rope matched mha.rope.RotaryEmbedding ({PAIRINGS[interleaved]} pairing) on "
        f"{len(d_ks)} random inputs (d_k from {min(d_ks)} to {max(d_ks)}, positions "
        f"below {ROPE_POSITIONS:,}, bases from {min(bases):g} to {max(bases):g})"
    )
    changed = (
        "changed x or positions: a rotation must leave the caller's arrays as they were"
    )
    problem = functools.partial(_rope_problem, interleaved=interleaved)
    return _cases(answer, cases, problem, success, changed)


def _rope_problem(
    got: object, x: np.ndarray, positions: np.ndarray, base: float, interleaved: bool
) -> str | None:
    d_k = x.shape[-1]
    rope = RotaryEmbedding(d_k, base, interleaved)
    if problem := _array_problem(got, x.shape, x.dtype, ", the shape of x"):
        return problem
    if np.allclose(got, rope(x, positions), rtol=1e-9, atol=1e-9):
        return None
    flip = np.ones(d_k)  # negates the second entry of each pair
    flip[slice(1, None, 2) if interleaved else slice(d_k // 2, None)] = -1
    pairs = ("(j, j + d_k/2)", "(2j, 2j + 1)")[interleaved]
    asked, other = PAIRINGS[interleaved], PAIRINGS[not interleaved]
    swapped = RotaryEmbedding(d_k, base, not interleaved)(x, positions)
    backwards = flip * rope(flip * x, positions)
    base_10k = RotaryEmbedding(d_k, 10_000.0, interleaved)(x, positions)
    suspects = {  # the hint: what the answer computed instead
        "x came back unchanged: each pair must turn by its angle": x,
        f"that is the {other} pairing; this check asks for the {asked} one, {pairs}": swapped,
        "each pair turned the wrong way: (a, b) goes to (a cos θ - b sin θ, a sin θ + b cos θ)": backwards,
        f"the angles use base 10,000, not the base passed ({base:g})": base_10k,
    }
    for hint, wrong in suspects.items():
        if np.allclose(got, wrong, rtol=1e-9, atol=1e-9):
            return f"wrong values; {hint}"
    return "wrong values; pair j of the token at position p turns by the angle p·base**(-2j/d_k)"


def _check_layer(answer: Callable, rng: np.random.Generator, cross: bool) -> Verdict:
    kinds = [k for k in LAYER_MASKS if not (cross and k == "causal")]
    kinds = [str(k) for k in (*rng.permutation(kinds), *rng.permutation(kinds))]
    # no mask first: a mistake away from the mask is named on the plainest case (a
    # softmax over the queries turns a fully masked key's column into NaN), and
    # reading x for the keys shows as values, not a raise
    kinds.insert(0, kinds.pop(kinds.index("none")))
    cases = []
    for i, kind in enumerate(kinds):
        n_heads = 1 if i == len(kinds) - 1 else int(rng.integers(2, 5))
        d_model = n_heads * int(rng.choice(LAYER_D_KS))
        batch = int(rng.integers(2 if i == 0 else 1, 4))  # the first: several sentences
        n = int(rng.integers(2, 6))
        m = n + int(rng.integers(1, 3)) if cross else n  # memory longer than x
        dtype = (np.float32, np.float64)[i % 2]
        x = rng.normal(size=(batch, n, d_model)).astype(dtype)
        memory = rng.normal(size=(batch, m, d_model)).astype(dtype)
        weights = [  # W_Q, W_K, W_V, W_O, scaled so that the maps are not flat
            (rng.normal(size=(d_model, d_model)) * 2 / np.sqrt(d_model)).astype(dtype)
            for _ in range(4)
        ]
        mask = _random_mask(rng, kind, batch, n, m)
        shape = f"x {x.shape}" + (f", memory {memory.shape}" if cross else "")
        arrays = (x, memory, *weights) if cross else (x, *weights)
        what = f"{shape} ({x.dtype}), n_heads={n_heads}, mask: {kind}"
        cases.append((what, (*arrays, n_heads, mask)))
    success = (
        f"{'cross_attention' if cross else 'multi_head_attention'} matched the core's "
        f"layer on {len(kinds)} random inputs (masks: {', '.join(sorted(set(kinds)))}; "
        "float32 and float64; one head to four), keeping x's dtype and leaving the "
        "inputs unchanged"
    )
    changed = "changed one of its inputs: the layer must leave the caller's arrays"
    problem = functools.partial(_layer_problem, cross=cross)
    return _cases(answer, cases, problem, success, changed)


def _random_mask(
    rng: np.random.Generator, kind: str, batch: int, n: int, m: int
) -> np.ndarray | None:
    """A mask of ``kind`` over ``m`` keys, with at least one key for every query."""
    if kind == "causal":
        return causal_mask(n)
    if kind == "padding":  # one sentence padded at least, every sentence non-empty
        lengths = rng.integers(1, m + 1, size=batch)
        lengths[rng.integers(batch)] = rng.integers(1, m)
        return padding_mask(lengths, m)
    if kind == "random":
        allowed = rng.random((batch, 1, n, m)) < 0.5
        allowed[..., np.arange(n), rng.integers(m, size=n)] = True
        return allowed
    return None


def _core_layer(
    x: np.ndarray, kv: np.ndarray, weights: list, n_heads: int, mask: np.ndarray | None
) -> np.ndarray:
    """The answer: the core's ``MultiHeadAttention`` holding ``weights``, in float64."""
    layer = MultiHeadAttention(x.shape[-1], n_heads)
    w_q, w_k, w_v, w_o = (w.astype(np.float64) for w in weights)
    layer.w_q, layer.w_k, layer.w_v, layer.w_o = w_q, w_k, w_v, w_o
    return layer(x.astype(np.float64), mask, kv=kv.astype(np.float64))[0]


def _layer_forward(
    x: np.ndarray,
    kv: np.ndarray,
    weights: list,
    n_heads: int,
    mask: np.ndarray | None,
    bug: str = "",
) -> np.ndarray:
    """The layer in float64 written out step by step with one ``bug`` of
    ``LAYER_BUGS`` (with ``bug=""`` it is the core's layer: a test holds them equal)."""
    w_q, w_k, w_v, w_o = (w.astype(np.float64) for w in weights)
    x, kv = x.astype(np.float64), (x if bug == "keys from x" else kv).astype(np.float64)

    def split(a: np.ndarray) -> np.ndarray:  # (batch, seq, d) -> (batch, h, seq, d_k)
        if bug == "plain reshape":
            return a.reshape(a.shape[0], n_heads, a.shape[1], -1)
        return split_heads(a, n_heads)

    q, k, v = split(x @ w_q), split(kv @ w_k), split(kv @ w_v)
    scale = {"no scale": 1.0, "sqrt d_model": np.sqrt(x.shape[-1])}
    scores = q @ k.swapaxes(-1, -2) / scale.get(bug, np.sqrt(q.shape[-1]))
    if mask is not None and bug != "no mask":
        scores = np.where(~mask if bug == "inverted mask" else mask, scores, -np.inf)
    heads = softmax(scores, axis=-2 if bug == "softmax over queries" else -1) @ v
    if bug == "plain reshape":  # merged the same way, the inverse of the split
        concat = heads.reshape(heads.shape[0], heads.shape[2], -1)
    else:
        concat = merge_heads(heads)
    return concat if bug == "no W_O" else concat @ w_o


def _layer_problem(got: object, *args: object, cross: bool) -> str | None:
    x, *weights, n_heads, mask = args
    kv = weights.pop(0) if cross else x
    expected = _core_layer(x, kv, weights, n_heads, mask)
    hint = " (batch, seq, d_model)"
    if cross and isinstance(got, np.ndarray) and got.shape[-2:] == kv.shape[-2:]:
        hint = ": one row per query; queries come from x, keys and values from memory"
    if problem := _array_problem(got, expected.shape, x.dtype, hint):
        return problem
    tolerance = {"rtol": 1e-4, "atol": 1e-4} if x.dtype == np.float32 else {}
    if np.allclose(got, expected, **tolerance):
        return None
    for bug, hint in LAYER_BUGS:
        try:
            wrong = _layer_forward(x, kv, weights, n_heads, mask, bug)
        except ValueError:  # an inverted mask may leave a query no key at all
            continue
        if wrong.shape == got.shape and np.allclose(got, wrong, **tolerance):
            return f"wrong values; {hint}"
    worst = float(np.nanmax(np.abs(got.astype(np.float64) - expected)))
    return f"wrong values (off by up to {worst:.3g}); compare each step with the page"


def _check_padding_mask(answer: Callable, rng: np.random.Generator) -> Verdict:
    cases = []
    for i in range(6):
        batch, seq_len = int(rng.integers(2, 5)), int(rng.integers(2, 8))
        lengths = rng.integers(1, seq_len + 1, size=batch)
        lengths[0], lengths[-1] = seq_len, rng.integers(1, seq_len)  # full, padded
        lengths = rng.permutation(lengths) if i % 2 else lengths
        cases.append(
            (f"lengths={lengths.tolist()}, seq_len={seq_len}", (lengths, seq_len))
        )
    seq_lens = [seq_len for _, (_, seq_len) in cases]
    success = (
        f"the padding mask matched on {len(cases)} random batches (sequences of "
        f"{min(seq_lens)} to {max(seq_lens)} positions, full and padded sentences)"
    )
    return _cases(answer, cases, _mask_problem, success, "changed its input lengths")


def _mask_problem(got: object, lengths: np.ndarray, seq_len: int) -> str | None:
    square = (len(lengths), 1, seq_len, seq_len)  # the scores' shape, with one head
    expected = np.broadcast_to(padding_mask(lengths, seq_len), square)
    if not isinstance(got, np.ndarray):
        return f"returned {shown(got)}, expected a NumPy array"
    if got.dtype != np.bool_:
        return f"got dtype {got.dtype}: a mask is boolean, True = may attend"
    try:
        spread = np.broadcast_to(got, square)
    except ValueError:
        return (
            f"shape {got.shape} does not broadcast to the scores' (batch, heads, seq, "
            f"seq) = {square}: put the key axis last, (batch, 1, 1, seq)"
        )
    queries = expected.swapaxes(-1, -2)
    one_more = np.broadcast_to(padding_mask(lengths + 1, seq_len), square)
    suspects = {  # the hint: what the answer computed instead
        None: expected,
        "inverted: True means may attend, so real tokens are True": ~expected,
        "it masks queries, not keys: padding must not be read, so the sequence axis is the last one, (batch, 1, 1, seq)": queries,
        "one key too many: sentence b's real keys are 0 to lengths[b] - 1": one_more,
    }
    for hint, mask in suspects.items():
        if np.array_equal(spread, mask):
            return hint
    return "wrong values: key j of sentence b may be read when j < lengths[b]"


def _seed(candidate: object) -> int:
    """A seed, the same on every run, from the candidate's code and the values it reads
    (an answer filling a table from failure messages meets new cases each time)."""
    parts = (
        _answer_parts(candidate, set())
        if isinstance(candidate, types.FunctionType)
        else [type(candidate).__qualname__.encode()]
    )
    return int.from_bytes(hashlib.sha256(b"\0".join(parts)).digest()[:8], "little")


def _answer_parts(fn: types.FunctionType, seen: set) -> list[bytes]:
    """The code of ``fn`` and the values it reads, functions it calls included."""
    seen.add(fn)
    code = fn.__code__
    values = [fn.__globals__[n] for n in global_names(code) if n in fn.__globals__]
    for cell in fn.__closure__ or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # a cell not yet filled
            values.append(None)
    values += [*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).items()]
    parts = _code_parts(code)
    for value in values:
        if isinstance(value, types.FunctionType):
            if value not in seen:
                parts += _answer_parts(value, seen)
        elif isinstance(value, (types.ModuleType, type)) or callable(value):
            parts.append(getattr(value, "__name__", type(value).__name__).encode())
        else:
            parts.append(_stable_repr(value).encode())
    return parts


def _stable_repr(value: object) -> str:
    """``repr(value)`` without what changes from run to run: addresses, set order."""
    try:
        if isinstance(value, (set, frozenset)):
            return repr(sorted(map(repr, value)))
        return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))
    except Exception:  # a reader's object may refuse any call
        return type(value).__qualname__


def _code_parts(code: types.CodeType) -> list[bytes]:
    """The bytes of a code object that define what it does, nested functions too (a
    nested code object's repr holds an address, a frozenset's order follows hashing)."""
    parts = [code.co_code, repr(code.co_names).encode()]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            parts += _code_parts(const)
        else:
            parts.append(_stable_repr(const).encode())
    return parts


# --- recall: the answers -----------------------------------------------------------


@functools.cache
def page() -> Page:
    """What the recall answers print: every number computed by the core.

    ```python
    from mha.pages.exercises import page

    p = page()
    assert p.bert["params"] == p.bert["params_from_arrays"] == 2_359_296
    ```
    """
    d, h = cricket.Q_HIS.shape[0], 4  # question 1: the cricket example with 4 heads
    q = split_heads(cricket.Q_HIS[None], h)  # (4, 1, 1): each head sees one dimension
    k, v = split_heads(cricket.K, h), split_heads(cricket.V, h)  # (4, 3, 1)
    weights = scaled_dot_product_attention(q, k, v)[1][:, 0]  # (heads, keys)
    four = {"d_model": d, "n_heads": h, "d_k": d // h, "weights": weights}
    four |= {"scale": np.sqrt(d // h), "two_head_scale": np.sqrt(d // 2)}
    b = published.model("BERT-base")  # question 2, also counted from a layer's arrays
    bert = {"d_model": b.d_model, "n_heads": b.n_heads, "d_k": b.d_k}
    bert |= {"params": param_count(b.d_model, b.n_heads), "d_squared": b.d_model**2}
    bert |= {"params_from_arrays": MultiHeadAttention(b.d_model, b.n_heads).param_count}
    bert["four_d_squared"] = 4 * b.d_model**2
    before, after = cricket.solve(), cricket.solve(v=cricket.V_TRIPLED)  # question 3
    voita = published.VOITA_2019  # question 5
    pruned = published.model(voita.model)
    per_head = 4 * pruned.d_model * pruned.d_k  # columns of W_Q, W_K, W_V, rows of W_O
    total = pruned.n_layers * param_count(pruned.d_model, pruned.n_heads)
    pruning = {"result": voita, "d_model": pruned.d_model, "d_k": pruned.d_k}
    pruning |= {"per_head": per_head, "pruned": per_head * voita.heads_pruned}
    pruning |= {"total": total, "pruned_share": per_head * voita.heads_pruned / total}
    pruning["kept_heads"] = voita.heads_total - voita.heads_pruned
    n, width, heads = cricket.COST_N, cricket.COST_D_MODEL, cricket.COST_HEADS  # q. 6
    cost = {"n": n, "d_model": width, "n_heads": heads, "d_k": width // heads}
    cost["per_head"] = n * n * (width // heads)
    for key, n_heads in (("one_head", 1), ("many_heads", heads)):
        cost[key] = score_multiply_adds(n, width, n_heads)
        cost[f"{key}_flops"] = score_flops(n, width, n_heads)
    fast = fast_attention.page()  # the tiled question, at the fast page's largest n
    row, block, size = fast.memory[-1], fast.tile, fast.itemsize
    online = {
        "n": row["n"],
        "block": block,
        "d_k": fast.d_k,
        "blocks": (row["n"] // block) ** 2,
    }
    online |= {"scores_bytes": row["n"] ** 2 * size, "block_bytes": block**2 * size}
    online |= {"naive_mb": row["naive_mb"], "tiled_mb": row["tiled_mb"]}
    online["dense_arrays"] = fast.dense_arrays
    s = circuits.studies()  # the keys question: the induction head, patched or not
    keys = {
        "receiver": "L{}H{}".format(*s.top[0]),
        "sender": "L{}H{}".format(*s.previous),
    }
    keys |= {
        "clean": float(s.sequences.clean[0]),
        "patched": float(s.sequences.patched[0]),
    }
    keys["control"] = float(np.nanmean(s.sequences.controls[0]))
    rope_shift, more = _rope_shift(), _more_recall()
    return Page(
        online=online,
        tokens=cricket.TOKENS,
        four_heads=four,
        flat=[i for i, row in enumerate(weights) if np.allclose(row, row[0])],
        bert=bert,
        example=before,
        tripled=after,
        moved=np.flatnonzero(~np.isclose(before.full.output, after.full.output)),
        variance=_score_variance(),
        pruning=pruning,
        cost=cost,
        rope_shift=rope_shift,
        keys=keys,
        **more,
        facts=facts(weights, bert, cost, before, after)
        | rope_facts(rope_shift)
        | recall_facts(*(more[k] for k in ("masks", "cross", "hull", "kv", "whole"))),
        figures={},
    )


def _score_variance(heads=(1, 8, 64), d_model=512, samples=4000) -> list[dict]:
    """Question 4: the sampled variance of q·k, raw and scaled by 1/√d_k, for q and k
    with independent N(0, 1) entries, at each head width (theory: d_k and 1)."""
    rng, rows = np.random.default_rng(0), []
    for h in heads:
        d_k = d_model // h
        q, k = rng.normal(size=(samples, d_k)), rng.normal(size=(samples, d_k))
        dots = (q * k).sum(axis=1)  # (samples,)
        row = {"n_heads": h, "d_k": d_k, "theory_raw": float(d_k)}  # d_k σ⁴
        rows.append(
            row
            | {"raw": float(dots.var()), "scaled": float((dots / np.sqrt(d_k)).var())}
        )
    return rows


def _rope_shift(m=3, n=10, shift=1_000, d_k=64) -> dict:
    """Question 7: one random q at ``m`` and k at ``n``, scored rotated and with
    sinusoidal vectors added, before and after moving both by ``shift``."""
    q, k = np.random.default_rng(0).standard_normal((2, d_k))
    rope, p = RotaryEmbedding(d_k), sinusoidal(n + shift + 1, d_k)
    out = {"m": m, "n": n, "shift": shift, "d_k": d_k, "base": rope.base}
    out |= {"rope": [], "added": []}
    for s in (0, shift):
        q_m, k_n = rope(np.stack([q, k]), np.array([m, n]) + s)
        out["rope"].append(float(q_m @ k_n))
        out["added"].append(float((q + p[m + s]) @ (k + p[n + s])))
    return out | {"rope_change": abs(out["rope"][1] - out["rope"][0])}


def rope_facts(question: dict) -> dict[str, Fact]:
    """The RoPE answer's facts: the rotated score stays, the added one moves.

    ```python
    from mha.pages.exercises import page, rope_facts

    moved = page().rope_shift | {"rope": [1.0, 2.0]}  # as if RoPE saw positions
    assert not rope_facts(moved)["rope_stays"].holds
    ```
    """
    rope, added = question["rope"], question["added"]
    return {
        "rope_stays": Fact(np.isclose(rope[0], rope[1], rtol=0, atol=1e-9), f"{rope}"),
        "added_moves": Fact(abs(added[0] - added[1]) > 0.1, f"{added}"),
    }


def _more_recall() -> dict[str, dict]:
    """The answers on masks, cross-attention, the FFN, depth, the KV cache and the
    whole layer's cost, each computed by the core."""
    rng = np.random.default_rng(0)
    n, d_k = 4, 3  # masks: a causal head over four tokens
    q, k, v = (rng.normal(size=(n, d_k)) for _ in range(3))
    out, _ = scaled_dot_product_attention(q, k, v, causal_mask(n))
    masks = {"n": n, "kept": int(causal_mask(n).sum()), "scores": n * n}
    masks |= {"first": out[0], "v_first": v[0]}
    layer = MultiHeadAttention(8, 4, rng=rng)  # cross: 3 decoder tokens, 5 encoder
    x, memory = rng.normal(size=(3, 8)), rng.normal(size=(5, 8))
    cross = {"d_model": 8, "n_heads": 4, "n": 3, "m": 5}
    cross["weights"] = layer(x, kv=memory)[1]
    values = rng.normal(size=(6, 4))  # the FFN: one head's outputs against its values
    mixed = softmax(rng.normal(size=(6, 6)) * 3) @ values
    within = (mixed >= values.min(axis=0)) & (mixed <= values.max(axis=0))
    hull = {"tokens": 6, "d_k": 4, "checks": mixed.size, "within": int(within.sum())}
    smol = published.decoder("SmolLM2-135M")  # depth: who can read whom
    pairs = smol.n_heads**2 * smol.n_layers * (smol.n_layers - 1) // 2
    depth = {"model": smol.name, "n_layers": smol.n_layers, "n_heads": smol.n_heads}
    depth["pairs"] = pairs
    kv = {}  # the KV cache: float16, batch 1, each model's published context
    for key, name in (("big", "Llama-2 7B"), ("small", "Llama-2 70B")):
        c = published.decoder(name)
        per_layer = kv_cache_bytes(1, c.n_kv_heads, c.head_dim, c.max_context, 2)
        kv[key] = {"config": c, "bytes": per_layer * c.n_layers}
    kv["ratio"] = kv["big"]["bytes"] / kv["small"]["bytes"]
    base = published.model("Transformer base")  # the whole layer, the count table's n
    whole = layer_multiply_adds(cricket.COST_N, base.d_model, base.n_heads)
    return dict(masks=masks, cross=cross, hull=hull, depth=depth, kv=kv, whole=whole)


def recall_facts(
    masks: dict, cross: dict, hull: dict, kv: dict, whole: LayerMultiplyAdds
) -> dict[str, Fact]:
    """The facts of the answers on masks, cross-attention, the FFN, the cache and the
    whole layer's cost.

    ```python
    from mha.pages.exercises import page, recall_facts

    p = page()
    hull = p.hull | {"within": 0}
    found = recall_facts(p.masks, p.cross, hull, p.kv, p.whole)
    assert not found["all_within"].holds and found["first_copies"].holds
    ```
    """
    w = cross["weights"]
    return {
        "first_copies": Fact(
            np.allclose(masks["first"], masks["v_first"]),
            f"out[0] {masks['first']}, v[0] {masks['v_first']}",
        ),
        "rows_over_memory": Fact(
            w.shape[-1] == cross["m"] and np.allclose(w.sum(axis=-1), 1),
            f"weights {w.shape}, row sums {w.sum(axis=-1).round(6).tolist()}",
        ),
        "all_within": Fact(
            hull["within"] == hull["checks"], f"{hull['within']} of {hull['checks']}"
        ),
        "gqa_smaller": Fact(
            kv["small"]["bytes"] < kv["big"]["bytes"]
            and kv["small"]["config"].params > kv["big"]["config"].params,
            f"{kv['small']['bytes']} vs {kv['big']['bytes']} bytes",
        ),
        "projections_more": Fact(
            whole.projections > whole.attention,
            f"projections {whole.projections}, scores and sum {whole.attention}",
        ),
    }


def facts(
    weights: np.ndarray, bert: dict, cost: dict, before: Cricket, after: Cricket
) -> dict[str, Fact]:
    """The facts the recall answers state: the flat head, the counts, the tripling.

    ```python
    import numpy as np
    from mha.pages.exercises import facts, page

    p = page()
    flat = np.full((4, 3), 1 / 3)  # every head flat: "head 2" no longer says it
    found = facts(flat, p.bert, p.cost, p.example, p.tripled)
    assert not found["flat_head"].holds and found["flops_same"].holds
    ```
    """
    flat = [i for i, row in enumerate(weights) if np.allclose(row, row[0])]
    moved = np.flatnonzero(~np.isclose(before.full.output, after.full.output))
    tripled = cricket_page.facts(before, cricket.solve_extended(), after)
    return {
        "flat_head": Fact(
            len(flat) == 1 and cricket.Q_HIS[flat[0]] == 0,
            f"weights of 'his' per head: {np.round(weights, 3).tolist()}",
        ),
        "bert_same": Fact(
            bert["params"] == bert["params_from_arrays"] == bert["four_d_squared"],
            f"{bert['params']}, {bert['params_from_arrays']}, {bert['four_d_squared']}",
        ),
        "flops_same": Fact(
            cost["one_head"] == cost["many_heads"],
            f"{cost['one_head']} vs {cost['many_heads']}",
        ),
        # the cricket page states the same three facts of the same example
        "no_weight_changes": tripled["no_weight_moves"],
        "head_a_still": tripled["a_unmoved"],
        "head_b_triples": tripled["b_tripled"],
        "single_moves": Fact(
            len(moved) == 1, f"coordinates that move: {moved.tolist()}"
        ),
    }
