"""The real-heads page: the head atlas, the pruning studies, and what the page states.

The atlas's statistics and classification, and the pruning results' helpers, are
tested on small hand-made inputs; the page's facts on the real results, and each
made false by a changed result.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from mha.experiments import head_grid
from mha.experiments.corpus import CAT, CRICKET, TRIPLES, retrieval_queries
from mha.experiments.head_atlas import (
    KINDS,
    STATISTICS,
    TARGETS,
    Atlas,
    head_statistics,
)
from mha.experiments.head_atlas import atlas as corpus_atlas
from mha.experiments.value_norms import value_norms, weighted_by_norm
from mha.figures.plotted import plotted
from mha.figures.real_heads import KIND_STYLE, STAT_TITLES
from mha.pages import real_heads as head_atlas
from mha.pages.real_heads import _CAT, _CRICKET, _cls_shares, page, pruning
from mha.pretrained import minilm
from tests.conftest import ROOT
from tests.docs.rendering import render
from tests.pages.drawn import draw
from tests.pages.sealed import PLANTS, assert_printed, plant

# --- the head atlas's logic on small inputs ------------------------------------------
TOKENS = ["[CLS]", "the", "cat", ",", "the", "dog", "[SEP]"]  # n = 7, 5 word queries


def one_head(matrix: np.ndarray) -> np.ndarray:
    return np.asarray(matrix, dtype=float)[None, None]  # (1 layer, 1 head, n, n)


def test_statistics_of_a_next_token_head():
    stats = head_statistics([TOKENS], [one_head(np.eye(7, k=1))[..., :, :]])
    assert stats["next"][0, 0] == 1
    assert stats["previous"][0, 0] == stats["cls"][0, 0] == 0
    assert stats["sep"][0, 0] == pytest.approx(1 / 5)  # only "dog" is followed by [SEP]
    assert stats["punctuation"][0, 0] == pytest.approx(1 / 5)  # "cat" -> ","


def test_statistics_of_a_uniform_head():
    stats = head_statistics([TOKENS], [one_head(np.full((7, 7), 1 / 7))])
    assert stats["spread"][0, 0] == pytest.approx(1)
    assert stats["entropy"][0, 0] == pytest.approx(math.log(7))
    assert stats["cls"][0, 0] == pytest.approx(1 / 7)
    # each "the" puts 1/7 on the other "the"; only the two "the"s have a repeat
    assert stats["same_word"][0, 0] == pytest.approx(1 / 7)


def test_statistics_average_over_all_queries_of_all_sentences():
    short = ["[CLS]", "hi", "[SEP]"]
    to_cls = np.zeros((3, 3))
    to_cls[:, 0] = 1
    stats = head_statistics(
        [TOKENS, short], [one_head(np.eye(7, k=1)), one_head(to_cls)]
    )
    assert stats["cls"][0, 0] == pytest.approx(1 / 6)  # 1 of 6 word queries
    assert stats["next"][0, 0] == pytest.approx(5 / 6)


def test_statistics_refuse_mismatched_shapes():
    with pytest.raises(ValueError, match=r"weights\[0\]: expected shape"):
        head_statistics([TOKENS], [one_head(np.eye(6))])
    with pytest.raises(ValueError, match="tokens, weights"):
        head_statistics([TOKENS], [])


def stats_with(**values: float) -> dict[str, np.ndarray]:
    stats = {name: np.zeros((1, 1)) for name in STATISTICS}
    for name, value in values.items():
        stats[name][0, 0] = value
    return stats


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ({"cls": head_atlas.MAJORITY}, "[CLS]"),  # the threshold itself qualifies
        ({"cls": head_atlas.MAJORITY - 0.01, "spread": 0.1}, "mixed"),
        ({"sep": 0.6, "punctuation": 0.7}, "punctuation"),  # the largest wins
        ({"same_word": 0.9, "spread": 0.99}, "same word"),  # targets before breadth
        ({"previous": 0.3, "spread": head_atlas.BROAD}, "broad"),
        ({"previous": 0.3, "spread": head_atlas.BROAD - 0.01}, "mixed"),
    ],
)
def test_classification_follows_the_stated_thresholds(values, kind):
    assert head_grid.classify(stats_with(**values), KINDS)[0, 0] == kind


def small_atlas() -> Atlas:
    stats = {name: np.zeros((2, 2)) for name in STATISTICS}
    stats["cls"][:] = [[0.9, 0.6], [0.1, 0.0]]
    stats["spread"][:] = [[0.1, 0.3], [0.8, 0.2]]
    kinds = head_grid.classify(stats, KINDS)
    return Atlas(stats, kinds, (), 1, 1)


def test_atlas_counts_and_picks_the_typical_head():
    atlas = small_atlas()
    assert atlas.kinds.tolist() == [["[CLS]", "[CLS]"], ["broad", "mixed"]]
    assert atlas.present() == ["[CLS]", "broad", "mixed"]
    assert atlas.count("[CLS]") == 2 and atlas.layers("[CLS]") == [0]
    assert atlas.typical("[CLS]") == (0, 0) and atlas.value("[CLS]") == 0.9
    assert atlas.typical("mixed") == (1, 1)
    assert atlas.strongest("spread") == (1, 0)
    with pytest.raises(ValueError, match="kind: no head is of kind"):
        atlas.typical("[SEP]")
    with pytest.raises(ValueError, match="kind: expected one of"):
        atlas.count("[MASK]")


# --- the pruning study's logic on small inputs --------------------------------------


def test_retrieval_accuracy_counts_nearest_neighbours():
    # 0 and 1 are close, 2 is alone; the query (2, 0) cannot be answered
    points = np.array([[1.0, 0.0], [0.96, 0.28], [0.0, 1.0]])
    assert pruning._retrieval_accuracy(points, [(0, 1), (1, 0)]) == 1
    assert pruning._retrieval_accuracy(points, [(0, 1), (2, 0)]) == 0.5


def test_corpus_queries_pair_each_sentence_with_its_paraphrase():
    queries = retrieval_queries()
    assert len(queries) == 2 * len(TRIPLES)
    assert all(abs(q - a) == 1 and min(q, a) % 3 == 0 for q, a in queries)


def fake_pruning() -> pruning._Pruning:
    return pruning._Pruning(
        n_sentences=3,
        n_queries=2,
        baseline_retrieval=1.0,
        single_cosine=np.array([[0.99, 0.9]]),
        single_retrieval=np.array([[1.0, 0.5]]),
        layer_cosine=np.array([0.8]),
        order=((0, 0), (0, 1)),
        counts=np.array([0, 1, 2]),
        cumulative_cosine=np.array([1.0, 0.95, 0.7]),
        cumulative_retrieval=np.array([1.0, 1.0, 0.5]),
    )


def test_pruning_result_helpers():
    result = fake_pruning()
    assert result.at(1) == (0.95, 1.0)
    assert result.largest_retrieval_move() == 1
    with pytest.raises(ValueError, match="count: expected one of"):
        result.at(3)


@pytest.mark.parametrize("layer", [4, 5])
def test_each_head_of_a_layer_removed_alone_as_quality_measures_it(layer):
    # the layer's projections computed once for its heads: the same bits as one
    # pruned pass per head (the last layer: nothing runs after it)
    texts = TRIPLES[0] + TRIPLES[2]
    evaluator = pruning._Evaluator(minilm.load(), texts, [(0, 1), (3, 4)])
    masks = np.ones((12, 6, 12), dtype=np.float32)
    masks[np.arange(12), layer, np.arange(12)] = 0
    alone = [evaluator.quality(mask) for mask in masks]
    assert evaluator.without_each_head(layer) == alone
    assert len(set(alone)) > 1  # the heads differ: not one result repeated


def test_literature_counts_are_the_papers_shares_of_the_heads():
    assert pruning._literature_counts(72) == (29, 57)
    assert pruning._literature_counts(144) == (58, 114)


# --- what docs/real-heads.md says about the results ----------------------------------


@pytest.fixture(scope="module")
def atlas() -> Atlas:
    return corpus_atlas()


@pytest.fixture(scope="module")
def pruned() -> pruning._Pruning:
    return pruning._pruning()


def test_the_pages_claims_about_the_atlas_hold(atlas):
    for kind in ("[SEP]", "punctuation", "same word"):
        assert atlas.count(kind) == 0, kind  # "No [SEP], punctuation or same-word head"
    targets = ("previous token", "next token", "[CLS]")
    assert max(targets, key=atlas.count) == "[CLS]"  # "the dominant kind"
    assert set(atlas.layers("previous token") + atlas.layers("next token")) <= {0, 1}
    assert atlas.count_in_layer("broad", 0) > atlas.count("broad") / 2
    assert atlas.value("previous token") > 0.9  # "almost a hard-wired shift"
    assert {ex.text for ex in atlas.examples} == {CRICKET, CAT}


def test_the_pages_claims_about_pruning_hold(pruned):
    last = minilm.load().n_layers - 1
    assert int(np.argmin(pruned.layer_cosine)) == last  # the last layer costs most
    assert pruned.order[-1][0] == last  # the most damaging head alone
    assert pruned.largest_retrieval_move() <= 2  # "a few borderline queries"
    assert np.all(np.diff(pruned.cumulative_cosine) < 0.01)  # no recovery on the way
    assert pruned.at(pruned.n_heads)[0] < pruned.at(0)[0]


def test_the_paraphrase_beats_the_decoy_in_the_pages_example():
    sentence, paraphrase, decoy = TRIPLES[2]
    a, b, c = minilm.load().embed([sentence, paraphrase, decoy])
    assert a @ b > a @ c


# --- the page object --------------------------------------------------------------


def test_every_fact_of_the_page_holds_and_its_values_are_the_studies(atlas, pruned):
    page = head_atlas.page()
    assert {name for name, fact in page.facts.items() if not fact.holds} == set()
    assert page.total_heads == 72 and page.counts == {
        kind: atlas.count(kind) for kind in KINDS
    }
    michel, voita, every = page.literature
    assert (michel[0], voita[0], every[0]) == (29, 57, 72) and every[1] == 1
    assert every[2:] == pruned.at(72) and page.one_query == 1 / pruned.n_queries
    assert page.baseline_correct == round(pruned.baseline_retrieval * pruned.n_queries)
    layer, head = atlas.typical("previous token")
    assert page.previous_clark == f"{layer + 1}-{head + 1}"
    assert page.every.counts == page.counts and page.every.n_heads == 72
    raised = (pruned.single_retrieval > pruned.baseline_retrieval).sum()
    lowered = (pruned.single_retrieval < pruned.baseline_retrieval).sum()
    assert page.changes == (raised, lowered)
    assert page.least == "L{}H{}".format(*pruned.order[0])


def test_the_atlas_facts_turn_false_on_another_atlas(pruned):
    """The hand-made 2 x 2 atlas has no positional head and no shift."""
    stale = head_atlas._facts(small_atlas(), pruned)
    assert not stale["shift"].holds and not stale["bottom"].holds
    assert stale["cls_dominant"].holds and stale["none_of_these"].holds


def test_the_pruning_facts_turn_false_on_other_results(atlas):
    two_layers = dataclasses.replace(fake_pruning(), layer_cosine=np.array([0.95, 0.9]))
    stale = head_atlas._facts(atlas, two_layers)
    assert stale["last_layer"].holds and stale["others_fine"].holds
    for name in ("single_small", "several_times", "words_themselves"):
        assert not stale[name].holds, name  # 0.9 < 0.95; 0.1 < 3 x 0.05; 0.5
    fast_then_slow = dataclasses.replace(
        two_layers,
        cumulative_cosine=np.array([1.0, 0.5, 0.45]),
        cumulative_retrieval=np.array([1.0, 0.0, 0.0]),
        n_queries=10,
    )
    stale = head_atlas._facts(atlas, fast_then_slow)
    assert not stale["slow_then_fast"].holds and not stale["retrieval_flat"].holds


def test_each_fact_turns_false_when_the_real_results_say_otherwise(atlas, pruned):
    """Each sentence made wrong by changing the result it is about, from the page's."""
    cls = head_atlas.page().cls_moved

    def stated(a=atlas, p=pruned) -> dict:
        return head_atlas._facts(a, p, cls)

    assert all(fact.holds for fact in stated().values())
    kinds = atlas.kinds.copy()  # the strongest [SEP] head passing the majority rule
    kinds[atlas.strongest("sep")] = "[SEP]"
    assert not stated(a=dataclasses.replace(atlas, kinds=kinds))["none_of_these"].holds
    halved = {**atlas.statistics, "cls": atlas.statistics["cls"] / 2}  # half on [CLS]
    fewer = head_grid.classify(halved, KINDS)
    assert not stated(a=dataclasses.replace(atlas, kinds=fewer))["cls_dominant"].holds
    stats = atlas.statistics  # parking on [SEP] as BERT does, not on [CLS]
    swapped = {**stats, "cls": stats["sep"], "sep": stats["cls"]}
    bert_like = dataclasses.replace(atlas, statistics=swapped)
    assert not stated(a=bert_like)["parks_on_cls"].holds
    retrieval = pruned.single_retrieval.copy()  # one removal losing three queries
    retrieval[pruned.order[0]] = pruned.baseline_retrieval - 3 / pruned.n_queries
    three = dataclasses.replace(pruned, single_retrieval=retrieval)
    assert not stated(p=three)["borderline"].holds
    first_last = pruned.layer_cosine[[-1, *range(1, len(pruned.layer_cosine) - 1), 0]]
    first_worst = dataclasses.replace(pruned, layer_cosine=first_last)
    assert not stated(p=first_worst)["last_layer"].holds
    cosine = pruned.layer_cosine.copy()  # layer 0 halfway to the last layer's damage
    cosine[0] = (cosine[0] + cosine[-1]) / 2
    hurt = dataclasses.replace(pruned, layer_cosine=cosine)
    assert not stated(p=hurt)["others_fine"].holds


def test_the_figures_draw_what_the_page_hands_them():
    page = head_atlas.page()
    figures, atlas, pruned = page.figures, page.atlas, page.pruned
    assert figures["kinds"].data[0] is atlas and figures["damage"].data[0] is pruned
    assert figures["cat"].data[1:] == (head_atlas._CAT,) != figures["cricket"].data[1:]
    cumulative, papers = figures["cumulative"].data
    assert cumulative is pruned and [share for share, _ in papers] == pytest.approx(
        [0.4, 38 / 48]
    )
    assert "layer 5's bar is several times" in figures["damage"].alt


def test_the_cls_heads_move_little_of_what_they_weigh(atlas, pruned):
    """The [CLS] heads' weight on [CLS] against [CLS]'s share of what they move, by
    hand on one sentence for one head, and the fact turned false."""
    model = minilm.load()
    layer, head = (int(i) for i in np.argwhere(atlas.kinds == "[CLS]")[0])
    text = "The cat sat on the mat."
    forward = model.forward(model.batch([text]))
    w = forward.weights[layer][0, head, 1:-1]  # word queries
    norms = value_norms(model.layers[layer].attention, forward.hidden[layer])[0, head]
    by_hand = (w[:, 0] * norms[0] / (w * norms).sum(-1)).mean()
    weight, moved = _cls_shares([text], [(layer, head)])
    assert np.isclose(weight, w[:, 0].mean()) and np.isclose(moved, by_hand)
    weight, moved = head_atlas._cls_moved(atlas)
    assert moved < weight / 3
    equal = head_atlas._facts(atlas, pruned, cls=(weight, weight))
    assert not equal["cls_moves_little"].holds
    with pytest.raises(ValueError, match="heads"):
        _cls_shares([text], [])


def test_the_cls_shares_from_the_atlas_pass_are_each_sentence_alone():
    # sentences of three lengths in one padded pass (minilm_corpus.runs): the shares
    # equal those summed over each sentence run alone, to float32 rounding
    model = minilm.load()
    texts = ("The cat sat.", "A dog ran across the wide green field.", "Hello there.")
    heads = [(1, 4), (3, 0)]
    weight = moved = count = 0
    for text in texts:
        forward = model.forward(model.batch([text]))
        n = forward.hidden.shape[2]
        for layer, head in heads:
            w = forward.weights[layer]
            norms = value_norms(model.layers[layer].attention, forward.hidden[layer])
            weight += w[0, head, 1 : n - 1, 0].sum()
            moved += weighted_by_norm(w, norms)[0, head, 1 : n - 1, 0].sum()
            count += n - 2
    shares = _cls_shares(texts, heads)
    assert np.allclose(shares, (weight / count, moved / count), rtol=0, atol=1e-7)
    assert shares[1] != shares[0] > 0


# --- its figures --------------------------------------------------------------
# The real-heads page's figures draw the atlas and the pruning study the page prints:
# each head's kind and letter, each statistic under its title, each kind's typical head
# under its name, each head's and layer's damage, both pruning curves by label.


def _name(layer: int, head: int) -> str:
    return f"L{layer}H{head}"  # as the page names a head


def test_kind_grid_colours_and_letters_each_head_by_its_kind_and_counts_them():
    a = page().atlas
    fig = draw(page(), "kinds")
    (panel,) = plotted(fig)
    (codes,) = panel.images
    kinds = list(KINDS)
    assert np.array_equal(codes, np.vectorize(kinds.index)(a.kinds))
    letters = [KIND_STYLE[kind][1] for kind in a.kinds.ravel()]
    assert panel.texts == [letter for letter in letters if letter]
    legend = fig.axes[0].get_legend()
    counts = page().counts
    assert [t.get_text() for t in legend.get_texts()] == [
        f"{KIND_STYLE[kind][1] or ' '}  {kind} ({counts[kind]})" for kind in a.present()
    ]
    image = fig.axes[0].images[0]
    for kind, patch in zip(a.present(), legend.get_patches(), strict=True):
        cell = image.cmap(image.norm(kinds.index(kind)))  # the colour of its cells
        key = patch.get_facecolor()
        assert np.allclose(cell, key) or cell[3] == key[3] == 0  # or both clear


def test_statistic_grids_draw_each_statistic_under_its_title():
    p = page()
    drawn = {panel.title: panel for panel in plotted(draw(p, "statistics"))}
    names = [*TARGETS, "spread"]
    assert list(drawn) == [STAT_TITLES[name] for name in names]
    for name in names:
        (image,) = drawn[STAT_TITLES[name]].images
        assert np.array_equal(image, p.atlas.statistics[name])
        layers, heads = (list(map(str, range(n))) for n in image.shape)
        assert drawn[STAT_TITLES[name]].yticks == layers
        assert drawn[STAT_TITLES[name]].xticks == heads
    for name, head in p.strongest.items():  # the brightest cells the page names
        (image,) = drawn[STAT_TITLES[name]].images
        assert _name(*np.unravel_index(image.argmax(), image.shape)) == head
        assert image.max() == p.strongest_value[name]


def test_typical_heads_draw_each_kinds_typical_head_on_the_sentence():
    p = page()
    for name, example in (("cricket", _CRICKET), ("cat", _CAT)):
        seed = p.atlas.examples[example]
        panels = plotted(draw(p, name))
        assert [q.title for q in panels] == [
            f"{kind}: {p.typical[kind]}" for kind in p.atlas.present()
        ]
        for panel, kind in zip(panels, p.atlas.present(), strict=True):
            (image,) = panel.images
            assert np.array_equal(image, seed.weights[p.atlas.typical(kind)])
            assert panel.xticks == list(seed.tokens) == panel.yticks


def test_pruning_damage_draws_each_heads_and_each_layers_damage():
    p = page()
    r = p.pruned
    heads, layers = plotted(draw(p, "damage"))
    (damage,) = heads.images
    assert np.array_equal(damage, r.damage)
    for head, value in ((p.least, p.least_damage), (p.most, p.most_damage)):
        layer, index = (int(n) for n in head[1:].split("H"))
        assert damage[layer, index] == value
    (bars,) = layers.bars.values()
    assert np.array_equal(bars, 1 - r.layer_cosine)
    assert bars.argmax() == p.worst_layer and bars.max() == 1 - p.worst_cosine
    assert layers.yticks == [str(i) for i in range(len(bars))]


def test_cumulative_pruning_draws_both_curves_by_label_and_the_papers_shares():
    p = page()
    r = p.pruned
    (panel,) = plotted(draw(p, "cumulative"))
    cosine = panel.lines["cosine to the unpruned embeddings"]
    retrieval = panel.lines["retrieval accuracy"]
    assert np.array_equal(cosine, [r.counts, r.cumulative_cosine])
    assert np.array_equal(retrieval, [r.counts, r.cumulative_retrieval])
    for count, _, at_cosine, at_retrieval in p.literature:  # the table's rows
        (i,) = np.flatnonzero(r.counts == count)
        assert (cosine[1, i], retrieval[1, i]) == (at_cosine, at_retrieval)
    (_, papers) = p.figures["cumulative"].data
    assert [p.michel.BERT_PRUNABLE, p.voita_share] == [share for share, _ in papers]
    marks = [line for label, line in panel.lines.items() if label.startswith("_")]
    assert [mark[0, 0] for mark in marks] == [s * r.n_heads for s, _ in papers]
    assert panel.texts == [f" {name}: {share:.0%}" for share, name in papers]


@pytest.mark.parametrize("sealed_at, uncommitted", PLANTS)
def test_the_timings_say_when_at_which_commit_and_load_they_were_sealed(
    tmp_path, monkeypatch, sealed_at, uncommitted
):
    commit = "5ea1ed00" + "2" * 32
    sealed = plant("minilm", tmp_path, monkeypatch, sealed_at, uncommitted, commit, 5.6)
    p = page.__wrapped__()  # the page of the planted record
    assert p.seal == sealed and sealed.commit == commit and sealed.load == 5.6
    assert_printed(render(ROOT / "docs" / "real-heads.md", p), sealed)
