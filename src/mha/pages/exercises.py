"""The "Recall and exercises" page, ``docs/exercises.md``: recall answers, checkers.

``page()`` computes what the recall answers print. The exercises' checkers take the
reader's function, run it on random inputs (drawn from a seed that the function's
code and the values it reads determine: a stable verdict, but new cases for an answer
that learns), compare with the core and return a ``Verdict`` that says what was tried
and, when something is wrong, which case failed and why. A checker never raises
because of the reader's code.

The reader's function runs apart (``mha.support.apart``): in its own spawned process,
one per check, given only each case's inputs, each call stopped after ``TIME_LIMIT``
seconds. The expected values stay in the checker's process and the comparison is made
there, on plain data. This guards against honest mistakes, not against an attacker.
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

from mha.accounting import param_count, score_flops, score_multiply_adds
from mha.attention import scaled_dot_product_attention
from mha.data import published
from mha.heads import split_heads
from mha.layer import MultiHeadAttention
from mha.pages import cricket as cricket_page
from mha.support.apart import Apart, Raised, global_names, raised, shown
from mha.support.page import Fact, Page
from mha.worked import cricket
from mha.worked.cricket import Cricket

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
    """Check ``candidate(x, n_heads)``: ``(batch, seq, d_model) -> (batch, h, seq, d_k)``,
    head i of token t holding columns ``i*d_k:(i+1)*d_k`` of token t in x's dtype, x
    left as it was, on random shapes, d_k, float32 and float64.

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
    """Check ``candidate(d_model, n_heads, n_kv_heads)``: parameters of a GQA layer
    without biases (W_K and W_V have ``n_kv_heads · d_k`` columns), an integer, against
    ``mha.accounting.param_count`` on random shapes from MHA to MQA.

    ```python
    from mha.pages.exercises import check_gqa_param_count

    verdict = check_gqa_param_count(lambda d, h, h_kv: 4 * d * d)
    assert not verdict and "MHA" in verdict.message
    ```
    """
    signature = "gqa_param_count(d_model, n_heads, n_kv_heads)"
    return _judged(_check_gqa_param_count, candidate, signature)


def best_kv_heads(n_heads: int, max_group: int) -> int:
    """The fewest K/V heads (the smallest KV cache) such that ``n_kv_heads`` divides
    ``n_heads`` and no K/V head serves more than ``max_group`` query heads: the
    reference answer to the KV-cache exercise.

    ```python
    from mha.pages.exercises import best_kv_heads

    assert best_kv_heads(32, 4) == 8
    assert best_kv_heads(12, 5) == 3  # 12 / 2 = 6 is too many; 3 divides 12
    ```
    """
    fits = (d for d in range(1, n_heads + 1) if n_heads // d <= max_group)
    return min(d for d in fits if n_heads % d == 0)


def check_best_kv_heads(candidate: Callable[[int, int], int]) -> Verdict:
    """Check ``candidate(n_heads, max_group)``: the K/V head count of the smallest
    cache, on random cases that always include ``max_group = 1`` (MHA),
    ``max_group >= n_heads`` (MQA) and one where ``ceil(n_heads / max_group)`` does
    not divide ``n_heads``.

    ```python
    from mha.pages.exercises import check_best_kv_heads

    def ignores_divisibility(n_heads, max_group):  # ceil(12 / 5) = 3 happens to work
        return -(-n_heads // max_group)

    verdict = check_best_kv_heads(ignores_divisibility)
    assert not verdict and "divide" in verdict.message
    ```
    """
    return _judged(_check_best_kv_heads, candidate, "best_kv_heads(n_heads, max_group)")


# --- how the checkers work: the same function gets the same cases, so the same
# verdict, on every run; an answer fitted to some fixed cases meets others.

SPLIT_D_KS = (1, 2, 3, 4, 6, 8)  # one case each, in a random order
GQA_D_KS = (1, 2, 3, 5, 8, 16, 24, 40, 64)  # with 2 to 12 heads
KV_HEADS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 14, 16, 18, 24, 25, 32, 40, 48, 64, 96)


TIME_LIMIT = 10.0  # seconds for each call of the reader's function
APART = "run apart in its own process: a check for honest mistakes, not a sandbox"


def _judged(check: Callable, candidate: object, signature: str) -> Verdict:
    """``check(answer, rng)``, where ``answer`` calls the candidate apart (use it
    through ``_call``), with any failure to judge turned into a verdict."""
    if not callable(candidate):
        return Verdict(
            False, f"expected a function {signature}, got {shown(candidate)}"
        )
    rng = np.random.default_rng(_seed(candidate))
    try:
        with Apart(candidate, TIME_LIMIT) as answer:
            verdict = check(answer, rng)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # the answer returned something unreadable
        return Verdict(False, f"the answer's result could not be read: {raised(error)}")
    return Verdict(True, f"{verdict.message} ({APART})") if verdict else verdict


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
        return f"returned {shown(got)}, expected a NumPy array"
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
        case = f"d_model={d_model}, n_heads={n_heads}, n_kv_heads={n_kv_heads}"
        count, problem = _count(*_call(candidate, d_model, n_heads, n_kv_heads))
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
        case = f"n_heads={n_heads}, max_group={max_group}"
        count, problem = _count(*_call(candidate, n_heads, max_group))
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
    """``fn(*args)``, or what went wrong (what it raised, a time out), described for
    the reader; ``fn`` is the answer ``_judged`` hands to a check."""
    try:
        return fn(*args), None
    except Raised as error:
        return None, error.description
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # the reader's code may raise anything, exit too
        return None, raised(error)


def _count(got: object, error: str | None) -> tuple[int, str | None]:
    """``got`` as a Python int if it is an integer (Python or NumPy), or a problem
    (``error``, what the call raised, first)."""
    if error:
        return 0, error
    if isinstance(got, (bool, np.bool_)):
        return 0, f"got {got!r}, expected an integer"
    if isinstance(got, (float, np.floating)):
        return 0, (
            f"got {shown(got)}, a float: a count is an integer (divide with //, not /)"
        )
    try:
        return operator.index(got), None  # int, NumPy integers, 0-d integer arrays
    except TypeError:
        return 0, f"got {shown(got)}, expected an integer"


def _seed(candidate: object) -> int:
    """A seed from the candidate's code (``co_code``, ``co_consts``, ``co_names``)
    and the values it reads (globals, closure, defaults), the same on every run; the
    name of its type for a callable without code. An answer that fills a table from
    failure messages reads a new table each time, so it meets new cases."""
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
    shape = published.model("BERT-base")  # question 2
    layer = MultiHeadAttention(shape.d_model, shape.n_heads)  # counted from its arrays
    bert = {"d_model": shape.d_model, "n_heads": shape.n_heads, "d_k": shape.d_k}
    bert |= {
        "params": param_count(shape.d_model, shape.n_heads),
        "params_from_arrays": layer.param_count,
        "four_d_squared": 4 * shape.d_model**2,
        "d_squared": shape.d_model**2,
    }
    before, after = cricket.solve(), cricket.solve(v=cricket.V_TRIPLED)
    voita = published.VOITA_2019  # question 5
    pruned = published.model(voita.model)
    per_head = 4 * pruned.d_model * pruned.d_k  # columns of W_Q, W_K, W_V, rows of W_O
    n, width, heads = cricket.COST_N, cricket.COST_D_MODEL, cricket.COST_HEADS  # q. 6
    cost = {"n": n, "d_model": width, "n_heads": heads, "d_k": width // heads}
    cost |= {
        "one_head": score_multiply_adds(n, width, 1),
        "per_head": n * n * (width // heads),
        "many_heads": score_multiply_adds(n, width, heads),
        "one_head_flops": score_flops(n, width, 1),
        "many_heads_flops": score_flops(n, width, heads),
    }
    total = pruned.n_layers * param_count(pruned.d_model, pruned.n_heads)
    return Page(
        tokens=cricket.TOKENS,
        four_heads=four,
        flat=[i for i, row in enumerate(weights) if np.allclose(row, row[0])],
        bert=bert,
        example=before,
        tripled=after,
        moved=np.flatnonzero(~np.isclose(before.full.output, after.full.output)),
        variance=_score_variance(),
        pruning={
            "result": voita,
            "d_model": pruned.d_model,
            "d_k": pruned.d_k,
            "per_head": per_head,
            "pruned": per_head * voita.heads_pruned,
            "total": total,
            "pruned_share": per_head * voita.heads_pruned / total,
            "kept_heads": voita.heads_total - voita.heads_pruned,
        },
        cost=cost,
        facts=facts(weights, bert, cost, before, after),
        figures={},
    )


def _score_variance(heads=(1, 8, 64), d_model=512, samples=4000) -> list[dict]:
    """Question 4: the sampled variance of q·k, raw and scaled by 1/√d_k, for q and k
    with independent N(0, 1) entries, at each head width (theory: d_k and 1)."""
    rng, rows = np.random.default_rng(0), []
    for h in heads:
        d_k = d_model // h
        q = rng.normal(0.0, 1.0, size=(samples, d_k))
        k = rng.normal(0.0, 1.0, size=(samples, d_k))
        dots = (q * k).sum(axis=1)  # (samples,)
        raw, scaled = float(dots.var()), float((dots / np.sqrt(d_k)).var())
        row = {"n_heads": h, "d_k": d_k, "raw": raw, "scaled": scaled}
        rows.append(row | {"theory_raw": float(d_k)})  # d_k σ⁴
    return rows


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
