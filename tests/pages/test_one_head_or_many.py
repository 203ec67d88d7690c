"""The trained toy: the task generator, the hand-written backward pass, the sweep.

Every test runs on tiny configurations; the site's full sweep is never run here.
"""

from __future__ import annotations

import dataclasses
import itertools
import re

import numpy as np
import pytest
from matplotlib.colors import to_rgba

from mha import MultiHeadAttention
from mha.accounting import param_count
from mha.data import vaswani2017
from mha.experiments import toy_model, toy_task
from mha.experiments.toy_task import D_MODEL, N_POSITIONS, N_WORDS
from mha.figures import one_head_or_many as figures
from mha.figures import to_svg
from mha.figures.plotted import errorbars, plotted
from mha.pages import one_head_or_many as page_module
from mha.pages.one_head_or_many import head_sweep, page
from tests.conftest import ROOT
from tests.pages.drawn import draw

# --- the task ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def batch() -> toy_task.Batch:
    return toy_task.generate(500, np.random.default_rng(3))


def test_names_are_distinct_within_a_sequence(batch):
    assert all(len(set(row)) == N_POSITIONS for row in batch.names)


def test_the_two_relations_point_at_two_other_positions(batch):
    own = np.arange(N_POSITIONS)
    assert (batch.ref_positions != own).all()
    assert (batch.ref_positions != batch.prev_positions).all()
    assert batch.prev_positions.tolist() == [7, 0, 1, 2, 3, 4, 5, 6]


def test_every_allowed_reference_occurs(batch):
    offsets = (batch.ref_positions - np.arange(N_POSITIONS)) % N_POSITIONS
    assert set(offsets.ravel()) == set(range(1, N_POSITIONS - 1))


def test_a_reference_names_the_token_it_points_at(batch):
    names_there = np.take_along_axis(batch.names, batch.ref_positions, axis=1)
    assert (batch.refs == names_there).all()


def test_targets_are_the_words_at_the_two_positions(batch):
    y = batch.targets()
    for s in range(5):
        for i in range(N_POSITIONS):
            assert y[s, i, 0] == batch.words[s, (i - 1) % N_POSITIONS]
            assert y[s, i, 1] == batch.words[s, batch.ref_positions[s, i]]


def test_inputs_are_four_one_hot_blocks(batch):
    x = batch.inputs()
    edges = np.cumsum([0, N_POSITIONS, toy_task.N_NAMES, toy_task.N_NAMES, N_WORDS])
    assert x.shape == (500, N_POSITIONS, D_MODEL) and edges[-1] == D_MODEL
    blocks = [x[..., a:b] for a, b in itertools.pairwise(edges)]
    assert all((block.sum(axis=-1) == 1).all() for block in blocks)
    assert (blocks[0].argmax(-1) == np.arange(N_POSITIONS)).all()
    assert (blocks[1].argmax(-1) == batch.names).all()
    assert (blocks[2].argmax(-1) == batch.refs).all()
    assert (blocks[3].argmax(-1) == batch.words).all()
    assert batch.inputs(np.float32).dtype == np.float32


def test_the_generator_is_seeded():
    first = toy_task.generate(4, np.random.default_rng(9))
    again = toy_task.generate(4, np.random.default_rng(9))
    other = toy_task.generate(4, np.random.default_rng(10))
    assert np.array_equal(first.inputs(), again.inputs())
    assert not np.array_equal(first.inputs(), other.inputs())
    assert np.array_equal(toy_task.generate(4).words, toy_task.generate(4).words)


def test_describe_matches_the_arrays(batch):
    tokens = toy_task.describe(batch, 2)
    assert [t.word for t in tokens] == [toy_task.WORDS[w] for w in batch.words[2]]
    assert tokens[0].previous_position == N_POSITIONS - 1
    assert tokens[0].previous_word == tokens[-1].word


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: toy_task.generate(0), "n: expected a positive integer"),
        (lambda: toy_task.generate(2, rng=3), "rng: expected"),
        (lambda: toy_task.describe(toy_task.generate(2), 2), "index: expected"),
    ],
)
def test_bad_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# --- the model: forward pass and hand-written backward pass -----------------------


def gradient_mismatches(params, x, y, n_heads, grads, checks=12, seed=0):
    """Entries where ``grads`` and central finite differences disagree.

    Agreement is ``|numeric - analytic| <= 1e-8 + 1e-5 |numeric|``: the absolute
    term covers the rounding error of a difference quotient with eps = 1e-6.
    """
    rng, eps, wrong = np.random.default_rng(seed), 1e-6, []
    for name, array in params.items():
        for _ in range(checks):
            index = tuple(int(rng.integers(n)) for n in array.shape)
            model, saved = index[0], array[index]
            array[index] = saved + eps
            up = toy_model.loss_and_grads(params, x, y, n_heads)[0][model]
            array[index] = saved - eps
            down = toy_model.loss_and_grads(params, x, y, n_heads)[0][model]
            array[index] = saved
            numeric, analytic = (up - down) / (2 * eps), grads[name][index]
            if not np.isclose(analytic, numeric, rtol=1e-5, atol=1e-8):
                wrong.append((name, index, numeric, analytic))
    return wrong


@pytest.fixture(scope="module")
def small():
    data = toy_task.generate(3, np.random.default_rng(5))
    return data.inputs(np.float64), data.targets()


@pytest.mark.parametrize("n_heads", [1, 4, 32])
def test_backpropagation_matches_finite_differences(small, n_heads):
    x, y = small
    params = toy_model.init_params(n_heads, [3, 4], dtype=np.float64)
    params["w_q"] *= 3  # sharper attention than at initialisation: a harder check
    _, grads = toy_model.loss_and_grads(params, x, y, n_heads)
    assert gradient_mismatches(params, x, y, n_heads, grads) == []


def test_the_gradient_check_catches_a_wrong_gradient(small):
    x, y = small
    params = toy_model.init_params(2, [0], dtype=np.float64)
    _, grads = toy_model.loss_and_grads(params, x, y, 2)
    for name in grads:
        grads[name] = grads[name] * 1.01  # a 1% error in every entry
    assert len(gradient_mismatches(params, x, y, 2, grads, checks=4)) >= 10  # of 20


def test_a_gradient_step_lowers_the_loss(small):
    x, y = small
    params = toy_model.init_params(2, [0], dtype=np.float64)
    before, grads = toy_model.loss_and_grads(params, x, y, 2)
    stepped = {k: v - 0.5 * grads[k] for k, v in params.items()}
    assert toy_model.loss_and_grads(stepped, x, y, 2)[0] < before


def test_the_forward_pass_is_the_core_layer(small):
    x, _ = small
    params = toy_model.init_params(4, [7], dtype=np.float64)
    layer = MultiHeadAttention(D_MODEL, 4)
    for name in toy_model.ATTENTION_WEIGHTS:
        setattr(layer, name, params[name][0])
    out, weights = layer(x)
    fwd = toy_model.forward(params, x, 4)
    np.testing.assert_allclose(fwd.y[0], out, atol=1e-12)
    np.testing.assert_allclose(fwd.weights[0], weights, atol=1e-12)


def _param_count(n_heads: int) -> int:
    return sum(p[0].size for p in toy_model.init_params(n_heads, [0]).values())


def test_every_head_count_has_the_same_parameters():
    counts = {h: _param_count(h) for h in (1, 2, 4, 8, 16, 32)}
    readout = D_MODEL * 2 * N_WORDS
    assert set(counts.values()) == {param_count(D_MODEL, 1) + readout}


def test_models_on_the_stack_are_independent(small):
    x, y = small
    pair = toy_model.init_params(2, [1, 2], dtype=np.float64)
    alone = toy_model.init_params(2, [2], dtype=np.float64)
    loss_pair, grads_pair = toy_model.loss_and_grads(pair, x, y, 2)
    loss_alone, grads_alone = toy_model.loss_and_grads(alone, x, y, 2)
    assert loss_pair[1] == pytest.approx(loss_alone[0])
    np.testing.assert_allclose(grads_pair["w_k"][1], grads_alone["w_k"][0])


def test_adam_moves_each_model_by_its_own_rate():
    params = {"w": np.zeros((2, 1, 1))}
    adam = toy_model.Adam(params, [0.1, 0.2])
    for _ in range(3):
        adam.step(params, {"w": np.ones((2, 1, 1))})
    np.testing.assert_allclose(params["w"].ravel(), [-0.3, -0.6], rtol=1e-6)


def test_train_checks_its_arguments():
    with pytest.raises(ValueError, match="learning_rates: expected one per seed"):
        toy_model.train(2, [0, 1], [0.01], steps=1, batch_size=1)


# --- a tiny training run learns, and one head cannot ------------------------------


@pytest.fixture(scope="module")
def tiny_runs():
    data = toy_task.generate(200, np.random.default_rng(11))
    scores = {}
    for h in (1, 2):
        params, losses = toy_model.train(h, [0], [0.03], steps=120, batch_size=32)
        scores[h] = (losses, toy_model.evaluate(params, data, h))
    return scores


def test_two_heads_learn_the_task(tiny_runs):
    losses, scores = tiny_runs[2]
    assert losses[:10].mean() > 1.5 > 0.1 > losses[-10:].mean()
    assert scores.accuracy.min() > 0.95  # both relations


def test_one_head_does_not(tiny_runs):
    _, scores = tiny_runs[1]
    assert scores.accuracy[0].mean() < 0.75
    assert scores.accuracy.max() > 0.5  # it does learn one of the two


# --- the sweep ----------------------------------------------------------------------

TINY = head_sweep.SweepConfig(
    heads=(1, 2, 32),
    learning_rates=(0.003, 0.03),
    seeds=(1, 2),
    steps=20,
    batch_size=8,
    validation_size=16,
    test_size=16,
)


@pytest.fixture(scope="module")
def tiny_sweep() -> head_sweep._Sweep:
    return head_sweep._run(TINY)


def test_the_rate_with_the_lowest_validation_loss_is_chosen(tiny_sweep):
    for r in tiny_sweep.results:
        assert r.learning_rate == TINY.learning_rates[int(np.argmin(r.validation_loss))]
        assert r.validation_loss.shape == (len(TINY.learning_rates),)


def test_results_have_one_row_per_seed(tiny_sweep):
    for r in tiny_sweep.results:
        assert r.test_loss.shape == (2,) and r.test_accuracy.shape == (2, 2)
        assert r.train_losses.shape == (TINY.steps, 2)
        assert r.attention_mass.shape == (2, r.n_heads, 2)
        assert r.roles().sum(axis=-1).tolist() == [r.n_heads, r.n_heads]
        assert r.param_count == _param_count(r.n_heads)
        assert r.attention_params == param_count(D_MODEL, r.n_heads)


def test_attention_mass_is_a_share_of_the_weight(tiny_sweep):
    for r in tiny_sweep.results:
        assert (r.attention_mass >= 0).all()
        assert (r.attention_mass.sum(axis=-1) <= 1 + 1e-6).all()


def test_steps_to_finds_the_first_crossing(tiny_sweep):
    r = tiny_sweep.result(2)
    curve = r.curve()
    level = (curve.max() + curve.min()) / 2
    step = r.steps_to(level)
    assert curve[step - head_sweep._CURVE_WINDOW] < level
    assert (curve[: step - head_sweep._CURVE_WINDOW] >= level).all()
    assert r.steps_to(-1.0) is None


def test_an_unknown_head_count_is_refused(tiny_sweep):
    with pytest.raises(ValueError, match="n_heads: expected one of"):
        tiny_sweep.result(3)


def test_validation_and_test_sets_differ():
    assert not np.array_equal(TINY.validation_set().words, TINY.test_set().words[:16])


def test_sweep_is_computed_once_then_cached(monkeypatch, tmp_path):
    monkeypatch.setenv("MHA_CACHE_DIR", str(tmp_path))
    calls = []
    real_run = head_sweep._run

    def counting_run(config):
        calls.append(config)
        return real_run(config)

    monkeypatch.setattr(head_sweep, "_run", counting_run)
    config = head_sweep.SweepConfig(
        heads=(2,),
        learning_rates=(0.03,),
        seeds=(1,),
        steps=2,
        validation_size=4,
        test_size=4,
    )
    first = head_sweep.sweep(config)
    second = head_sweep.sweep(config)
    assert len(calls) == 1
    np.testing.assert_array_equal(
        first.results[0].test_loss, second.results[0].test_loss
    )


# --- figures and the cited figures ----------------------------------------------------


def test_toy_figures_are_byte_identical_between_draws(tiny_sweep):
    data = page_module._figures(tiny_sweep, (1, 2))["head_heatmaps"].data  # images
    first = to_svg(figures.head_heatmaps(*data), "alt")
    assert first == to_svg(figures.head_heatmaps(*data), "alt")
    assert first.count("<image") == 4  # a heatmap per head (1 + 2) and the colour bar


def test_the_results_figure_sets_the_toy_beside_the_paper(tiny_sweep):
    fig = figures.sweep_results(tiny_sweep, vaswani2017.ROW_A, D_MODEL, 512)
    toy_axis, paper_axis = fig.axes[0], fig.axes[1]
    assert [int(t) for t in toy_axis.get_xticks()] == list(TINY.heads)
    assert [int(t) for t in paper_axis.get_xticks()] == [1, 4, 8, 16, 32]


def test_vaswani_row_a_keeps_the_width_and_names_its_source():
    assert [row.n_heads for row in vaswani2017.ROW_A] == [1, 4, 8, 16, 32]
    assert all(
        row.n_heads * row.d_k == vaswani2017.D_MODEL for row in vaswani2017.ROW_A
    )
    assert [row.n_heads for row in vaswani2017.ROW_A if row.base] == [8]
    assert "1706.03762" in vaswani2017.URL and "Table 3" in vaswani2017.CITATION


# --- the page's values and facts ----------------------------------------------------


def _scored(sweep: head_sweep._Sweep, accuracy: dict, loss: dict) -> head_sweep._Sweep:
    """``sweep`` with every seed's accuracy and loss set per head count."""
    results = tuple(
        dataclasses.replace(
            r,
            test_accuracy=np.full_like(r.test_accuracy, accuracy[r.n_heads]),
            test_loss=np.full_like(r.test_loss, loss[r.n_heads]),
        )
        for r in sweep.results
    )
    return dataclasses.replace(sweep, results=results)


def test_the_table_values_are_the_results(tiny_sweep):
    for r in tiny_sweep.results:
        assert r.loss_range == (
            r.test_loss.mean(),
            r.test_loss.min(),
            r.test_loss.max(),
        )
        assert r.accuracy_range[0] == pytest.approx(r.accuracy.mean())
        assert r.per_word == pytest.approx(tuple(r.test_accuracy.mean(axis=0)))
        assert r.mean_roles == tuple(r.roles().mean(axis=0))
        assert r.first_step == (r.steps_to() if r.steps_to() is not None else "never")


def test_a_fact_turns_false_when_the_numbers_change(tiny_sweep):
    """One head failing is computed from the values: make it succeed, the fact goes."""
    fails = _scored(tiny_sweep, {1: 0.5, 2: 1.0, 32: 0.9}, {1: 0.6, 2: 0.01, 32: 0.2})
    assert page_module._facts(fails, vaswani2017.ROW_A)["one_fails"].holds
    assert page_module._facts(fails, vaswani2017.ROW_A)["narrow_worse"].holds
    solves = _scored(tiny_sweep, {1: 1.0, 2: 1.0, 32: 0.9}, {1: 0.01, 2: 0.01, 32: 0.2})
    assert not page_module._facts(solves, vaswani2017.ROW_A)["one_fails"].holds
    assert not page_module._facts(solves, vaswani2017.ROW_A)["best_is_relations"].holds


def _changed(sweep: head_sweep._Sweep, n_heads: int, **values) -> head_sweep._Sweep:
    """``sweep`` with the result of ``n_heads`` heads given other ``values``."""
    results = tuple(
        dataclasses.replace(r, **values) if r.n_heads == n_heads else r
        for r in sweep.results
    )
    return dataclasses.replace(sweep, results=results)


def test_each_fact_turns_false_when_the_site_sweep_says_otherwise():
    """Each sentence of the reading made wrong by changing the result it is about."""
    page = page_module.page()
    s = head_sweep._Sweep(page.config, tuple(page.rows))
    one, two, widest = page.one, page.two, page.widest
    sixteen, eight = page.second_widest, s.result(widest.n_heads // 4)

    def facts(sweep: head_sweep._Sweep, row=vaswani2017.ROW_A) -> dict:
        return page_module._facts(sweep, row)

    assert all(fact.holds for fact in facts(s).values())
    # one head taking one relation, as the two-head model's previous-token head does
    seeds = np.arange(len(page.config.seeds))
    previous = two.attention_mass[seeds, two.attention_mass[..., 0].argmax(axis=1)]
    took = facts(_changed(s, 1, attention_mass=previous[:, None, :]))
    assert not took["one_splits"].holds and not took["no_takeover"].holds
    same_word = np.repeat(one.test_accuracy[:1], len(seeds), axis=0)  # every seed
    assert not facts(_changed(s, 1, test_accuracy=same_word))["seeds_differ"].holds
    both = np.repeat(previous[:, None, :], 2, axis=1)  # two heads, both on "previous"
    assert not facts(_changed(s, 2, attention_mass=both))["two_enough"].holds
    failing = facts(_changed(s, sixteen.n_heads, test_accuracy=one.test_accuracy))
    for name in ("extra_heads", "forgiving_by_accuracy"):
        assert not failing[name].holds
    learnt = _changed(s, widest.n_heads, test_loss=two.test_loss)
    assert not facts(learnt)["narrow_worse"].holds
    chance = np.full_like(widest.test_accuracy, toy_task.CHANCE_ACCURACY)
    assert not facts(_changed(s, widest.n_heads, test_accuracy=chance))[
        "narrow_most_right"
    ].holds
    flat = _changed(s, sixteen.n_heads, test_loss=eight.test_loss)  # no rise 8 -> 16
    assert not facts(flat)["rises"].holds
    crossing = _changed(s, widest.n_heads, train_losses=two.train_losses)
    assert not facts(crossing)["later"].holds
    as_two = _changed(s, 1, test_accuracy=two.test_accuracy)  # our gap closed
    assert not facts(as_two)["gaps"].holds
    agreeing = dataclasses.replace(  # every seed at its h's mean: no range to overlap
        s,
        results=tuple(
            dataclasses.replace(r, test_loss=np.full_like(r.test_loss, r.loss_range[0]))
            for r in s.results
        ),
    )
    assert not facts(agreeing)["overlap"].holds


def test_the_papers_facts_turn_false_on_another_row_a():
    page = page_module.page()
    s = head_sweep._Sweep(page.config, tuple(page.rows))
    first, *rest = vaswani2017.ROW_A
    best = max(vaswani2017.ROW_A, key=lambda row: row.bleu)
    level = (dataclasses.replace(first, bleu=best.bleu), *rest)  # one head as good
    assert not page_module._facts(s, level)["paper_shape"].holds
    two = vaswani2017.HeadsRow(2, first.d_k // 2, best.perplexity, best.bleu)
    tried = (first, two, *rest)  # had the paper tried h = 2, and it did best
    assert not page_module._facts(s, tried)["paper_best"].holds


def test_the_page_quotes_the_site_sweep():
    page = page_module.page()
    assert page.one.n_heads == 1 and page.two.n_heads == 2 and page.n_seeds == 3
    assert page.overlapping == ((2, 4),) and page.later_from == 4
    assert page.paper_best == (8, 16)
    assert set(page.figures) == {
        "sweep_results",
        "learning_curves",
        "head_heatmaps",
        "head_roles",
    }


def test_the_printed_sequence_is_the_tables():
    """The page's code block prints the first tokens of the test set: the sequence of
    the token table above it (and of the heatmaps), not another one."""
    config = head_sweep.SweepConfig()
    table = page_module.page().tokens
    assert (
        table
        == toy_task.describe(config.test_set())
        == toy_task.describe(config.example())
    )
    other = toy_task.generate(1000, np.random.default_rng(7))  # what it printed before
    assert toy_task.describe(other) != table


def test_the_pages_printed_losses_show_their_rise(capsys):
    """The page's checking block prints each mean loss so that it reads as what it
    is: none of the small ones as 0.0000, and in the order its assert states."""
    page = (ROOT / "docs" / "one-head-or-many.md").read_text(encoding="utf-8")
    start = page.index("from mha.pages.one_head_or_many.head_sweep import sweep")
    exec(compile(page[start : page.index("\n```\n", start)], "block", "exec"), {})
    losses = [float(x) for x in re.findall(r"loss (\S+),", capsys.readouterr().out)]
    assert len(losses) == len(head_sweep.sweep().results) and all(losses)
    assert losses[1:-1] == sorted(losses[1:-1])  # h = 2 .. 16: the rise printed


# --- its figures --------------------------------------------------------------
# The head-count sweep's figures draw the page's results: each h's loss and accuracy
# ranges and seeds beside the paper's rows, each h's curve under its label, each head's
# map and its circles and crosses, each seed's heads in the seed's legend colour.


def test_sweep_results_draws_each_hs_range_and_seeds_and_the_papers_rows():
    p = page()
    fig = draw(p, "sweep_results")
    heads = [r.n_heads for r in p.rows]
    panels, ranges = plotted(fig), errorbars(fig)  # the same axes, in order

    def titled(part: str) -> int:
        (index,) = (i for i, panel in enumerate(panels) if part in panel.title)
        return index

    for title, spread, seeds in (
        ("test loss", [r.loss_range for r in p.rows], [r.test_loss for r in p.rows]),
        (
            "test accuracy",
            [r.accuracy_range for r in p.rows],
            [r.accuracy for r in p.rows],
        ),
    ):
        (drawn,) = ranges[titled(title)].values()  # x, mean, min, max
        assert drawn[0].tolist() == heads
        assert np.allclose(drawn[1:].T, spread)
        lines = panels[titled(title)].lines
        dots = [line for label, line in lines.items() if label.startswith("_child")]
        assert all(np.array_equal(d[0], heads) for d in dots)
        assert np.allclose([d[1] for d in dots], np.transpose(seeds))  # (seeds, h)
    rows = p.paper["rows"]
    for title, values in (
        ("dev perplexity", [r.perplexity for r in rows]),
        ("dev BLEU", [r.bleu for r in rows]),
    ):
        (line,) = panels[titled(title)].lines.values()
        assert line.tolist() == [[r.n_heads for r in rows], values]
    toy, paper = panels[titled("test accuracy")], panels[titled("dev BLEU")]
    assert toy.xlabel.endswith(f"(d_model = {p.task['D_MODEL']})")
    assert paper.xlabel.endswith(f"(d_model = {p.paper['d_model']})")


def test_learning_curves_draws_each_hs_curve_under_its_label_and_the_level():
    p = page()
    (panel,) = plotted(draw(p, "learning_curves"))
    window, level = p.curve
    for r in p.rows:
        steps, loss = panel.lines[f"h = {r.n_heads}"]
        assert np.array_equal(loss, r.curve())
        assert steps.tolist() == list(range(window, window + len(loss)))
    (level_line,) = (v for k, v in panel.lines.items() if not k.startswith("h = "))
    assert level_line[1].tolist() == [level] * 2


def test_head_heatmaps_draws_each_heads_map_with_its_previous_and_referenced_marks():
    maps, labels, previous, referenced = page().figures["head_heatmaps"].data
    *figures, scale = draw(page(), "head_heatmaps")
    assert plotted(scale) == []  # the colour bar alone
    rows = np.arange(len(labels))
    for fig, (h, weights) in zip(figures, maps.items(), strict=True):
        assert fig._suptitle.get_text() == f"h = {h}"
        drawn = [panel for panel in plotted(fig) if panel.images]
        assert [panel.title for panel in drawn] == [f"H{i}" for i in range(h)]
        for panel, head in zip(drawn, weights, strict=True):
            assert np.array_equal(panel.images[0], head)
            circles, crosses = panel.points.values()
            assert circles.tolist() == np.column_stack([previous, rows]).tolist()
            assert crosses.tolist() == np.column_stack([referenced, rows]).tolist()
        blank = [""] * len(labels)
        assert all(
            q.xticks in (labels, blank) and q.yticks in (labels, blank) for q in drawn
        )
        assert drawn[-1].xticks == labels and drawn[0].yticks == labels  # the edges


def test_head_roles_places_each_seeds_heads_in_the_seeds_legend_colour():
    p = page()
    *figures, legend = draw(p, "head_roles")
    handles = legend.axes[0].get_legend().legend_handles
    names = [text.get_text() for text in legend.axes[0].get_legend().get_texts()]
    assert names == [f"seed {seed}" for seed in p.config.seeds]
    for fig, r in zip(figures, p.rows, strict=True):
        (panel,) = plotted(fig)
        assert panel.title == f"h = {r.n_heads}"
        assert [v.tolist() for v in panel.points.values()] == r.attention_mass.tolist()
        colours = [c.get_facecolor()[0, :3] for c in fig.axes[0].collections]
        keyed = [to_rgba(handle.get_color())[:3] for handle in handles]
        assert np.allclose(colours, keyed)  # seed k's heads in seed k's colour
