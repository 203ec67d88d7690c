"""The heads explorer: the four constructed patterns, the blur of fewer heads, the payload.

Each pattern test reads the layer's attention weights and fails if the pattern is
not there (a head with the wrong strength, a feature in the wrong block, a merged
head that is not the concatenation of the narrow ones).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mha import scaled_dot_product_attention, split_heads
from mha.figures import to_svg
from mha.figures.heads_explorer import heatmaps
from mha.pages.heads_explorer import DECIMALS, SITE_PATH, payload, write
from mha.worked import cat_mat, cricket

TOKENS = cat_mat.TOKENS
THE, SECOND_THE = 0, 4
CAT, MAT, STOP = TOKENS.index("cat"), TOKENS.index("mat"), TOKENS.index(".")
NEIGHBOUR, PART_OF_SPEECH, SAME_WORD, SINK = range(4)
# The one-head map must be blurrier than the four heads by at least this much.
BLUR_MARGIN_BITS = 0.75


@pytest.fixture(scope="module")
def four() -> np.ndarray:
    """The four heads' weights, (4, 8 queries, 8 keys)."""
    return cat_mat.attention_weights(4)


def test_the_sentence_and_its_features() -> None:
    assert " ".join(TOKENS) == "the cat sat on the warm mat ."
    x = cat_mat.features()
    assert x.shape == (8, cat_mat.D_MODEL) and cat_mat.D_MODEL == 32
    assert (x.sum(axis=1) == [3, 3, 3, 3, 3, 3, 3, 4]).all()  # "." carries its flag
    assert TOKENS[THE] == TOKENS[SECOND_THE] == "the"


def test_sink_head_puts_almost_all_weight_on_the_full_stop(four) -> None:
    sink = four[SINK]
    assert (sink[:, STOP] > 0.99).all(), sink[:, STOP]


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
    assert pos[CAT, THE] < 0.01 and pos[THE, CAT] < 0.01  # a noun is not a determiner
    sat = TOKENS.index("sat")  # the only verb attends to itself
    assert pos[sat, sat] > 0.9


def test_same_word_head_links_the_two_the_but_not_cat_and_mat(four) -> None:
    word = four[SAME_WORD]
    assert word[THE, SECOND_THE] > 0.4 and word[SECOND_THE, THE] > 0.4
    assert word[CAT, MAT] < 0.02 and word[MAT, CAT] < 0.02
    assert word[CAT, CAT] > 0.9


def test_the_four_heads_differ_from_one_another(four) -> None:
    for a in range(4):
        for b in range(a + 1, 4):
            assert np.abs(four[a] - four[b]).max() > 0.4, (a, b)


def test_one_head_is_blurrier_than_four_by_a_margin(four) -> None:
    one = cat_mat.attention_weights(1)[0]
    p = np.clip(one, 1e-300, 1)
    one_bits = -(one * np.log2(p)).sum(axis=-1).mean()
    q = np.clip(four, 1e-300, 1)
    four_bits = -(four * np.log2(q)).sum(axis=-1).mean()
    assert one_bits > four_bits + BLUR_MARGIN_BITS, (one_bits, four_bits)
    assert np.isclose(cat_mat.row_entropy(one).mean(), one_bits)
    # "dominated by the strongest signal": the sink's column is the brightest
    assert one.mean(axis=0).argmax() == STOP


def test_fewer_heads_are_the_four_heads_concatenated() -> None:
    """One softmax over the concatenated projections, computed independently here."""
    x = cat_mat.features()
    p = cat_mat.projections()
    q, k = x @ p.w_q, x @ p.w_k  # (8, 32)
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
    assert [layer.d_k for layer in layers] == [32, 16, 8]


@pytest.mark.parametrize("bad", [3, 0, 8, 2.0, True, "4"])
def test_a_head_count_that_does_not_exist_is_refused(bad) -> None:
    with pytest.raises(ValueError, match="n_heads"):
        cat_mat.layer(bad)


def test_patterns_match_the_weights(four) -> None:
    p = cat_mat.solve()
    assert p.sink_min == four[SINK, :, STOP].min()
    assert p.the_to_the[SAME_WORD] == four[SAME_WORD, THE, SECOND_THE]
    assert p.cat_to_mat[PART_OF_SPEECH] == four[PART_OF_SPEECH, CAT, MAT]
    assert p.entropy_bits[1] > p.entropy_bits[2] > p.entropy_bits[4]


# The payload the widget renders ------------------------------------------------------


@pytest.fixture(scope="module")
def data() -> dict:
    return payload()


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
    assert all(round(f, DECIMALS) == f for f in floats)


def test_payload_configs_and_labels(data) -> None:
    cat = data["examples"]["cat_mat"]
    assert [c["label"] for c in cat["configs"]] == ["1 head", "2 heads", "4 heads"]
    assert [len(c["heads"]) for c in cat["configs"]] == [1, 2, 4]
    assert [q["token"] for q in cat["queries"]] == list(TOKENS)
    assert [q["position"] for q in cat["queries"]] == list(range(1, 9))
    crick = data["examples"]["cricket"]
    assert [c["label"] for c in crick["configs"]] == ["1 head", "2 heads"]
    assert [k["token"] for k in crick["keys"]] == list(cricket.TOKENS)


@pytest.mark.parametrize("n_heads", cat_mat.HEAD_COUNTS)
def test_payload_numbers_are_the_cores(data, n_heads) -> None:
    """Weights equal the layer's; outputs equal per-head attention; steps add up."""
    config = next(
        c for c in data["examples"]["cat_mat"]["configs"] if c["n_heads"] == n_heads
    )
    layer = cat_mat.layer(n_heads)
    x = cat_mat.features()
    _, weights = layer(x)
    v = split_heads(x @ layer.w_v, n_heads)
    q, k = split_heads(x @ layer.w_q, n_heads), split_heads(x @ layer.w_k, n_heads)
    outputs, _ = scaled_dot_product_attention(q, k, v)
    assert config["d_k"] == layer.d_k
    assert config["scale"] == pytest.approx(np.sqrt(layer.d_k), abs=1e-4)
    for h, head in enumerate(config["heads"]):
        for i, row in enumerate(head["rows"]):
            assert np.allclose(row["weights"], weights[h, i], atol=5e-5)
            assert np.allclose(row["output"], outputs[h, i], atol=5e-5)
            assert np.allclose(row["dots"], q[h, i] @ k[h].T, atol=5e-5)
            exps = np.array(row["exps"])
            assert np.allclose(exps, np.exp(np.array(row["scores"])), rtol=1e-3)
            assert row["sum"] == pytest.approx(exps.sum(), abs=1e-3)
            assert np.allclose(exps / row["sum"], row["weights"], atol=1e-4)


def test_cricket_payload_matches_the_cricket_page(data) -> None:
    solved = cricket.solve()
    one, two = data["examples"]["cricket"]["configs"]
    runs = [(one, 0, solved.full), (two, 0, solved.head_a), (two, 1, solved.head_b)]
    for config, h, run in runs:
        row = config["heads"][h]["rows"][0]
        assert np.allclose(row["weights"], run.weights, atol=5e-5)
        assert np.allclose(row["scores"], run.scores, atol=5e-5)
        assert np.allclose(row["output"], run.output, atol=5e-5)
    assert two["heads"][0]["rows"][0]["weights"][0] == pytest.approx(0.768, abs=5e-4)
    assert [h["name"] for h in two["heads"]] == [
        "coreference dimensions (head A)",
        "topic dimensions (head B)",
    ]


def test_payload_follows_the_constructed_weights(monkeypatch) -> None:
    """Switch the sink off in the head's construction: the payload's sink goes too."""
    monkeypatch.setitem(cat_mat.STRENGTH, "sink", 0.0)
    four_heads = payload()["examples"]["cat_mat"]["configs"][-1]
    sink_rows = four_heads["heads"][SINK]["rows"]
    assert all(row["weights"] == [0.125] * 8 for row in sink_rows)


def test_write_is_deterministic_json(tmp_path: Path, data) -> None:
    a = write(tmp_path / "a" / "explorer.json")
    b = write(tmp_path / "b.json")
    assert a.read_bytes() == b.read_bytes()
    assert json.loads(a.read_text()) == data


def test_the_build_writes_the_payload_into_the_site_not_docs(built_site: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    assert json.loads((built_site / SITE_PATH).read_text()) == payload()
    assert not list((root / "docs").rglob("*explorer*.json"))
    page = (built_site / "heads-explorer" / "index.html").read_text()
    assert 'data-example="cat_mat"' in page and "constructed, not trained" in page
    cricket_page = (built_site / "cricket" / "index.html").read_text()
    assert 'data-example="cricket"' in cricket_page


def test_static_heatmaps_figure_is_deterministic(data) -> None:
    example = data["examples"]["cat_mat"]
    fig = heatmaps(example)
    assert sum(len(ax.images) for ax in fig.axes) == 7
    assert to_svg(fig, "heatmaps") == to_svg(heatmaps(example), "heatmaps")
