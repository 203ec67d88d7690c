"""One head or two? The cricket sentence: what the page says of the worked example.

Page: ``docs/cricket.md``. The numbers come from ``mha.worked.cricket``; this module
holds the page's claims (the sentences that compare those numbers), its figures' alt
texts and captions. An alt text that states a result is checked like a claim: if the
values stop bearing it out, asking for it raises ``ClaimError``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.accounting import param_count, score_multiply_adds
from mha.attention import softmax
from mha.support.claims import Claim, check
from mha.worked import cricket

KOHLI, HIS, CENTURY, OVER = range(4)  # positions in cricket.EXTENDED_TOKENS


def _top(weights: np.ndarray) -> int:
    """The position of the largest weight, or -1 when two weights tie for it."""
    order = np.argsort(weights)[::-1]
    return -1 if np.isclose(weights[order[0]], weights[order[1]]) else int(order[0])


def claims(
    example: cricket.Cricket | None = None,
    extended: dict[str, cricket.Cricket] | None = None,
    tripled: cricket.Cricket | None = None,
) -> dict[str, Claim]:
    """The page's sentences about ``example``, ``extended`` and ``tripled`` (the
    example with v(century) tripled), by default the page's own.

    ```python
    import numpy as np
    from mha.pages.cricket import claims
    from mha.worked.cricket import solve

    assert all(c.holds for c in claims().values())
    other = solve(q=np.array([2.0, 1.0, 0.0, 1.0]))  # another query for "his"
    assert not claims(other)["tie"].holds
    ```
    """
    example = cricket.solve() if example is None else example
    extended = cricket.solve_extended() if extended is None else extended
    full, a, b = example.full.weights, example.head_a.weights, example.head_b.weights
    # the split alone: each head's scores divided by the full head's scale, √4 = 2
    a2, b2 = (
        softmax(h.dots / example.full.scale) for h in (example.head_a, example.head_b)
    )
    tie = bool(np.isclose(full[0], full[1])) and full[2] < full[0]
    because = f"one head's weights on Kohli, his, century: {np.round(full, 3).tolist()}"
    his, century = extended["his"], extended["century"]
    c_full = century.full.weights
    tripled = cricket.solve(v=cricket.tripled_century()) if tripled is None else tripled
    runs = ("full", "head_a", "head_b")
    c = cost()
    return {
        "no_weight_moves": Claim(
            "**no weight moves** in any head",
            all(
                np.allclose(getattr(tripled, r).weights, getattr(example, r).weights)
                for r in runs
            ),
            "weights before and after tripling v(century)",
        ),
        "a_unmoved": Claim(
            "its output does not move at all",
            bool(np.array_equal(tripled.head_a.output, example.head_a.output)),
            f"head A output {tripled.head_a.output.tolist()}",
        ),
        "b_tripled": Claim(
            "Head B's output is multiplied by exactly the factor the value was",
            bool(np.allclose(tripled.head_b.output, 3 * example.head_b.output)),
            f"head B output {tripled.head_b.output.tolist()}",
        ),
        "same_cost": Claim(
            "Nothing",
            c.params_one == c.params_two and c.madds_one == c.madds_many,
            f"{c}",
        ),
        "tie": Claim("but exactly as much to itself", tie, because),
        "tie_verdict": Claim("the distribution is a tie, not a decision", tie, because),
        "a_commits": Claim(
            "Head A, which only sees the name and pronoun features, breaks the tie",
            _top(a) == KOHLI and a[KOHLI] > full[KOHLI],
            f"head A {np.round(a, 3).tolist()}, one head {np.round(full, 3).tolist()}",
        ),
        "b_self": Claim(
            'Head B\'s largest weight is on "his" itself, not on "century"',
            _top(b) == HIS,
            f"head B {np.round(b, 3).tolist()}",
        ),
        "split_breaks_tie": Claim(
            "the split alone already breaks the tie",
            _top(a2) == KOHLI,
            f"head A at scale 2: {np.round(a2, 3).tolist()}",
        ),
        "scale_sharpens": Claim(
            "the smaller scale then sharpens what the split decided",
            _top(a2) == _top(a) == KOHLI and a[KOHLI] > a2[KOHLI],
            f"Kohli: {a2[KOHLI]:.3f} at scale 2, {a[KOHLI]:.3f} at scale √2",
        ),
        "b_scale": Claim(
            'and it moves head B towards "his" too',
            b[HIS] > b2[HIS] and b[CENTURY] < b2[CENTURY],
            f"head B at 2: {np.round(b2, 3).tolist()}, at √2: {np.round(b, 3).tolist()}",
        ),
        "century_tie": Claim(
            'the one head splits it equally between "Kohli" and "over"',
            bool(np.isclose(c_full[KOHLI], c_full[OVER]))
            and c_full[KOHLI] > max(c_full[HIS], c_full[CENTURY]),
            f"century, one head: {np.round(c_full, 3).tolist()}",
        ),
        "century_heads": Claim(
            'head A sends it to "Kohli" (whose century) and head B to "over" (when)',
            _top(century.head_a.weights) == KOHLI
            and _top(century.head_b.weights) == OVER,
            f"century, head A {np.round(century.head_a.weights, 3).tolist()}, "
            f"head B {np.round(century.head_b.weights, 3).tolist()}",
        ),
        "his_extended": Claim(
            '"his" still ties "Kohli" and itself in one head, and head A still picks '
            '"Kohli"',
            bool(np.isclose(his.full.weights[KOHLI], his.full.weights[HIS]))
            and _top(his.head_a.weights) == KOHLI,
            f"his, one head {np.round(his.full.weights, 3).tolist()}, "
            f"head A {np.round(his.head_a.weights, 3).tolist()}",
        ),
    }


def alt(example: cricket.Cricket, extended: dict[str, cricket.Cricket]) -> dict:
    """Each figure's alt text, its stated results checked like claims.

    ```python
    from mha.pages.cricket import alt
    from mha.worked.cricket import solve, solve_extended

    texts = alt(solve(), solve_extended())
    assert "evenly" in texts["three_distributions"]
    ```
    """
    c = claims(example, extended)
    where = "mha.pages.cricket.alt"
    check(c["tie"], where)
    check(c["a_commits"], where)
    check(c["b_self"], where)
    check(c["century_heads"], where)
    check(c["century_tie"], where)
    return {
        "three_distributions": (
            'Attention weights of "his" over Kohli, his and century. The single '
            "full-width head splits its weight evenly between Kohli and his; head A "
            "puts most of its weight on Kohli; head B puts its largest weight on his "
            "itself and the next largest on century."
        ),
        "extended": (
            'Two groups of bars, the query "his" above and the query "century" '
            "below, over Kohli, his, century and over. For century the single head "
            "ties Kohli and over; head A puts most of its weight on Kohli, head B on "
            "over."
        ),
    }


CAPTIONS = {
    "three_distributions": (
        'The weights of "his" under one full-width head and under heads A and B. '
        "Look at the first group: one head ties Kohli and his; head A does not."
    ),
    "extended": (
        "The extended example: each query's weights in one head and in heads A "
        'and B (the tables above give the numbers). Look at "century": one head ties '
        "Kohli and over, two heads give each its own distribution."
    ),
}


@dataclass(frozen=True)
class Cost:
    """What the second head costs: parameters of the example's layer, score work."""

    params_one: int  # the d_model = 4 layer with one head
    params_two: int  # ... with two heads
    d_model: int  # the base Transformer's width, for the multiply-adds
    n: int  # tokens
    heads: int  # the base Transformer's head count
    madds_one: int  # score multiply-adds with one head
    madds_many: int  # ... with ``heads`` heads


def cost() -> Cost:
    """Parameters and score multiply-adds with one head and with several.

    ```python
    from mha.pages.cricket import cost

    c = cost()
    assert c.params_one == c.params_two and c.madds_one == c.madds_many
    ```
    """
    d = cricket.K.shape[1]
    n, width, heads = cricket.COST_N, cricket.COST_D_MODEL, cricket.COST_HEADS
    return Cost(
        params_one=param_count(d, 1),
        params_two=param_count(d, 2),
        d_model=width,
        n=n,
        heads=heads,
        madds_one=score_multiply_adds(n, width, 1),
        madds_many=score_multiply_adds(n, width, heads),
    )
