"""One head or two? The cricket sentence (``mha.worked.cricket``): what
``docs/cricket.md`` prints."""

from __future__ import annotations

import functools

import numpy as np

from mha.accounting import param_count, score_multiply_adds
from mha.attention import softmax
from mha.support.page import Fact, Figure, Page
from mha.worked import cricket
from mha.worked.cricket import Cricket, HeadRun

_KOHLI, _HIS, _CENTURY, _OVER = range(4)  # positions in cricket.EXTENDED_TOKENS


@functools.cache
def page() -> Page:
    """What the page prints: the example, split only, extended, tripled; its cost."""
    example, extended = cricket.solve(), cricket.solve_extended()
    tripled, cost = cricket.solve(v=cricket.V_TRIPLED), _cost()
    return Page(
        example=example,
        split=cricket.split_only(),
        extended=extended,
        tripled=tripled,
        tokens=cricket.TOKENS,
        # each run's weight on each token, by the token's name: a sentence that names
        # a token prints its weight from here, so the name and the value agree
        weight={
            run: dict(
                zip(cricket.TOKENS, getattr(example, run).weights.tolist(), strict=True)
            )
            for run in ("full", "head_a", "head_b")
        },
        cost=cost,
        facts=_facts(example, extended, tripled) | _cost_facts(cost),
        figures=_figures(example, extended),
    )


def _top(weights: np.ndarray) -> int:
    """The position of the largest weight, or -1 when two weights tie for it."""
    order = np.argsort(weights)[::-1]
    return -1 if np.isclose(weights[order[0]], weights[order[1]]) else int(order[0])


def _r(weights: np.ndarray) -> list[float]:  # rounded, for a fact's values
    return np.round(weights, 3).tolist()


def _facts(
    example: Cricket, extended: dict[str, Cricket], tripled: Cricket
) -> dict[str, Fact]:
    """The facts the page's sentences state about the example, extended and tripled."""
    full, a, b = example.full.weights, example.head_a.weights, example.head_b.weights
    # the split alone: each head's scores divided by the full head's scale, √4 = 2
    a2, b2 = (
        softmax(h.dots / example.full.scale) for h in (example.head_a, example.head_b)
    )
    tie = Fact(
        np.isclose(full[0], full[1]) and full[2] < full[0],
        f"one head's weights on Kohli, his, century: {_r(full)}",
        says="the single head's weights on Kohli and on his are equal (np.isclose), and century gets less",
    )
    his, century = extended["his"], extended["century"]
    c_full, tripling = century.full.weights, cricket.tripling_facts(example, tripled)
    return {
        "tie": tie,
        "tie_verdict": tie,
        "a_commits": Fact(
            _top(a) == _KOHLI and a[_KOHLI] > full[_KOHLI],
            f"head A {_r(a)}, one head {_r(full)}",
            says="head A's largest weight is on Kohli, and larger than the single head's weight on Kohli",
        ),
        "b_self": Fact(
            _top(b) == _HIS,
            f"head B {_r(b)}",
            says="head B's largest weight is on his itself",
        ),
        "split_breaks_tie": Fact(
            _top(a2) == _KOHLI,
            f"head A at scale 2: {_r(a2)}",
            says="at the single head's scale 2, head A's largest weight is already on Kohli",
        ),
        "scale_sharpens": Fact(
            _top(a2) == _top(a) == _KOHLI and a[_KOHLI] > a2[_KOHLI],
            f"Kohli: {a2[_KOHLI]:.3f} at scale 2, {a[_KOHLI]:.3f} at scale √2",
            says="head A's largest weight is on Kohli at scales 2 and √2, and larger at √2",
        ),
        "b_scale": Fact(
            b[_HIS] > b2[_HIS] and b[_CENTURY] < b2[_CENTURY],
            f"head B at 2: {_r(b2)}, at √2: {_r(b)}",
            says="from scale 2 to √2, head B's weight on his rises and its weight on century falls",
        ),
        "century_tie": Fact(
            np.isclose(c_full[_KOHLI], c_full[_OVER])
            and c_full[_KOHLI] > max(c_full[_HIS], c_full[_CENTURY]),
            f"century, one head: {_r(c_full)}",
            says="for the query century, the single head's weights on Kohli and on over are equal and above his and century",
        ),
        "century_heads": Fact(
            _top(century.head_a.weights) == _KOHLI
            and _top(century.head_b.weights) == _OVER,
            f"century, head A {_r(century.head_a.weights)}, "
            f"head B {_r(century.head_b.weights)}",
            says="for the query century, head A's largest weight is on Kohli and head B's on over",
        ),
        "his_extended": Fact(
            np.isclose(his.full.weights[_KOHLI], his.full.weights[_HIS])
            and _top(his.head_a.weights) == _KOHLI,
            f"his, one head {_r(his.full.weights)}, head A {_r(his.head_a.weights)}",
            says="with over in the sentence, the single head still gives Kohli and his equal weights, and head A's largest is on Kohli",
        ),
        # what tripling v(century) does, which the recall answers state too
        "no_weight_moves": tripling["no_weight_moves"],
        "a_unmoved": tripling["a_unmoved"],
        "b_tripled": tripling["b_tripled"],
    }


def _cost_facts(cost: dict[str, int]) -> dict[str, Fact]:
    """The fact the page states about the cost of one head against several."""
    c = cost
    return {
        "same_cost": Fact(
            c["params_one"] == c["params_two"] and c["madds_one"] == c["madds_many"],
            f"{c}",
            says="one head and two heads hold the same parameters and cost the same multiply-adds",
        ),
    }


def _figures(example: Cricket, extended: dict[str, Cricket]) -> dict[str, Figure]:
    """The page's two figures; their alt texts state what the facts check."""
    return {
        "three_distributions": Figure(
            "cricket.three_distributions",
            (example, cricket.TOKENS, cricket.QUERY),
            alt='Attention weights of "his" over Kohli, his and century. The single '
            "full-width head splits its weight evenly between Kohli and his; head A "
            "puts most of its weight on Kohli; head B puts its largest weight on his "
            "itself and the next largest on century.",
            caption='The weights of "his" under one full-width head and under heads '
            "A and B. Look at the first group: one head ties Kohli and his; head A "
            "does not.",
        ),
        "head_vectors": Figure(
            "cricket.head_vectors",
            (example, cricket.Q_HIS, cricket.K, cricket.TOKENS),
            alt="Two panels, head A's plane (columns 0 and 1) and head B's (columns 2 "
            'and 3). In each, the query of "his" is a thick arrow and the keys of '
            + ", ".join(cricket.TOKENS)
            + " are thinner arrows, each labelled with its dot product with the query "
            "and its weight; a dashed line drops from each key onto the query's dotted "
            "line. "
            + " ".join(_reach(run) for run in (example.head_a, example.head_b)),
            caption="Each head's query and keys in the head's own two columns. The dot "
            "product is how far a key reaches along the query's line (the dashed "
            "drop) times the query's length: look at which key reaches furthest in "
            "each head, the one that head weights most.",
        ),
        "extended": Figure(
            "cricket.extended_distributions",
            (extended, cricket.EXTENDED_TOKENS),
            alt='Two groups of bars, the query "his" above and the query "century" '
            "below, over Kohli, his, century and over. For century the single head "
            "ties Kohli and over; head A puts most of its weight on Kohli, head B on "
            "over.",
            caption="The extended example: each query's weights in one head and in "
            'heads A and B (the tables above give the numbers). Look at "century": '
            "one head ties Kohli and over, two heads give each its own distribution.",
        ),
    }


def _reach(run: HeadRun) -> str:
    """For the alt text: the key reaching furthest in one head, and the zero keys."""
    k = cricket.K[:, list(run.dims)]
    zero = [t for t, key in zip(cricket.TOKENS, k, strict=True) if not key.any()]
    text = f"In {run.name} the key of {cricket.TOKENS[_top(run.dots)]} reaches furthest"
    return text + "".join(f" and the key of {t} is zero" for t in zero) + "."


def _cost() -> dict[str, int]:
    """Parameters of the example with one head and two; score multiply-adds at the
    base Transformer's width with one head and with all of its heads."""
    d, n = cricket.K.shape[1], cricket.COST_N
    width, heads = cricket.COST_D_MODEL, cricket.COST_HEADS
    return {
        "params_one": param_count(d, 1),
        "params_two": param_count(d, 2),
        "d_model": width,
        "n": n,
        "heads": heads,
        "madds_one": score_multiply_adds(n, width, 1),
        "madds_many": score_multiply_adds(n, width, heads),
    }
