"""The "Recall and exercises" page (docs/exercises.md): recall answers and checkers.

The recall questions on what attention costs are answered by the core: each function
computes what one answer needs, and the page renders it. (The answer on the tripled
value of "century" is ``mha.worked.cricket.solve(v=tripled_century())``.)

The exercises' checkers take the reader's function, run it on random inputs (drawn
from a seed that the function's code determines, so a reader gets a stable verdict),
compare with the core and return a ``Verdict``: true when every case matched, with a
message that says what was tried and, when something is wrong, which case failed and
why. A checker never raises because of the reader's code: an exception becomes a
verdict.

```python
from mha.heads import split_heads
from mha.pages.exercises import bert_base, check_split_heads, four_heads

assert four_heads().d_k == 1
assert bert_base().params == 2_359_296
verdict = check_split_heads(split_heads)
assert verdict and str(verdict).startswith("✓")
```
"""

from __future__ import annotations

import hashlib
import operator
import types
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mha.accounting import param_count, score_flops, score_multiply_adds
from mha.attention import scaled_dot_product_attention
from mha.data import published
from mha.heads import split_heads
from mha.layer import MultiHeadAttention
from mha.support.claims import Claim
from mha.support.validate import generator
from mha.worked import cricket

PASS, FAIL = "✓", "✗"


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
        return f"{PASS if self.passed else FAIL} {self.message}"


def check_split_heads(candidate: Callable[[np.ndarray, int], np.ndarray]) -> Verdict:
    """Check ``candidate(x, n_heads)``: ``(batch, seq, d_model) -> (batch, h, seq, d_k)``.

    Head i of token t must hold columns ``i*d_k:(i+1)*d_k`` of token t, in x's dtype,
    and x must be left as it was. The inputs are random (shapes, several d_k, float32
    and float64, values), drawn from a seed that the candidate's code determines.

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
    """Check ``candidate(d_model, n_heads, n_kv_heads)``: parameters of a GQA layer.

    No biases. W_Q and W_O are ``d_model × d_model``; W_K and W_V have only
    ``n_kv_heads · d_k`` columns. The reference is ``mha.accounting.param_count``
    (which the tests check against the arrays of real layers). The shapes are random
    (several d_k, from MHA to MQA), drawn from a seed that the candidate's code
    determines; the answer must be an integer (NumPy's too).

    ```python
    from mha.pages.exercises import check_gqa_param_count

    verdict = check_gqa_param_count(lambda d, h, h_kv: 4 * d * d)
    assert not verdict and "MHA" in verdict.message
    ```
    """
    return _judged(
        _check_gqa_param_count,
        candidate,
        "gqa_param_count(d_model, n_heads, n_kv_heads)",
    )


def best_kv_heads(n_heads: int, max_group: int) -> int:
    """The reference answer to the KV-cache exercise (the checker compares with it).

    The fewest K/V heads (the smallest KV cache) such that ``n_kv_heads`` divides
    ``n_heads`` and no K/V head serves more than ``max_group`` query heads.

    ```python
    from mha.pages.exercises import best_kv_heads

    assert best_kv_heads(32, 4) == 8
    assert best_kv_heads(12, 5) == 3  # 12 / 2 = 6 is too many; 3 divides 12
    ```
    """
    return min(
        d
        for d in range(1, n_heads + 1)
        if n_heads % d == 0 and n_heads // d <= max_group
    )


def check_best_kv_heads(candidate: Callable[[int, int], int]) -> Verdict:
    """Check ``candidate(n_heads, max_group)``: the K/V head count of the smallest cache.

    The cases are random, drawn from a seed that the candidate's code determines, and
    always include ``max_group = 1`` (MHA), ``max_group >= n_heads`` (MQA) and a case
    where ``ceil(n_heads / max_group)`` does not divide ``n_heads``.

    ```python
    from mha.pages.exercises import check_best_kv_heads

    def ignores_divisibility(n_heads, max_group):  # ceil(12 / 5) = 3 happens to work
        return -(-n_heads // max_group)

    verdict = check_best_kv_heads(ignores_divisibility)
    assert not verdict and "divide" in verdict.message
    ```
    """
    return _judged(_check_best_kv_heads, candidate, "best_kv_heads(n_heads, max_group)")


# --- how the checkers work ---------------------------------------------------------
# Each draws its cases from a generator seeded by the candidate's code: the same
# function gets the same cases, so the same verdict, on every run and every build,
# and an answer fitted to some fixed cases meets others. A checker never raises
# because of the reader's code (only an interrupt, Ctrl-C, goes through).

SPLIT_D_KS = (1, 2, 3, 4, 6, 8)  # one case each, in a random order
GQA_D_KS = (1, 2, 3, 5, 8, 16, 24, 40, 64)  # with 2 to 12 heads
KV_HEADS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 14, 16, 18, 24, 25, 32, 40, 48, 64, 96)


def _judged(check: Callable, candidate: object, signature: str) -> Verdict:
    """``check(candidate, rng)``, with any failure to judge turned into a verdict."""
    if not callable(candidate):
        return Verdict(
            False, f"expected a function {signature}, got {_shown(candidate)}"
        )
    try:
        return check(candidate, np.random.default_rng(_seed(candidate)))
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # the answer returned something unreadable
        return Verdict(
            False, f"the answer's result could not be read: {_raised(error)}"
        )


def _check_split_heads(candidate: Callable, rng: np.random.Generator) -> Verdict:
    d_ks = rng.permutation(SPLIT_D_KS)
    for i, d_k in enumerate(d_ks):
        n_heads = 1 if i == len(d_ks) - 1 else int(rng.integers(2, 6))
        shape = (int(rng.integers(1, 4)), int(rng.integers(2, 6)), n_heads * int(d_k))
        dtype = (np.float32, np.float64)[i % 2]
        x = rng.normal(size=shape).astype(dtype)
        expected = split_heads(x, n_heads)  # computed before the candidate runs
        given = x.copy()  # the caller's array, as the candidate sees it
        got, error = _call(candidate, given, n_heads)
        case = f"x of shape {shape} ({np.dtype(dtype)}) with n_heads={n_heads}"
        problem = error or _split_problem(got, expected, x, given, n_heads)
        if problem:
            return Verdict(False, f"{case}: {problem}")
    return Verdict(
        True,
        f"split_heads matched mha.split_heads on {len(d_ks)} random inputs "
        f"(d_k from {min(d_ks)} to {max(d_ks)}, float32 and float64), "
        "keeping x's dtype and leaving x unchanged",
    )


def _split_problem(
    got: object, expected: np.ndarray, x: np.ndarray, given: np.ndarray, n_heads: int
) -> str | None:
    """What is wrong with ``got``, the candidate's split of ``x``, or None."""
    if not (given.dtype == x.dtype and np.array_equal(given, x)):
        return "changed its input x: a split must leave the caller's array as it was"
    if not isinstance(got, np.ndarray):
        return f"returned {_shown(got)}, expected a NumPy array"
    if got.shape != expected.shape:
        return (
            f"got shape {got.shape}, expected {expected.shape} (batch, heads, seq, d_k)"
        )
    if got.dtype.kind in "biu":
        return f"the values became {got.dtype}: keep x's dtype (a reshape does)"
    if got.dtype != x.dtype:
        return f"returned dtype {got.dtype} for a {x.dtype} x: keep x's dtype"
    if not np.array_equal(got, expected):
        batch, seq, d_model = x.shape
        if np.array_equal(got, x.reshape(batch, n_heads, seq, d_model // n_heads)):
            hint = (
                "a plain reshape to (batch, heads, seq, d_k) mixes tokens: "
                "reshape to (batch, seq, heads, d_k), then swap seq and heads"
            )
        else:
            hint = "head i of token t must be columns i*d_k:(i+1)*d_k of token t"
        return f"right shape, wrong values; {hint}"
    return None


def _check_gqa_param_count(candidate: Callable, rng: np.random.Generator) -> Verdict:
    d_ks = rng.permutation(GQA_D_KS)[:6]
    for i, d_k in enumerate(d_ks):
        n_heads = int(rng.integers(2, 13))
        divisors = [g for g in range(1, n_heads + 1) if n_heads % g == 0]
        n_kv_heads = (n_heads, 1, int(rng.choice(divisors)))[min(i, 2)]  # MHA, MQA, any
        d_model = n_heads * int(d_k)
        expected = param_count(d_model, n_heads, n_kv_heads=n_kv_heads)
        got, error = _call(candidate, d_model, n_heads, n_kv_heads)
        case = f"d_model={d_model}, n_heads={n_heads}, n_kv_heads={n_kv_heads}"
        count, problem = _count(got)
        problem = error or problem
        if not problem and count != expected:
            hint = ""
            if count == 4 * d_model**2:
                hint = (
                    "; that is the MHA count: with grouped K/V heads, W_K and W_V "
                    "have n_kv_heads·d_k columns, not d_model"
                )
            problem = f"got {count}, expected {expected}{hint}"
        if problem:
            return Verdict(False, f"{case}: {problem}")
    return Verdict(
        True,
        f"the parameter count matched on {len(d_ks)} random shapes "
        f"(MHA to MQA, d_k from {min(d_ks)} to {max(d_ks)})",
    )


def _check_best_kv_heads(candidate: Callable, rng: np.random.Generator) -> Verdict:
    cases = [(int(rng.choice(KV_HEADS)), 1)]  # MHA: every query head its own K/V
    n_heads = int(rng.choice(KV_HEADS))
    cases.append((n_heads, n_heads + int(rng.integers(0, 3))))  # MQA
    while len(cases) < 8 or not any(  # and a case where ceil(h / g) will not do
        h % -(-h // g) for h, g in cases
    ):
        n_heads = int(rng.choice(KV_HEADS[1:]))
        cases.append((n_heads, int(rng.integers(2, n_heads + 1))))
    for n_heads, max_group in cases:
        expected = best_kv_heads(n_heads, max_group)
        got, error = _call(candidate, n_heads, max_group)
        case = f"n_heads={n_heads}, max_group={max_group}"
        count, problem = _count(got)
        problem = error or problem
        if not problem and count != expected:
            if count > 0 and n_heads % count:
                why = f"{count} does not divide {n_heads}: the heads cannot be grouped evenly"
            elif count > 0 and n_heads // count > max_group:
                why = f"{n_heads // count} query heads would share one K/V head"
            else:
                why = "a smaller cache meets the constraint"
            problem = f"got {count}, expected {expected}; {why}"
        if problem:
            return Verdict(False, f"{case}: {problem}")
    return Verdict(
        True,
        f"the K/V head count matched on {len(cases)} random cases "
        f"(n_heads from {min(h for h, _ in cases)} to {max(h for h, _ in cases)})",
    )


def _call(fn: Callable, *args: object) -> tuple[object, str | None]:
    """``fn(*args)``, or what it raised, described for the reader."""
    try:
        return fn(*args), None
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # the reader's code may raise anything, exit too
        return None, _raised(error)


def _count(got: object) -> tuple[int, str | None]:
    """``got`` as a Python int if it is an integer (Python or NumPy), or a problem."""
    if isinstance(got, (bool, np.bool_)):
        return 0, f"got {got!r}, expected an integer"
    if isinstance(got, (float, np.floating)):
        return 0, (
            f"got {_shown(got)}, a float: a count is an integer (divide with //, not /)"
        )
    try:
        return operator.index(got), None  # int, NumPy integers, 0-d integer arrays
    except TypeError:
        return 0, f"got {_shown(got)}, expected an integer"


def _seed(candidate: object) -> int:
    """A seed from the candidate's code (``co_code``, ``co_consts``, ``co_names``),
    the same on every run; the name of its type for a callable without code."""
    code = getattr(candidate, "__code__", None)
    parts = (
        _code_parts(code)
        if isinstance(code, types.CodeType)
        else [type(candidate).__qualname__.encode()]
    )
    return int.from_bytes(hashlib.sha256(b"\0".join(parts)).digest()[:8], "little")


def _code_parts(code: types.CodeType) -> list[bytes]:
    """The bytes of a code object that define what it does, nested functions too
    (a nested code object's repr holds an address, different on every run)."""
    parts = [code.co_code, repr(code.co_names).encode()]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            parts += _code_parts(const)
        elif isinstance(const, frozenset):  # its order varies with string hashing
            parts.append(repr(sorted(map(repr, const))).encode())
        else:
            parts.append(repr(const).encode())
    return parts


def _shown(value: object) -> str:
    """``value`` for a message: its repr, cut short, and its type."""
    try:
        text = repr(value)
    except Exception:  # a reader's object may refuse any call
        text = "<no repr>"
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def _raised(error: BaseException) -> str:
    """``raised ValueError: message``, even when the message cannot be read."""
    try:
        message = str(error)
    except Exception:  # a reader's exception may refuse to print
        message = "<no message>"
    return f"raised {type(error).__name__}: {message}"


# --- recall: the answers -----------------------------------------------------------


@dataclass(frozen=True)
class FourHeads:
    """The cricket example with h = 4 heads of one dimension each."""

    d_model: int
    n_heads: int
    d_k: int
    scale: float  # √d_k
    two_head_scale: float  # √d_k with two heads, for comparison
    weights: np.ndarray  # (4, 3): each head's weights of "his" over the three keys


def four_heads() -> FourHeads:
    """Question 1: d_model = 4 split into 4 heads; each head sees one dimension.

    ```python
    import numpy as np
    from mha.pages.exercises import four_heads

    ans = four_heads()
    assert ans.scale == 1.0 and np.allclose(ans.weights.sum(axis=1), 1)
    ```
    """
    d_model, h = cricket.Q_HIS.shape[0], 4
    q = split_heads(cricket.Q_HIS[None], h)  # (4, 1, 1)
    k, v = split_heads(cricket.K, h), split_heads(cricket.V, h)  # (4, 3, 1)
    _, weights = scaled_dot_product_attention(q, k, v)  # (4, 1, 3)
    d_k = d_model // h
    return FourHeads(
        d_model,
        h,
        d_k,
        float(np.sqrt(d_k)),
        float(np.sqrt(d_model // 2)),
        weights[:, 0],
    )


@dataclass(frozen=True)
class BertBase:
    """Question 2: BERT-base's attention projections, counted two ways."""

    d_model: int
    n_heads: int
    d_k: int
    params: int  # 4·d_model², from mha.accounting
    params_from_arrays: int  # the sizes of the four weight arrays of a real layer
    four_d_squared: int
    d_squared: int


def bert_base() -> BertBase:
    """d_k, 4·d² and the parameter count of a layer built at BERT-base's shape.

    ```python
    from mha.pages.exercises import bert_base

    ans = bert_base()
    assert ans.params == ans.params_from_arrays == ans.four_d_squared
    ```
    """
    shape = published.model("BERT-base")
    layer = MultiHeadAttention(shape.d_model, shape.n_heads)
    return BertBase(
        d_model=shape.d_model,
        n_heads=shape.n_heads,
        d_k=layer.d_k,
        params=param_count(shape.d_model, shape.n_heads),
        params_from_arrays=layer.param_count,
        four_d_squared=4 * shape.d_model**2,
        d_squared=shape.d_model**2,
    )


@dataclass(frozen=True)
class ScoreVariance:
    """Sampled variance of q·k, raw and scaled by 1/√d_k, for one head count."""

    n_heads: int
    d_k: int
    raw: float  # theory: d_k σ⁴
    scaled: float  # theory: σ⁴
    theory_raw: float


def score_variance(
    d_model: int = 512,
    heads: tuple[int, ...] = (1, 8, 64),
    samples: int = 4000,
    sigma: float = 1.0,
    rng: np.random.Generator | None = None,
) -> tuple[ScoreVariance, ...]:
    """Question 4: sample q, k with independent N(0, σ²) entries for each head width.

    ```python
    from mha.pages.exercises import score_variance

    rows = score_variance(d_model=64, heads=(1, 16), samples=2000)
    assert all(abs(r.scaled - 1) < 0.15 for r in rows)
    ```
    """
    rng = generator(rng)
    rows = []
    for h in heads:
        d_k = d_model // h
        q = rng.normal(0.0, sigma, size=(samples, d_k))
        k = rng.normal(0.0, sigma, size=(samples, d_k))
        dots = (q * k).sum(axis=1)  # (samples,)
        rows.append(
            ScoreVariance(
                h,
                d_k,
                float(dots.var()),
                float((dots / np.sqrt(d_k)).var()),
                d_k * sigma**4,
            )
        )
    return tuple(rows)


@dataclass(frozen=True)
class Pruning:
    """Question 5: what pruning removes, against what the architecture holds."""

    result: published.PruningResult
    d_model: int
    d_k: int
    layers: int
    per_head: int  # parameters one head owns: its columns of W_Q, W_K, W_V, rows of W_O
    pruned: int  # per_head × heads pruned
    total: int  # all encoder self-attention projections
    kept_heads: int

    @property
    def pruned_share(self) -> float:
        """Fraction of the encoder's attention parameters that the pruned heads held."""
        return self.pruned / self.total


def pruning() -> Pruning:
    """Voita et al.'s pruning, counted in parameters of the model's shape.

    ```python
    from mha.pages.exercises import pruning

    ans = pruning()
    assert ans.per_head * ans.result.heads_total == ans.total
    ```
    """
    result = published.VOITA_2019
    shape = published.model(result.model)
    per_head = 4 * shape.d_model * shape.d_k
    return Pruning(
        result=result,
        d_model=shape.d_model,
        d_k=shape.d_k,
        layers=shape.n_layers,
        per_head=per_head,
        pruned=per_head * result.heads_pruned,
        total=shape.n_layers * param_count(shape.d_model, shape.n_heads),
        kept_heads=result.heads_total - result.heads_pruned,
    )


@dataclass(frozen=True)
class Flops:
    """Question 6: the score cost of one head and of h heads at the same width."""

    n: int
    d_model: int
    n_heads: int
    d_k: int
    one_head: int  # multiply-adds, one head of d_k = d_model
    per_head: int  # multiply-adds of one of the h narrow heads: n²·d_k
    many_heads: int  # all h narrow heads
    one_head_flops: int
    many_heads_flops: int


def flops(n: int = cricket.COST_N, d_model: int = cricket.COST_D_MODEL) -> Flops:
    """n²·d for one head and h·n²·(d/h) for h heads (the seed's n and d_model).

    ```python
    from mha.pages.exercises import flops

    ans = flops()
    assert ans.one_head == ans.many_heads == 5_120_000
    ```
    """
    h = cricket.COST_HEADS
    return Flops(
        n=n,
        d_model=d_model,
        n_heads=h,
        d_k=d_model // h,
        one_head=score_multiply_adds(n, d_model, 1),
        per_head=n * n * (d_model // h),
        many_heads=score_multiply_adds(n, d_model, h),
        one_head_flops=score_flops(n, d_model, 1),
        many_heads_flops=score_flops(n, d_model, h),
    )


def claims() -> dict[str, Claim]:
    """The recall answers' sentences that compare computed values, checked.

    ```python
    from mha.pages.exercises import claims

    assert all(c.holds for c in claims().values())
    ```
    """
    weights = four_heads().weights  # (heads, keys)
    flat = [i for i, row in enumerate(weights) if np.allclose(row, row[0])]
    out = {
        "flat_head": Claim(
            f"Head {flat[0]}'s query coordinate is zero, so every key gets the same "
            "score and the head spreads its weight evenly"
            if len(flat) == 1
            else "no head's query coordinate is zero",
            len(flat) == 1 and cricket.Q_HIS[flat[0]] == 0,
            f"weights of 'his' per head: {np.round(weights, 3).tolist()}",
        ),
    }
    bert = bert_base()
    costs = flops()
    before, after = cricket.solve(), cricket.solve(v=cricket.tripled_century())
    runs = ("full", "head_a", "head_b")
    same_weights = all(
        np.allclose(getattr(before, r).weights, getattr(after, r).weights) for r in runs
    )
    moved = np.flatnonzero(~np.isclose(before.full.output, after.full.output))
    ordinal = ("first", "second", "third", "fourth")
    out["bert_same"] = Claim(
        "the same",
        bert.params == bert.params_from_arrays == bert.four_d_squared,
        f"{bert.params}, {bert.params_from_arrays}, {bert.four_d_squared}",
    )
    out["flops_same"] = Claim(
        "the same",
        costs.one_head == costs.many_heads,
        f"{costs.one_head} vs {costs.many_heads}",
    )
    out["no_weight_changes"] = Claim(
        "no weight changes", same_weights, "weights before and after, every run"
    )
    out["head_a_still"] = Claim(
        "so its output does not move",
        np.allclose(before.head_a.output, after.head_a.output),
        f"head A {before.head_a.output} -> {after.head_a.output}",
    )
    out["head_b_triples"] = Claim(
        "Head B's output triples",
        np.allclose(after.head_b.output, 3 * before.head_b.output),
        f"head B {before.head_b.output} -> {after.head_b.output}",
    )
    out["single_moves"] = Claim(
        f"in the single head only the {ordinal[moved[0]]} coordinate (index "
        f"{moved[0]}) moves"
        if len(moved) == 1
        else "in the single head several coordinates move",
        len(moved) == 1,
        f"coordinates that move: {moved.tolist()}",
    )
    return out
