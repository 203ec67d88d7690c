"""all-MiniLM-L6-v2 in NumPy against the transformers reference.

The real-heads page's atlas and pruning studies are tested in
``tests/pages/test_real_heads.py``.

The reference (transformers on torch) is test-only, see ``tests/reference.py``: its
tests carry the ``reference`` marker and are skipped without it. One reference model is
loaded per session.
"""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from mha.experiments import head_atlas, head_grid
from mha.experiments.corpus import CAT, CRICKET, sentences
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


@pytest.mark.reference
def test_the_real_heads_atlas_reads_the_references_attention(reference):
    """The real-heads page's statistics of every head, recomputed from transformers'
    attention maps (``output_attentions``) on the page's corpus, equal the atlas's to
    1e-4, and so each of the 72 heads gets the kind the page gives it."""
    atlas = head_atlas.atlas()
    found = [run_reference(reference, text) for text in sentences()]
    stats = head_atlas.head_statistics(
        [tokens for tokens, _, _ in found],
        [weights.astype(float) for _, _, weights in found],
    )
    assert set(stats) == set(atlas.statistics)
    for name, values in stats.items():
        np.testing.assert_allclose(
            values, atlas.statistics[name], atol=1e-4, err_msg=name
        )
    kinds = head_grid.classify(stats, head_atlas.KINDS)
    assert kinds.shape == (6, 12) and (kinds == atlas.kinds).all()


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


def test_gelu_in_blocks_gives_the_same_bits_whatever_the_blocks():
    """gelu runs its formula block by block: the same operations on each value, so
    an activation split elsewhere (or a view of one) gets the very same bits."""
    x = np.random.default_rng(0).normal(size=(3, 30_001)).astype(np.float32) * 4
    whole = minilm.gelu(x)
    assert whole.dtype == np.float32 and whole.shape == x.shape
    pieces = [minilm.gelu(x[:, i : i + 7_001]) for i in range(0, x.shape[1], 7_001)]
    assert np.array_equal(np.concatenate(pieces, axis=1), whole)
    assert np.array_equal(minilm.gelu(x.T), whole.T)  # not contiguous
    assert minilm.gelu(np.float64(0.5)).shape == ()


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
        (
            lambda m: m.forward(m.batch(["hi"]), None, 1.5),
            r"start_layer: expected an integer >= 0, got 1.5 \(float\)",
        ),
        (
            lambda m: m.embed(["the cat sat"], head_mask=np.full((6, 12), 1e30)),
            r"^head_mask: expected values whose heads' outputs, squared by the next",
        ),
        (
            lambda m: m.forward(m.batch(["hi"]), None, 1, [[0.0] * 384] * 3),
            r"^layer_input: expected an array \(B, n, d_model\), got list",
        ),
    ],
)
def test_bad_input_is_a_value_error_naming_the_argument(model, call, message):
    with pytest.raises(ValueError, match=message):
        call(model)


def test_load_builds_one_model_per_process():
    assert minilm.load() is minilm.load()


def test_a_text_past_the_model_s_length_is_cut_with_a_warning_unless_asked(model):
    long = " ".join(["word"] * 300)  # 302 tokens with [CLS] and [SEP]
    with pytest.warns(UserWarning, match=r"^texts\[1\]: longer than the model's 256"):
        warned = model.embed(["short", long])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = model.embed(["short", long], truncate=True)
        model.embed(["short", "a text well within the limit"])  # no warning
    np.testing.assert_array_equal(warned, quiet)  # the same cut, said or not
