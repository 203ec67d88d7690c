"""The heads explorer: the four constructed patterns, the blur of fewer heads, the payload.

Each pattern test reads the layer's attention weights and fails if the pattern is
not there (a head with the wrong strength, a feature in the wrong block, a merged
head that is not the concatenation of the narrow ones).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest

from mha.figures import to_svg
from mha.figures.heads_explorer import heatmaps
from mha.figures.plotted import plotted
from mha.pages import heads_explorer as hx
from mha.pages.heads_explorer import page
from mha.support.page import WIDGET_BYTES
from mha.worked import cat_mat
from tests.pages.drawn import draw

TOKENS = cat_mat.TOKENS
THE, SECOND_THE = 0, 4
CAT, MAT, STOP = TOKENS.index("cat"), TOKENS.index("mat"), TOKENS.index(".")
NEIGHBOUR, PART_OF_SPEECH, SAME_WORD, SINK = range(4)


@pytest.fixture(scope="module")
def four() -> np.ndarray:
    """The four heads' weights, (4, 8 queries, 8 keys)."""
    return cat_mat.attention_weights(4)


def test_the_sentence_and_its_features() -> None:
    assert " ".join(TOKENS) == "the cat sat on the warm mat ."
    x = cat_mat.features()
    assert x.shape == (8, cat_mat.D_MODEL) and cat_mat.D_MODEL == 4 * cat_mat.BLOCK
    assert (x.sum(axis=1) == [3, 3, 3, 3, 3, 3, 3, 4]).all()  # "." carries its flag
    assert TOKENS[THE] == TOKENS[SECOND_THE] == "the"


def test_sink_head_puts_almost_all_weight_on_the_full_stop(four) -> None:
    sink = four[SINK]
    assert (sink[:, STOP] > 0.98).all(), sink[:, STOP]


def test_neighbour_head_is_a_band_beside_the_diagonal(four) -> None:
    band = four[NEIGHBOUR]
    for i in range(len(TOKENS)):
        neighbours = [j for j in (i - 1, i + 1) if 0 <= j < len(TOKENS)]
        others = [j for j in range(len(TOKENS)) if j not in neighbours]
        assert band[i, neighbours].sum() > 0.95, (i, band[i])
        assert band[i, neighbours].min() > 10 * band[i, others].max(), (i, band[i])


def test_part_of_speech_head_pairs_determiners_and_nouns(four) -> None:
    pos = four[PART_OF_SPEECH]
    for a, b in ((THE, SECOND_THE), (CAT, MAT)):  # determiners, nouns
        assert pos[a, b] > 0.4 and pos[b, a] > 0.4, (a, b, pos[a], pos[b])
    assert (
        pos[CAT, MAT] > 10 * pos[CAT, THE] and pos[THE, SECOND_THE] > 10 * pos[THE, CAT]
    )
    sat = TOKENS.index("sat")  # the only verb attends to itself
    assert pos[sat, sat] > 10 * np.delete(pos[sat], sat).max()


def test_same_word_head_matches_other_occurrences_not_itself(four) -> None:
    word = four[SAME_WORD]
    assert word[THE, SECOND_THE] > 0.8 and word[SECOND_THE, THE] > 0.8
    assert word[THE, THE] < 0.05 and word[SECOND_THE, SECOND_THE] < 0.05  # not itself
    for i, token in enumerate(TOKENS):  # a word that occurs once: an even spread
        if TOKENS.count(token) == 1:
            assert np.allclose(word[i], 1 / len(TOKENS)), (token, word[i])


def test_no_two_heads_maps_look_alike(four) -> None:
    """The issue's test: every two of the four 8 x 8 maps differ by >= 0.1 on average."""
    for a, b in itertools.combinations(range(4), 2):
        difference = np.abs(four[a] - four[b]).mean()
        assert difference >= hx._ALIKE, (cat_mat.HEADS[a], cat_mat.HEADS[b], difference)


def test_the_one_head_map_is_dominated_by_the_full_stop_except_the_two_the() -> None:
    one = cat_mat.attention_weights(1)[0]
    led = one.argmax(axis=-1)
    assert [TOKENS[i] for i in np.flatnonzero(led != STOP)] == ["the", "the"]
    assert led[THE] == SECOND_THE and led[SECOND_THE] == THE
    s = cat_mat.STRENGTH  # why: part of speech + same word beat the sink
    assert s["part of speech"] + s["same word"] > s["sink"]
    assert hx._dominance().rows_led == 6 and hx._dominance().dominated


def test_the_slider_shows_when_the_full_stop_takes_over() -> None:
    levels = [hx._dominance(s) for s in cat_mat.SINK_STRENGTHS]
    assert cat_mat.STRENGTH["sink"] in cat_mat.SINK_STRENGTHS
    led = [d.rows_led for d in levels]
    assert led == sorted(led) and led[0] == 0 and led[-1] == len(TOKENS)
    assert [d.dominated for d in levels] == [False, False, False, True, True]
    assert hx.page().first_dominated == 24.0


def test_fewer_heads_are_the_four_heads_concatenated() -> None:
    """One softmax over the concatenated projections, computed independently here."""
    x = cat_mat.features()
    p = cat_mat.projections()
    q, k = x @ p.w_q, x @ p.w_k  # (8, 64)
    for n_heads in (1, 2):
        width = cat_mat.D_MODEL // n_heads
        for h in range(n_heads):
            cols = slice(h * width, (h + 1) * width)
            scores = q[:, cols] @ k[:, cols].T / np.sqrt(width)
            expected = np.exp(scores - scores.max(-1, keepdims=True))
            expected /= expected.sum(-1, keepdims=True)
            got = cat_mat.attention_weights(n_heads)[h]
            assert np.allclose(got, expected, atol=1e-12), (n_heads, h)
    assert cat_mat.head_names(2) == ("neighbour + part of speech", "same word + sink")


def test_layers_share_their_weights_across_head_counts() -> None:
    layers = [cat_mat.layer(h) for h in cat_mat.HEAD_COUNTS]
    for layer in layers[1:]:
        for name in ("w_q", "w_k", "w_v", "w_o"):
            assert np.array_equal(getattr(layer, name), getattr(layers[0], name))
    assert [layer.d_k for layer in layers] == [64, 32, 16]


@pytest.mark.parametrize("bad", [3, 0, 8, 2.0, True, "4"])
def test_a_head_count_that_does_not_exist_is_refused(bad) -> None:
    with pytest.raises(ValueError, match="n_heads"):
        cat_mat.layer(bad)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "8", True])
def test_a_bad_sink_strength_is_refused(bad) -> None:
    with pytest.raises((ValueError, TypeError), match="sink"):
        cat_mat.strengths(bad)


def test_a_strength_mapping_without_every_head_is_refused() -> None:
    with pytest.raises(ValueError, match="strength"):
        cat_mat.projections({"sink": 1.0})


def test_patterns_match_the_weights(four) -> None:
    p = cat_mat.solve()
    assert p.sink_min == four[SINK, :, STOP].min()
    assert p.the_to_the[SAME_WORD] == four[SAME_WORD, THE, SECOND_THE]
    assert p.cat_to_mat[PART_OF_SPEECH] == four[PART_OF_SPEECH, CAT, MAT]
    assert p.entropy_bits[1] > max(p.entropy_bits[2], p.entropy_bits[4])


# Facts: the page's comparing sentences ----------------------------------------------


def test_every_fact_of_the_page_holds() -> None:
    stale = {name: f.values for name, f in hx.page().facts.items() if not f.holds}
    assert not stale


def test_facts_turn_false_when_the_sink_weakens(monkeypatch) -> None:
    """With the sink at 8, "." no longer leads most rows: the sentence must go."""
    monkeypatch.setitem(cat_mat.STRENGTH, "sink", 8.0)
    s, four = cat_mat.strengths(), cat_mat.attention_weights(4)
    levels = tuple(hx._dominance(v) for v in cat_mat.SINK_STRENGTHS)
    stale = hx._facts(s, four, cat_mat.attention_weights(1)[0], levels, cat_mat.solve())
    assert (
        not stale["one_head_dominated"].holds
        and "1 of 8" in stale["one_head_dominated"].values
    )
    assert not stale["sink_strongest"].holds and not stale["the_exception"].holds
    assert stale["heads_differ"].holds and stale["slider_turns"].holds


def test_facts_turn_false_on_other_maps() -> None:
    s, levels, p = cat_mat.STRENGTH, hx.page().dominance, cat_mat.solve()
    alike = np.full((4, 8, 8), 1 / 8)  # four identical, even maps
    stale = hx._facts(s, alike, alike[0], levels, p)
    assert not stale["heads_differ"].holds and not stale["one_head_dominated"].holds
    assert stale["same_word_spreads"].holds
    blurred = dataclasses.replace(p, entropy_bits={1: 1.0, 2: 2.0, 4: 0.5})
    assert not hx._facts(s, alike, alike[0], levels, blurred)["blur_order"].holds


def test_the_patterns_and_the_slider_facts_turn_false_on_other_values(four) -> None:
    """Each sentence made wrong by changing what it is about, from the page's values."""
    p = hx.page()
    s, levels, one = p.strength, p.dominance, cat_mat.attention_weights(1)[0]
    patterns = p.patterns

    def facts(four=four, levels=levels, patterns=patterns) -> dict:
        return hx._facts(s, four, one, levels, patterns)

    assert all(fact.holds for fact in facts().values())
    matched = four.copy()  # "cat" matching "mat" in the same-word head, as in POS
    matched[SAME_WORD, CAT] = four[PART_OF_SPEECH, CAT]
    assert not facts(four=matched)["same_word_spreads"].holds
    # the slider: "." no longer leading most rows at the strongest sink
    weak = dataclasses.replace(levels[-1], rows_led=levels[-1].rows // 2)
    assert not facts(levels=(*levels[:-1], weak))["slider_turns"].holds
    # the wide head of two giving the first "the" as much as the same-word head of four
    even = list(patterns.two_heads_the_to_the)
    even[1] = patterns.the_to_the[SAME_WORD]
    clear = dataclasses.replace(patterns, two_heads_the_to_the=tuple(even))
    assert not facts(patterns=clear)["two_heads_drowned"].holds


def test_the_figure_is_the_explorers_default_variant() -> None:
    (static,) = hx.page().figures["heatmaps"].data
    data = hx._example("cat_mat")
    assert static == {
        "queries": data["queries"],
        "keys": data["keys"],
        "configs": data["variants"][data["default"]]["configs"],
    }
    assert "6 of 8 rows" in hx.page().figures["heatmaps"].alt


# The payload the widget renders ------------------------------------------------------


@pytest.fixture(scope="module")
def data() -> dict:
    return hx._example("cat_mat")


def _all_floats(node: object):
    if isinstance(node, float):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _all_floats(value)
    elif isinstance(node, list):
        for value in node:
            yield from _all_floats(value)


def test_payload_floats_have_at_most_four_decimals(data) -> None:
    floats = list(_all_floats(data))
    assert len(floats) > 1000
    assert all(round(f, hx._DECIMALS) == f for f in floats)


@pytest.mark.parametrize("name", hx._EXAMPLES)
def test_each_widgets_data_fits_its_budget(name) -> None:
    size = len(hx._widget(name).encode())
    assert size <= WIDGET_BYTES, f"{name}: {size} bytes"


def test_payload_configs_labels_and_slider(data) -> None:
    assert data["sinks"] == list(cat_mat.SINK_STRENGTHS)
    assert data["variants"][data["default"]]["sink"] == cat_mat.STRENGTH["sink"]
    assert data["relations"] == ["neighbour", "part of speech", "same word", "sink"]
    for variant in data["variants"]:
        configs = variant["configs"]
        assert [c["label"] for c in configs] == ["1 head", "2 heads", "4 heads"]
        assert [len(c["heads"]) for c in configs] == [1, 2, 4]
        assert [h["relations"] for h in configs[1]["heads"]] == [[0, 1], [2, 3]]
    assert [q["token"] for q in data["queries"]] == list(TOKENS)
    assert [q["position"] for q in data["queries"]] == list(range(8))  # from 0


@pytest.mark.parametrize("index", range(len(cat_mat.SINK_STRENGTHS)))
def test_payload_numbers_are_the_cores(data, index) -> None:
    """Weights equal the layer's; contributions add up to q·k; steps add up."""
    variant = data["variants"][index]
    strength = cat_mat.strengths(variant["sink"])
    x = cat_mat.features()
    parts = np.array(variant["contributions"])  # (4 relations, 8, 8)
    for config in variant["configs"]:
        n_heads = config["n_heads"]
        layer = cat_mat.layer(n_heads, strength)
        _, weights = layer(x)
        assert config["d_k"] == layer.d_k
        assert config["scale"] == pytest.approx(np.sqrt(layer.d_k), abs=1e-4)
        for h, head in enumerate(config["heads"]):
            mine = parts[head["relations"]].sum(axis=0)
            for i, row in enumerate(head["rows"]):
                assert np.allclose(row["weights"], weights[h, i], atol=5e-5)
                assert np.allclose(row["dots"], mine[i], atol=5e-5)
                exps = np.array(row["exps"])
                assert np.allclose(exps, np.exp(row["scores"]), rtol=1e-3)
                assert row["sum"] == pytest.approx(exps.sum(), rel=1e-4)
                assert np.allclose(exps / row["sum"], row["weights"], atol=1e-4)
    # cat -> ".": neighbour 0 + part of speech 0 + same word 0 + sink
    assert parts[:, CAT, STOP].tolist() == [0, 0, 0, variant["sink"]]


def test_the_widget_embeds_its_data_as_json_safe_in_html() -> None:
    html = hx._widget("cat_mat")
    body = re.search(
        r'<script type="application/json" class="mhx-data">(.*?)</script>', html
    )
    assert body and json.loads(body.group(1)) == hx._example("cat_mat")
    with pytest.raises(ValueError, match="name"):
        hx._example("nope")


def test_the_build_embeds_the_data_in_the_pages(built_site: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    assert not list((root / "docs").rglob("*explorer*.json"))
    assert not (built_site / "assets" / "data" / "heads-explorer.json").exists()
    html = (built_site / "heads-explorer" / "index.html").read_text()
    assert hx._widget("cat_mat") in html
    assert len(html.encode()) <= 1024 * 1024, len(html.encode())
    assert "mha-explorer" not in (built_site / "cricket" / "index.html").read_text()
    page = (built_site / "heads-explorer" / "index.html").read_text()
    assert "constructed, not trained" in page


def test_static_heatmaps_figure_is_deterministic() -> None:
    (example,) = hx.page().figures["heatmaps"].data
    fig = heatmaps(example)
    assert sum(len(ax.images) for ax in fig.axes) == 7
    assert to_svg(fig, "heatmaps") == to_svg(heatmaps(example), "heatmaps")


def test_a_stale_word_in_the_worked_example_is_named_as_such(monkeypatch):
    from mha.worked import cat_mat

    dog = tuple("dog" if token == "cat" else token for token in cat_mat.TOKENS)
    monkeypatch.setattr(cat_mat, "TOKENS", dog)
    with pytest.raises(ValueError, match=r"^mha.worked.cat_mat.VOCAB: expected 'dog'"):
        cat_mat.features()  # the sentence's word is not in the vocabulary
    with pytest.raises(
        ValueError, match=r"^mha.worked.cat_mat.TOKENS: .* stale worked"
    ):
        cat_mat.index_of("cat")  # what the explorer reads is gone from the sentence


# --- its figures --------------------------------------------------------------
# The heads explorer's static figure draws each head's weights under its own title,
# most heads first, with the sentence's tokens on each head count's first map.


def test_heatmaps_draws_each_heads_weights_under_its_title_and_the_tokens():
    p = page()
    (static,) = p.figures["heatmaps"].data
    fig = draw(p, "heatmaps")
    panels = [panel for panel in plotted(fig) if panel.images]
    maps = list(zip([ax for ax in fig.axes if ax.images], panels, strict=True))
    heads = [
        (config, i, head)
        for config in sorted(static["configs"], key=lambda c: -c["n_heads"])
        for i, head in enumerate(config["heads"])
    ]
    assert len(maps) == len(heads)
    for (ax, panel), (config, i, head) in zip(maps, heads, strict=True):
        (image,) = panel.images
        assert np.array_equal(image, [row["weights"] for row in head["rows"]])
        title = ax.get_title(loc="left")  # plotted reads the centred title only
        assert title.replace("\n", " ") == f"{config['label']}, H{i}: {head['name']}"
        labels = list(p.tokens) if i == 0 else [""] * len(p.tokens)
        assert panel.xticks == labels and panel.yticks == labels


def test_heatmaps_show_the_weights_the_page_quotes_under_each_heads_title():
    p = page()
    fig = draw(p, "heatmaps")
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.images]
    panels = [panel for panel in plotted(fig) if panel.images]
    maps = {  # "4 heads, H0": its weights
        title.split(":")[0]: panel.images[0]
        for title, panel in zip(titles, panels, strict=True)
    }
    first, second = (i for i, token in enumerate(p.tokens) if token == "the")
    cat, mat = p.tokens.index("cat"), p.tokens.index("mat")
    quoted = {  # (query, key): the page's weight per head, by head count
        "4 heads": {
            (first, second): p.patterns.the_to_the,
            (cat, mat): p.patterns.cat_to_mat,
        },
        "2 heads": {(first, second): p.patterns.two_heads_the_to_the},
    }
    for label, cells in quoted.items():
        for (query, key), weights in cells.items():
            for i, weight in enumerate(weights):
                drawn = maps[f"{label}, H{i}"][query, key]
                assert abs(drawn - weight) <= 5e-5  # the explorer's data keep 4 places
