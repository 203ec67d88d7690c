"""all-MiniLM-L6-v2 in NumPy against the transformers reference, and the probes' logic.

The reference (transformers on torch) is test-only, see ``tests/reference.py``: its
tests carry the ``reference`` marker and are skipped without it. One reference model is
loaded per session.
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from mha.experiments import pruning
from mha.experiments.corpus import CAT, CRICKET, TRIPLES, retrieval_queries
from mha.pages import real_heads as head_atlas
from mha.pretrained import minilm
from tests.reference import reference_module

TEXTS = (
    CRICKET,
    CAT,
    "A signalling fault led to the cancellation of the Leeds train.",
    "Hello!",
)


@pytest.fixture(scope="session")
def model() -> minilm.MiniLM:
    return minilm.load()


@pytest.fixture(scope="session")
def reference(request: pytest.FixtureRequest):
    """transformers' BertModel and tokenizer on the same files, loaded once."""
    torch = reference_module("torch", request.config)
    transformers = reference_module("transformers", request.config)
    directory = str(minilm.model_dir())
    bert = transformers.BertModel.from_pretrained(
        directory, local_files_only=True, attn_implementation="eager"
    ).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        directory, local_files_only=True
    )
    return SimpleNamespace(torch=torch, bert=bert, tokenizer=tokenizer)


def run_reference(reference, text: str, zeroed_heads=()):
    """Hidden states (layers + 1, n, d) and attentions (layers, h, n, n) of one text.

    ``zeroed_heads`` ((layer, head), ...) are removed by zeroing their slice of the
    input of the attention's output projection: pruning, as ``head_mask`` does it.
    """
    torch = reference.torch
    d_k = reference.bert.config.hidden_size // reference.bert.config.num_attention_heads
    hooks = []
    for layer, head in zeroed_heads:
        dense = reference.bert.encoder.layer[layer].attention.output.dense

        def zero(module, inputs, head=head):
            x = inputs[0].clone()
            x[..., head * d_k : (head + 1) * d_k] = 0
            return (x,)

        hooks.append(dense.register_forward_pre_hook(zero))
    try:
        encoded = reference.tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            out = reference.bert(
                **encoded, output_attentions=True, output_hidden_states=True
            )
    finally:
        for hook in hooks:
            hook.remove()
    tokens = reference.tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])
    hidden = np.stack([h[0].numpy() for h in out.hidden_states])
    weights = np.stack([a[0].numpy() for a in out.attentions])
    return tokens, hidden, weights


# --- against the reference ---------------------------------------------------------


@pytest.mark.reference
@pytest.mark.parametrize("text", TEXTS)
def test_hidden_states_and_attention_match_the_reference(model, reference, text):
    tokens, hidden, weights = run_reference(reference, text)
    our_tokens, our_weights = model.attentions(text)
    assert our_tokens == tokens
    assert (
        np.abs(model.hidden_states(text) - hidden).max() <= minilm.REFERENCE_TOLERANCE
    )
    assert np.abs(our_weights - weights).max() <= minilm.REFERENCE_TOLERANCE


@pytest.mark.reference
def test_head_mask_matches_zeroed_head_outputs_in_the_reference(model, reference):
    removed = [(0, 2), (3, 7), (5, 11)]
    _, hidden, _ = run_reference(reference, CRICKET, zeroed_heads=removed)
    mask = np.ones((model.n_layers, model.n_heads))
    for layer, head in removed:
        mask[layer, head] = 0
    ours = model.forward(model.batch([CRICKET]), mask).hidden[:, 0]
    assert np.abs(ours - hidden).max() <= minilm.REFERENCE_TOLERANCE
    assert np.abs(ours[-1] - model.hidden_states(CRICKET)[-1]).max() > 1e-2


@pytest.mark.reference
def test_embed_is_the_references_normalised_mean_pool(model, reference):
    expected = []
    for text in TEXTS:
        _, hidden, _ = run_reference(reference, text)
        mean = hidden[-1].mean(axis=0)
        expected.append(mean / np.linalg.norm(mean))
    assert np.abs(model.embed(list(TEXTS)) - np.array(expected)).max() <= 1e-5


# --- the model on its own ----------------------------------------------------------


def test_paraphrases_score_higher_cosine_than_unrelated_pairs(model):
    paraphrases = [
        ("A man is playing a guitar.", "Someone is strumming a guitar."),
        ("The children are swimming in the lake.", "Kids swim in the lake."),
        ("The train was late this morning.", "This morning the train ran behind time."),
    ]
    unrelated = [
        ("A man is playing a guitar.", "Interest rates rose again this quarter."),
        (
            "The children are swimming in the lake.",
            "She repaired the laptop's keyboard.",
        ),
        ("The train was late this morning.", "A cat slept on the windowsill."),
    ]

    def cosine(a: str, b: str) -> float:
        x, y = model.embed([a, b])
        return float(x @ y)

    lowest_paraphrase = min(cosine(a, b) for a, b in paraphrases)
    highest_unrelated = max(cosine(a, b) for a, b in unrelated)
    assert lowest_paraphrase > highest_unrelated + 0.2


def test_padding_in_a_batch_changes_no_embedding(model):
    texts = [CRICKET, CAT]
    together = model.embed(texts)
    alone = np.concatenate([model.embed([t]) for t in texts])
    assert np.abs(together - alone).max() < 1e-5


def test_resuming_above_unpruned_layers_equals_a_full_pass(model):
    batch = model.batch([CRICKET, CAT])
    full = model.forward(batch)
    mask = np.ones((model.n_layers, model.n_heads))
    mask[3, [1, 4]] = 0
    whole = model.forward(batch, mask)
    resumed = model.forward(batch, mask, 3, full.hidden[3])
    assert np.array_equal(whole.hidden[:4], full.hidden[:4])
    assert np.abs(resumed.hidden[-1] - whole.hidden[-1]).max() < 1e-5


def test_embeddings_are_float32_unit_vectors(model):
    vectors = model.embed(["one", "two words", CRICKET])
    assert vectors.shape == (3, model.d_model) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-6)


def test_gelu_is_the_exact_erf_form():
    x = np.linspace(-10, 10, 2001)
    exact = np.array([v / 2 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    assert np.abs(minilm.gelu(x) - exact).max() < 1e-6
    tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    assert np.abs(tanh_form - exact).max() > 1e-4  # so the test can tell them apart


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.embed("a single string"), "texts: expected a non-empty list"),
        (lambda m: m.embed([]), "texts: expected a non-empty list"),
        (lambda m: m.embed(["fine", 3]), r"texts\[1\]: expected a string"),
        (lambda m: m.attentions(["a list"]), "text: expected a string"),
        (
            lambda m: m.forward(m.batch(["hi"]), np.ones((6, 11))),
            r"head_mask: expected shape \(6, 12\)",
        ),
        (
            lambda m: m.forward(m.batch(["hi"]), None, 2),
            "layer_input: expected the input of layer 2",
        ),
        (lambda m: m.forward(m.batch(["hi"]), None, 6), "start_layer: expected 0 to 5"),
    ],
)
def test_bad_input_is_a_value_error_naming_the_argument(model, call, message):
    with pytest.raises(ValueError, match=message):
        call(model)


def test_load_builds_one_model_per_process():
    assert minilm.load() is minilm.load()


# --- the head atlas's logic on small inputs ------------------------------------------

TOKENS = ["[CLS]", "the", "cat", ",", "the", "dog", "[SEP]"]  # n = 7, 5 word queries


def one_head(matrix: np.ndarray) -> np.ndarray:
    return np.asarray(matrix, dtype=float)[None, None]  # (1 layer, 1 head, n, n)


def test_statistics_of_a_next_token_head():
    stats = head_atlas.head_statistics([TOKENS], [one_head(np.eye(7, k=1))[..., :, :]])
    assert stats["next"][0, 0] == 1
    assert stats["previous"][0, 0] == stats["cls"][0, 0] == 0
    assert stats["sep"][0, 0] == pytest.approx(1 / 5)  # only "dog" is followed by [SEP]
    assert stats["punctuation"][0, 0] == pytest.approx(1 / 5)  # "cat" -> ","


def test_statistics_of_a_uniform_head():
    stats = head_atlas.head_statistics([TOKENS], [one_head(np.full((7, 7), 1 / 7))])
    assert stats["spread"][0, 0] == pytest.approx(1)
    assert stats["entropy"][0, 0] == pytest.approx(math.log(7))
    assert stats["cls"][0, 0] == pytest.approx(1 / 7)
    # each "the" puts 1/7 on the other "the"; only the two "the"s have a repeat
    assert stats["same_word"][0, 0] == pytest.approx(1 / 7)


def test_statistics_average_over_all_queries_of_all_sentences():
    short = ["[CLS]", "hi", "[SEP]"]
    to_cls = np.zeros((3, 3))
    to_cls[:, 0] = 1
    stats = head_atlas.head_statistics(
        [TOKENS, short], [one_head(np.eye(7, k=1)), one_head(to_cls)]
    )
    assert stats["cls"][0, 0] == pytest.approx(1 / 6)  # 1 of 6 word queries
    assert stats["next"][0, 0] == pytest.approx(5 / 6)


def test_statistics_refuse_mismatched_shapes():
    with pytest.raises(ValueError, match=r"weights\[0\]: expected shape"):
        head_atlas.head_statistics([TOKENS], [one_head(np.eye(6))])
    with pytest.raises(ValueError, match="tokens, weights"):
        head_atlas.head_statistics([TOKENS], [])


def stats_with(**values: float) -> dict[str, np.ndarray]:
    stats = {name: np.zeros((1, 1)) for name in head_atlas.STATISTICS}
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
    assert head_atlas.classify(stats_with(**values))[0, 0] == kind


def small_atlas() -> head_atlas.Atlas:
    stats = {name: np.zeros((2, 2)) for name in head_atlas.STATISTICS}
    stats["cls"][:] = [[0.9, 0.6], [0.1, 0.0]]
    stats["spread"][:] = [[0.1, 0.3], [0.8, 0.2]]
    return head_atlas.Atlas(stats, head_atlas.classify(stats), (), 1, 1)


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
    assert pruning.retrieval_accuracy(points, [(0, 1), (1, 0)]) == 1
    assert pruning.retrieval_accuracy(points, [(0, 1), (2, 0)]) == 0.5


def test_corpus_queries_pair_each_sentence_with_its_paraphrase():
    queries = retrieval_queries()
    assert len(queries) == 2 * len(TRIPLES)
    assert all(abs(q - a) == 1 and min(q, a) % 3 == 0 for q, a in queries)


def fake_pruning() -> pruning.Pruning:
    return pruning.Pruning(
        n_sentences=3,
        n_queries=2,
        baseline_retrieval=1.0,
        single_cosine=np.array([[0.99, 0.9]]),
        single_retrieval=np.array([[1.0, 0.5]]),
        layer_cosine=np.array([0.8]),
        layer_retrieval=np.array([0.5]),
        order=((0, 0), (0, 1)),
        counts=np.array([0, 1, 2]),
        cumulative_cosine=np.array([1.0, 0.95, 0.7]),
        cumulative_retrieval=np.array([1.0, 1.0, 0.5]),
    )


def test_pruning_result_helpers():
    result = fake_pruning()
    assert result.at(1) == (0.95, 1.0)
    assert result.removable(0.9) == 1 and result.removable(0.5) == 2
    assert result.removable(0.99) == 0 or result.cumulative_cosine[0] >= 0.99
    assert result.single_retrieval_changes() == (0, 1)
    assert result.largest_retrieval_move() == 1
    assert result.least_damaging() == (0, 0) and result.most_damaging() == (0, 1)
    with pytest.raises(ValueError, match="count: expected one of"):
        result.at(3)
    assert (
        replace(result, cumulative_cosine=np.array([0.5, 0.4, 0.3])).removable(0.9) == 0
    )


def test_literature_counts_are_the_papers_shares_of_the_heads():
    assert pruning.literature_counts(72) == (29, 57)
    assert pruning.literature_counts(144) == (58, 114)


# --- what docs/real-heads.md says about the results ----------------------------------


@pytest.fixture(scope="module")
def atlas() -> head_atlas.Atlas:
    return head_atlas.atlas()


@pytest.fixture(scope="module")
def pruned() -> pruning.Pruning:
    return pruning.pruning()


def test_the_pages_claims_about_the_atlas_hold(atlas):
    for kind in ("[SEP]", "punctuation", "same word"):
        assert atlas.count(kind) == 0, kind  # "No [SEP], punctuation or same-word head"
    targets = ("previous token", "next token", "[CLS]")
    assert max(targets, key=atlas.count) == "[CLS]"  # "the dominant kind"
    assert set(atlas.layers("previous token") + atlas.layers("next token")) <= {0, 1}
    assert atlas.count_in_layer("broad", 0) > atlas.count("broad") / 2
    assert atlas.value("previous token") > 0.9  # "almost a hard-wired shift"
    assert {ex.text for ex in atlas.examples} == {CRICKET, CAT}


def test_the_pages_claims_about_pruning_hold(pruned, model):
    last = model.n_layers - 1
    assert int(np.argmin(pruned.layer_cosine)) == last  # the last layer costs most
    assert pruned.most_damaging()[0] == last
    assert pruned.largest_retrieval_move() <= 2  # "a few borderline queries"
    assert np.all(np.diff(pruned.cumulative_cosine) < 0.01)  # no recovery on the way
    assert pruned.at(pruned.n_heads)[0] < pruned.at(0)[0]


def test_the_paraphrase_beats_the_decoy_in_the_pages_example(model):
    sentence, paraphrase, decoy = TRIPLES[2]
    a, b, c = model.embed([sentence, paraphrase, decoy])
    assert a @ b > a @ c
