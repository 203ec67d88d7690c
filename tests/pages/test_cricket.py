"""The cricket worked example: the values derived by hand, the page's corrected
statements (head B, split versus scale), the extended example and the page."""

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from mha.figures.cricket import head_vectors
from mha.pages import cricket as cricket_page
from mha.pages.cricket import _facts as facts
from mha.pages.cricket import page
from mha.support.formatting import decimals
from mha.worked.cricket import (
    EXTENDED_TOKENS,
    K_EXTENDED,
    Q_CENTURY,
    Q_HIS,
    QUERY,
    TOKENS,
    V_EXTENDED,
    V_TRIPLED,
    K,
    V,
    solve,
    solve_extended,
    split_only,
)
from tests.pages.drawn import assert_series, drawn

TOL = 5e-4
LEANING = np.array([2.0, 1.0, 0.0, 1.0])  # a query for "his" leaning to "Kohli"


@pytest.fixture(scope="module")
def example():
    return solve()


def test_single_full_width_head(example):
    np.testing.assert_allclose(example.full.dots, [4, 4, 1])
    np.testing.assert_allclose(example.full.scores, [2, 2, 0.5])
    np.testing.assert_allclose(example.full.weights, [0.450, 0.450, 0.100], atol=TOL)
    np.testing.assert_allclose(example.full.output, [0.450, 0.450, 0.100, 0], atol=TOL)


def test_head_a_resolves_the_coreference(example):
    np.testing.assert_allclose(example.head_a.scores, [2.828, 1.414, 0], atol=TOL)
    np.testing.assert_allclose(example.head_a.weights, [0.768, 0.187, 0.045], atol=TOL)
    np.testing.assert_allclose(example.head_a.output, [0.768, 0.187], atol=TOL)


def test_head_b_registers_the_topic(example):
    np.testing.assert_allclose(example.head_b.scores, [0, 1.414, 0.707], atol=TOL)
    np.testing.assert_allclose(example.head_b.weights, [0.140, 0.576, 0.284], atol=TOL)
    np.testing.assert_allclose(example.head_b.output, [0.284, 0], atol=TOL)


def test_concatenation_and_w_o(example):
    np.testing.assert_allclose(example.concat, [0.768, 0.187, 0.284, 0], atol=TOL)
    np.testing.assert_allclose(example.mixed, sum(example.writes), atol=1e-12)
    # with W_O every output coordinate reads from both heads
    assert all((np.abs(w) > 0).any() for w in example.writes)


def test_tripled_century_moves_outputs_not_weights(example):
    tripled = solve(v=V_TRIPLED)
    for before, after in [
        (example.full, tripled.full),
        (example.head_a, tripled.head_a),
        (example.head_b, tripled.head_b),
    ]:
        np.testing.assert_array_equal(before.weights, after.weights)
    np.testing.assert_array_equal(tripled.head_a.output, example.head_a.output)
    np.testing.assert_allclose(tripled.head_b.output, [0.852, 0], atol=TOL)
    # the seed rounds 3 x 0.100 to 0.300; the exact statement is "tripled"
    expected_full = example.full.output * [1, 1, 3, 1]
    np.testing.assert_allclose(tripled.full.output, expected_full, rtol=1e-12)
    np.testing.assert_allclose(tripled.concat, [0.768, 0.187, 0.852, 0], atol=TOL)


# --- the corrected statements (head B, split vs scale) and the extended example --


def test_head_b_puts_its_largest_weight_on_his_itself(example):
    assert TOKENS[example.head_b.weights.argmax()] == "his"
    assert example.head_b.weights[1] > example.head_b.weights[2]
    assert page().facts["b_self"].holds


def test_the_split_alone_breaks_the_tie_and_the_scale_sharpens_it(example):
    head_a, head_b = split_only()
    assert head_a.scale == example.full.scale == 2.0
    np.testing.assert_allclose(head_a.weights, [0.665, 0.245, 0.090], atol=TOL)
    np.testing.assert_allclose(head_b.weights, [0.186, 0.506, 0.307], atol=TOL)
    assert head_a.weights.argmax() == 0  # Kohli at the full head's scale already
    assert example.head_a.weights[0] > head_a.weights[0]  # 0.768 at √2 > 0.665 at 2


def test_extended_example_separates_whose_and_when():
    ex = solve_extended()
    century, his = ex["century"], ex["his"]
    np.testing.assert_allclose(
        century.full.weights, [0.365, 0.049, 0.221, 0.365], atol=TOL
    )
    np.testing.assert_allclose(
        century.head_a.weights, [0.735, 0.179, 0.043, 0.043], atol=TOL
    )
    np.testing.assert_allclose(
        century.head_b.weights, [0.038, 0.009, 0.315, 0.638], atol=TOL
    )
    np.testing.assert_allclose(his.full.weights, [0.424, 0.424, 0.095, 0.057], atol=TOL)
    assert EXTENDED_TOKENS[century.head_b.weights.argmax()] == "over"
    # the first three keys and values and the query of "his" are the example's
    np.testing.assert_array_equal(K_EXTENDED[:3], K)
    np.testing.assert_array_equal(V_EXTENDED[:3], V)


def test_facts_hold_and_turn_false_when_the_values_change(example):
    extended, tripled = solve_extended(), solve(v=V_TRIPLED)
    assert all(f.holds for f in facts(example, extended, tripled).values())
    # "his" leaning to "Kohli": no tie in one head
    leaning = solve(q=LEANING)
    false = facts(leaning, extended, leaning)
    assert not false["tie"].holds and not false["tie_verdict"].holds
    # a query for "century" with no coreference part: no tie in one head any more
    other = solve_extended(q_century=np.array([0.0, 0.0, 2.0, -1.0]))
    assert not facts(example, other, tripled)["century_tie"].holds
    # values scaled by 2 instead of 3: head B's output is not tripled
    doubled = solve(v=np.array(V) * [1, 1, 2, 1])
    assert not facts(example, extended, doubled)["b_tripled"].holds
    # another query moves the weights: "no weight moves" is false
    assert not facts(example, extended, leaning)["no_weight_moves"].holds


def fails(name: str, **changed) -> bool:
    """Whether the page's fact ``name`` is false once ``changed`` replaces some of
    the page's ``example``, ``extended``, ``tripled`` or ``cost``."""
    p = page()
    values = dict(example=p.example, extended=p.extended, tripled=p.tripled)
    values = {**values, **changed}
    cost = values.pop("cost", p.cost)
    return not (facts(**values) | cricket_page._cost_facts(cost))[name].holds


def test_each_heads_facts_turn_false_when_its_weights_change():
    ex = page().example
    a, b = ex.head_a, ex.head_b
    split_a, split_b = page().split  # the heads at the full head's scale, 2
    # head A as undecided as the one head: it no longer breaks the tie
    undecided = replace(a, weights=ex.full.weights)
    assert fails("a_commits", example=replace(ex, head_a=undecided))
    # head B's weights on "his" and "century" swapped: "century" comes first
    his, century = cricket_page._HIS, cricket_page._CENTURY
    swapped = b.weights.copy()
    swapped[[his, century]] = swapped[[century, his]]
    assert fails("b_self", example=replace(ex, head_b=replace(b, weights=swapped)))
    # head A scoring the keys as the one head does: the split leaves the tie
    tied = replace(ex, head_a=replace(a, dots=ex.full.dots))
    assert fails("split_breaks_tie", example=tied)
    # the heads at the full head's scale, not their own: nothing sharpens
    assert fails("scale_sharpens", example=replace(ex, head_a=split_a))
    assert fails("b_scale", example=replace(ex, head_b=split_b))


def test_the_extended_tripled_and_cost_facts_turn_false_on_other_values():
    p = page()
    # a query for "century" that asks only whose: head B has no key to prefer
    whose = solve_extended(q_century=Q_CENTURY * [1, 1, 0, 0])
    assert fails("century_heads", extended=whose)
    # "his" leaning to "Kohli" in the extended example: one head no longer ties
    leaning = solve(q=LEANING, k=K_EXTENDED, v=V_EXTENDED)
    assert fails("his_extended", extended={**p.extended, "his": leaning})
    # v(Kohli) tripled instead of v(century): head A's output moves
    assert fails("a_unmoved", tripled=solve(v=np.array(V) * [[3.0], [1.0], [1.0]]))
    # heads as wide as the model: h times the score multiply-adds of one head
    c = p.cost
    assert fails("same_cost", cost={**c, "madds_many": c["heads"] * c["madds_one"]})
    wider = {**c, "params_two": 2 * c["params_one"]}  # two heads of the full width
    assert fails("same_cost", cost=wider)


def test_the_figures_draw_the_pages_values(example):
    figures = page().figures
    assert figures["three_distributions"].data[0].head_a.weights.tolist() == (
        example.head_a.weights.tolist()
    )
    assert set(figures["extended"].data[0]) == {"his", "century"}


def test_each_heads_plane_draws_its_own_columns_of_q_and_the_keys(example):
    panels = head_vectors(example, Q_HIS, K, TOKENS)
    for fig, run in zip(panels, (example.head_a, example.head_b), strict=True):
        ax = fig.axes[0]  # q and every key that is not zero in the head's columns
        assert len(ax.patches) == 1 + int(np.count_nonzero(K[:, list(run.dims)].any(1)))
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        for token, dot, weight, line in zip(
            TOKENS, run.dots, run.weights, legend, strict=True
        ):
            assert line == f'"{token}": q·k = {dot:g}, weight {weight:.3f}'


def test_the_planes_alt_text_follows_the_values(example):
    alt = page().figures["head_vectors"].alt
    assert "In head A (columns 0-1) the key of Kohli reaches furthest" in alt
    assert "In head B (columns 2-3) the key of his reaches furthest" in alt
    assert "the key of century is zero" in alt and "the key of Kohli is zero" in alt
    other = replace(example.head_a, dots=np.array([0.0, 1.0, 3.0]))
    assert "the key of century reaches furthest" in cricket_page._reach(other)


def test_cost_is_the_same_for_one_head_and_two():
    c = page().cost
    assert c["params_one"] == c["params_two"] == 4 * 4 * 4
    assert c["madds_one"] == c["madds_many"] == c["n"] ** 2 * c["d_model"]


def _text(html: str) -> str:
    html = re.sub(r"<svg.*?</svg>", " ", html, flags=re.S)
    html = re.sub(r"<script.*?</script>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_page_shows_both_heads_and_the_extended_example(built_site: Path, example):
    html = (built_site / "cricket" / "index.html").read_text()
    article = re.search(r"<article.*?</article>", html, re.S).group()
    assert "tabbed-set" not in article  # head B's table needs no click
    text = _text(article)
    # the anchor: the three-token example's numbers, first table
    first_table = re.search(r"<table>.*?</table>", article, re.S).group()
    assert [decimals(w) for w in example.full.weights] == re.findall(
        r"<strong>(?:<m-n[^>]*>)?([\d.]+)(?:</m-n>)?</strong>", first_table
    )
    assert 'Head B\'s largest weight is on "his" itself' in text
    assert "0.665 at the full head's scale" in text
    assert text.count("Figure ") >= 2 and "Figure 2." in text
    assert "Heads are tendencies, not job descriptions" in text
    assert "not a trained model" in text


# --- its figures --------------------------------------------------------------
# The cricket figures draw the page's weights, dot products, queries and keys under
# the names of their heads and tokens.


def _along(x: np.ndarray, q: np.ndarray) -> bool:
    return bool(np.isclose(x[0] * q[1] - x[1] * q[0], 0))


def _runs(example):
    return (example.full, example.head_a, example.head_b)


def test_three_distributions_shows_each_heads_weights_under_its_name():
    p, (panel,) = drawn("cricket", "three_distributions")
    runs = _runs(p.example)
    assert_series(panel.bars, {r.name: r.weights for r in runs})
    assert panel.texts == [f"{w:.3f}" for r in runs for w in r.weights]
    assert panel.xticks == [f'"{t}"' for t in p.tokens]
    assert panel.ylabel == f'weight from "{QUERY}"'


def test_extended_shows_each_querys_weights_in_its_own_panel():
    p, panels = drawn("cricket", "extended")
    assert len(panels) == len(p.extended)
    for panel, (query, example) in zip(panels, p.extended.items(), strict=True):
        assert panel.ylabel == f'weight from "{query}"'
        assert_series(panel.bars, {r.name: r.weights for r in _runs(example)})
    assert panels[-1].xticks == [f'"{t}"' for t in EXTENDED_TOKENS]


def test_head_vectors_draws_each_heads_query_and_keys_in_its_own_columns():
    p, panels = drawn("cricket", "head_vectors")
    heads = (p.example.head_a, p.example.head_b)
    assert len(panels) == len(heads)
    for panel, run in zip(panels, heads, strict=True):
        q, k = Q_HIS[list(run.dims)], K[:, list(run.dims)]
        assert panel.title == run.name
        assert (panel.xlabel, panel.ylabel) == tuple(f"column {d}" for d in run.dims)
        legend = {
            f'"{t}": q·k = {run.dots[j]:g}, weight {run.weights[j]:.3f}'
            for j, t in enumerate(p.tokens)
        }
        assert legend <= panel.lines.keys()
        keys = sorted(key.tolist() for key in k if key.any())
        tails, tips = zip(*(a.tolist() for a in panel.patches.values()), strict=True)
        assert set(map(tuple, tails)) == {(0, 0)}
        assert sorted(tips) == sorted([q.tolist(), *keys])  # q's arrow, the keys'
        query_line, *rest = [v for n, v in panel.lines.items() if n.startswith("_")]
        assert query_line[:, 0].tolist() == [0, 0] and _along(query_line[:, 1], q)
        drops = [v for v in rest if v.shape[1] == 2]  # from a key to q's line
        assert sorted(v[:, 0].tolist() for v in drops) == keys
        for tip, foot in (v.T for v in drops):  # the foot: on q's line, square to it
            assert _along(foot, q) and np.isclose((tip - foot) @ q, 0)
        assert f"q({QUERY})" in panel.texts
        zero = [t for t, key in zip(p.tokens, k, strict=True) if not key.any()]
        assert [v.tolist() for v in rest if v.shape[1] == 1] == [[[0], [0]]] * len(zero)
        assert [t for t in panel.texts if t.endswith("(zero)")] == [
            f"{t} (zero)" for t in zero
        ]
