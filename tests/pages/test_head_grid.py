"""The every-head widgets' data (``mha.experiments.head_grid``), as the two pages embed
it: ``mha.pages.real_heads.page().every`` (all-MiniLM-L6-v2) and
``mha.pages.real_gqa_model.page().every`` (SmolLM2-135M-Instruct).

The embedded weights are decoded here from the base64 bytes, independently of the
module, and compared with the core's models run afresh.
"""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest

from mha.experiments import head_atlas
from mha.experiments import head_grid as hg
from mha.experiments.corpus import CAT
from mha.pages import real_gqa_model, real_heads
from mha.pretrained import minilm, smollm2
from mha.support.page import WIDGET_BYTES

MODELS = ("minilm", "smollm2")


@pytest.fixture(scope="module")
def widgets() -> dict[str, hg.Widget]:
    return {"minilm": real_heads.page().every, "smollm2": real_gqa_model.page().every}


@pytest.fixture(scope="module")
def cores(widgets) -> dict[str, list[hg.Sentence]]:
    """Each model's tokens and weights on the widgets' sentences, from the core."""
    texts = [s["text"] for s in widgets["minilm"].data["sentences"]]
    return {model: core_sentences(model, texts) for model in MODELS}


def core_sentences(model: str, texts: list[str]) -> list[hg.Sentence]:
    """Each text's tokens and weights from the core's model, one text at a time."""
    out = []
    for text in texts:
        if model == "minilm":
            tokens, weights = minilm.load().attentions(text)
        else:
            decoder = smollm2.load()
            ids = decoder.encode(text)
            tokens, weights = (
                [decoder.decode([i]) for i in ids],
                decoder.attentions(ids),
            )
        out.append(hg.Sentence(text, tuple(tokens), np.asarray(weights, np.float64)))
    return out


def decoded(data: dict, sentence: dict) -> np.ndarray:
    """``(layers, heads, n, n)`` levels from the base64 bytes; -1 where a causal row
    stores nothing (later keys)."""
    raw = np.frombuffer(base64.b64decode(sentence["weights"]), np.uint8)
    n, layers, heads = len(sentence["tokens"]), data["layers"], data["heads"]
    out = np.full((layers, heads, n, n), -1, dtype=np.int64)
    at = 0
    for layer in range(layers):
        for head in range(heads):
            for q in range(n):
                width = q + 1 if data["causal"] else n
                out[layer, head, q, :width] = raw[at : at + width]
                at += width
    assert at == raw.size  # nothing left over
    return out


def test_the_sentences_are_the_corpus_first_short_ones_in_both(widgets, cores):
    texts = [s["text"] for s in widgets["minilm"].data["sentences"]]
    assert texts == [s["text"] for s in widgets["smollm2"].data["sentences"]]
    assert tuple(texts) == hg.texts() and len(texts) == hg.COUNT and texts[0] == CAT
    for model in MODELS:
        for s, core in zip(widgets[model].data["sentences"], cores[model], strict=True):
            assert tuple(s["tokens"]) == core.tokens
            assert len(core.tokens) <= hg.MAX_TOKENS


@pytest.mark.parametrize("model", MODELS)
def test_weights_are_the_cores_to_eight_bits(widgets, cores, model) -> None:
    data = widgets[model].data
    for s, core in zip(data["sentences"], cores[model], strict=True):
        levels = decoded(data, s)
        assert levels.shape == core.weights.shape
        stored = levels >= 0
        n = len(core.tokens)
        expected = np.broadcast_to(
            np.tril(np.ones((n, n), bool)) if data["causal"] else True, levels.shape
        )
        assert (stored == expected).all()
        error = np.abs(levels[stored] / data["levels"] - core.weights[stored])
        assert error.max() <= 1 / 255 and error.max() <= 1 / 510 + 1e-6
        assert data["levels"] == 255


@pytest.mark.parametrize("model", MODELS)
def test_each_widget_data_is_within_budget(widgets, model) -> None:
    widget = widgets[model]
    assert widget.nbytes == len(hg.payload_json(widget.data).encode())
    assert widget.nbytes <= WIDGET_BYTES
    embedded = re.search(r'class="mhg-data">(.*?)</script>', widget.html, re.S)
    assert json.loads(embedded.group(1)) == widget.data


def test_minilm_kinds_are_the_atlas(widgets) -> None:
    data = widgets["minilm"].data
    names = np.array(data["kindNames"], dtype=object)[np.array(data["kinds"])]
    atlas = head_atlas.atlas()
    assert (names == atlas.kinds).all() and names.shape == (6, 12)
    assert data["kindNames"] == list(head_atlas.KINDS)
    assert widgets["minilm"].counts == {k: atlas.count(k) for k in head_atlas.KINDS}


def test_smollm2_kinds_follow_the_atlas_rule(widgets, cores) -> None:
    assert (hg.MAJORITY, hg.BROAD) == (real_heads.MAJORITY, real_heads.BROAD)
    data = widgets["smollm2"].data
    stats = hg.causal_statistics(cores["smollm2"])
    names = np.array(data["kindNames"], dtype=object)[np.array(data["kinds"])]
    assert names.shape == (30, 9)
    for layer, head in np.ndindex(names.shape):
        previous, first = stats["previous"][layer, head], stats["first"][layer, head]
        if max(previous, first) >= hg.MAJORITY:
            kind = "previous token" if previous >= first else "first token"
        else:
            kind = "broad" if stats["spread"][layer, head] >= hg.BROAD else "mixed"
        assert names[layer, head] == kind, (layer, head)


def test_causal_statistics_on_a_hand_made_head() -> None:
    # the query at position 2 splits its weight evenly over the three keys it sees
    w = np.array([[1, 0, 0], [1, 0, 0], [1 / 3, 1 / 3, 1 / 3]])[None, None]
    stats = hg.causal_statistics([hg.Sentence("a b c", ("a", "b", "c"), w)])
    assert stats["previous"][0, 0] == pytest.approx((1 + 1 / 3) / 2)
    assert stats["first"][0, 0] == pytest.approx((1 + 1 / 3) / 2)
    assert stats["spread"][0, 0] == pytest.approx(0.5)  # 0 for the one-hot, 1 uniform


def test_bad_input_is_named() -> None:
    broad = np.array([["broad"]], dtype=object)
    for bad in (1.5, np.nan):
        sentence = hg.Sentence("a", ("a",), np.full((1, 1, 1, 1), bad))
        with pytest.raises(ValueError, match="weights: expected finite values"):
            hg.payload("toy", [sentence], broad, ["broad"], False)
    with pytest.raises(ValueError, match="sentences"):
        hg.causal_statistics([])
    with pytest.raises(ValueError, match="kinds"):
        hg.payload("toy", [], np.array([["odd"]], dtype=object), ["broad"], False)
