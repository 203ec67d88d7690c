"""SmolLM2-135M-Instruct in NumPy: tokenizer, generation, perplexity, reference logits.

The model is loaded once per session (``smollm2.load()`` is cached). The reference is
transformers' GGUF loader on PyTorch 2.13.0 (CPU), test-only (``tests/reference.py``):
its tests carry the ``reference`` marker and are skipped without it. It reads and dequantises
the file itself (about half a minute), once per session.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from mha.data.published import decoder
from mha.pages.real_gqa_model import _PARAGRAPH
from mha.pretrained import smollm2
from tests.reference import reference_module

# digits (alone, in numbers, after letters), runs of spaces and tabs, non-ASCII
# letters, symbols and emoji, a control token, and leading/trailing whitespace
TEXTS = (
    "In 2024, 3 of the 17 runners finished in 2:05:31, twice   as fast as in 1998!",
    "Café naïve – 東京, Zürich and Łódź; π ≈ 3.14159 😀\tend\n\n  new   lines",
    "<|im_start|>user\nPrice: €1,299.99 (was $1 499), 50% off<|im_end|>\n",
    "   leading spaces, mixedCase42 words and trailing spaces   ",
)
# A run of spaces before a digit: SmolLM2 splits the digits off first, so the run
# stays whole ("ĠĠ" then "1"); transformers' GGUF loader (5.x) does not split digits
# for this file's "smollm" pre-tokenizer and yields "Ġ" "Ġ" "1" here.
SPACES_BEFORE_DIGIT = "room   101 is at  9"
# whole pages of the site, as a long and varied text
PAGES = sorted((Path(__file__).parent.parent / "docs").glob("*.md"))


@pytest.fixture(scope="session")
def model() -> smollm2.SmolLM2:
    return smollm2.load()


@pytest.fixture(scope="session")
def reference_tokenizer(request: pytest.FixtureRequest):
    reference_module("torch", request.config)
    transformers = reference_module("transformers", request.config)
    path = smollm2.gguf_path()
    return transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)


@pytest.mark.reference
@pytest.mark.parametrize("text", TEXTS)
def test_tokenizer_ids_equal_the_reference(model, reference_tokenizer, text):
    expected = reference_tokenizer.encode(text, add_special_tokens=False)
    assert model.encode(text) == expected
    assert model.decode(expected) == text


def test_tokenizer_splits_digits_before_the_gpt2_rule(model):
    """The pre-tokenizer of SmolLM2's own tokenizer.json: Digits, then ByteLevel."""
    vocabulary = model.tokenizer.get_vocab()
    assert model.encode("a  1") == [vocabulary[t] for t in ("a", "ĠĠ", "1")]
    assert model.encode(" 2024") == [vocabulary[t] for t in ("Ġ", "2", "0", "2", "4")]
    assert model.encode("<|im_end|>") == [vocabulary["<|im_end|>"]]


@pytest.mark.reference
@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_tokenizer_ids_equal_the_reference_on_whole_pages(
    model, reference_tokenizer, page
):
    """Every page of the site, tokenized whole, gives transformers' ids.

    transformers reads the vocabulary, merges and control tokens from the GGUF file by
    itself; its loader omits SmolLM2's digit split (see SPACES_BEFORE_DIGIT), so the
    reference gets the pre-tokenizer of SmolLM2's tokenizer.json back.
    """
    import tokenizers

    backend = tokenizers.Tokenizer.from_str(
        reference_tokenizer.backend_tokenizer.to_str()
    )
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Sequence(
        [
            tokenizers.pre_tokenizers.Digits(individual_digits=True),
            tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    text = page.read_text(encoding="utf-8")
    ids = model.encode(text)
    assert ids == backend.encode(text, add_special_tokens=False).ids
    assert model.decode(ids) == text


def test_decode_round_trips_and_adds_no_bos(model):
    for text in (*TEXTS, SPACES_BEFORE_DIGIT, "", *(p.read_text() for p in PAGES)):
        assert model.decode(model.encode(text)) == text
    assert model.encode("Hello")[0] != 1  # no <|im_start|> / BOS in front


def test_greedy_generation_answers_a_factual_question(model):
    answer = model.generate(smollm2.chat_prompt("What is the capital of France?"), 12)
    assert "Paris" in answer


def shuffled_weights(model: smollm2.SmolLM2) -> smollm2.SmolLM2:
    """Every block's matrices with their rows shuffled (same values, wrong places)."""
    rng = np.random.default_rng(0)
    blocks = []
    for block in model.blocks:
        attention = copy.copy(block.attention)
        for name in ("w_q", "w_k", "w_v", "w_o"):
            setattr(attention, name, rng.permutation(getattr(attention, name)))
        blocks.append(
            dataclasses.replace(
                block,
                attention=attention,
                w_gate_up=rng.permutation(block.w_gate_up),
                w_down=rng.permutation(block.w_down),
            )
        )
    return dataclasses.replace(model, blocks=blocks)


def test_perplexity_of_an_ordinary_paragraph(model):
    """(The wrong RoPE pairing: ``tests/pages/test_real_gqa_model.py``.)"""
    perplexity = model.perplexity(_PARAGRAPH)
    assert perplexity < 30
    assert shuffled_weights(model).perplexity(_PARAGRAPH) >= 5 * perplexity


@pytest.mark.reference
def test_logits_equal_the_reference(model, smollm2_reference, request):
    torch = reference_module("torch", request.config)
    ids = model.encode(_PARAGRAPH)[:48]
    with torch.no_grad():
        expected = smollm2_reference(torch.tensor([ids])).logits[0].numpy()
    logits = model.logits(ids)
    assert logits.dtype == np.float32
    np.testing.assert_allclose(logits, expected, atol=5e-4, rtol=0)


def test_decoding_with_the_cache_equals_the_full_pass(model):
    ids = model.encode("The quick brown fox jumps over the lazy dog.")
    caches = model.new_caches(len(ids))
    prompt = model.hidden(ids[:5], caches)
    steps = [model.hidden([i], caches) for i in ids[5:]]
    full = model.hidden(ids, model.new_caches(len(ids)))
    decoded = model.head(np.concatenate([prompt, *steps], axis=1))
    np.testing.assert_allclose(decoded, model.head(full), atol=2e-4)
    assert sum(c.nbytes for c in caches) == 30 * 2 * 3 * 64 * len(ids) * 4


def test_bad_input_is_a_clear_error(model):
    with pytest.raises(ValueError, match="ids"):
        model.logits([model.config.vocab_size])
    with pytest.raises(ValueError, match="ids"):
        model.logits([])
    with pytest.raises(ValueError, match="at least 2 tokens"):
        model.perplexity("Hi")
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.generate("Hi", -1)
    with pytest.raises(ValueError, match="text"):
        model.encode(b"bytes")
    with pytest.raises(ValueError, match="max_len"):
        model.hidden([1, 2, 3], model.new_caches(2))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda m: m.decode([1.5]),
            r"^ids: expected integer token ids, got 1.5 \(float\)",
        ),
        (
            lambda m: m.decode(["a"]),
            r"^ids: expected integer token ids, got 'a' \(str\)",
        ),
        (
            lambda m: m.map_attention(lambda a: a, layers=[99]),
            r"^layers: expected indices from 0 to 29, got 99",
        ),
        (
            lambda m: m.hidden([1], m.new_caches(2)[:3]),
            r"^caches: expected one KVCache per layer \(30\), got 3 items",
        ),
        (
            lambda m: m.hidden([1], [None] * 30),
            r"^caches: expected one KVCache per layer \(30\), got 30 items holding NoneType",
        ),
        (lambda m: m.hidden([1], "caches"), r"^caches: expected a list of one KVCache"),
        (
            lambda m: m.logits([504, 2365], head_mask=np.full((30, 9), 1e30)),
            r"^head_mask: expected values whose heads' outputs, squared by the next",
        ),
        (
            lambda m: m.trace([504, 2365], np.full((30, 9), 1e30)),
            r"^head_mask: expected values whose heads' outputs",
        ),
        (lambda m: m.map_attention(lambda a: None), r"^change: expected it to return"),
        (lambda m: m.map_attention("to_gqa"), r"^change: expected a function"),
        (
            lambda m: m.map_attention(lambda a: type(a)(64, 4)),
            r"^change: expected a layer of d_model=576, got d_model=64",
        ),
        (lambda m: m.new_caches(10**7), r"^max_len: expected at most 8192 tokens"),
        (lambda m: m.new_caches(0), r"^max_len: expected a positive integer, got 0"),
    ],
)
def test_obscure_inputs_get_an_error_naming_the_argument(model, call, message):
    with pytest.raises(ValueError, match=message):
        call(model)


def test_decoding_past_the_context_is_refused(model):
    caches = model.new_caches(2)
    for cache in caches:  # as if the context were full, without computing it
        cache.length = model.config.context_length
    with pytest.raises(ValueError, match=r"^ids: expected at most \d+ tokens in all"):
        model.hidden([1], caches)


def test_the_file_declares_the_published_configuration(model):
    published = decoder("SmolLM2-135M")
    config = model.config
    assert (config.n_layers, config.n_heads, config.n_kv_heads, config.d_model) == (
        published.n_layers,
        published.n_heads,
        published.n_kv_heads,
        published.d_model,
    )
    assert config.d_k == published.head_dim
    assert model.blocks[0].attention.w_k.shape == (576, 3 * 64)  # 3 K/V heads of 64


def test_each_layer_projects_q_k_v_with_one_product(model):
    """The loader lays W_Q, W_K, W_V side by side in one array per layer."""
    for block in model.blocks:
        a = block.attention
        assert a.is_fused() and a.w_qkv.shape == (576, (9 + 2 * 3) * 64)
    variant = model.map_attention(lambda attention: attention.to_gqa(1))
    assert not variant.blocks[0].attention.is_fused()  # other arrays: readable path


def test_attentions_and_head_mask(model):
    ids = model.encode("The cat sat on the mat. The cat sat on the mat.")
    weights = model.attentions(ids)
    n = len(ids)
    assert weights.shape == (30, 9, n, n) and weights.dtype == np.float32
    np.testing.assert_allclose(weights.sum(-1), 1, atol=1e-5)
    assert not np.triu(weights, k=1).any()  # causal
    keep = np.ones((30, 9))
    np.testing.assert_allclose(model.logits(ids, keep), model.logits(ids), atol=1e-3)
    removed = keep.copy()
    removed[3, 4] = 0
    trace = model.trace(ids, removed)
    clean = model.trace(ids)
    # layers below the removed head are untouched; its layer's write changes
    np.testing.assert_array_equal(trace.stream[:4], clean.stream[:4])
    assert not np.allclose(trace.attention_writes[3], clean.attention_writes[3])
    with pytest.raises(ValueError, match="head_mask"):
        model.logits(ids, np.ones((30, 8)))
    with pytest.raises(ValueError, match="head_mask"):
        model.logits(ids, np.full((30, 9), "a"))


def test_token_losses_equal_float64_ones_within_5e_8(model):
    # the exponentials in float32, their sum in float64: within 5e-8 nats of the
    # float64 log-sum-exp on the model's logits (a float32 sum is 2.7e-7 away)
    ids = model.encode(_PARAGRAPH)
    logits = model.logits(ids[:-1])
    wide = logits.astype(np.float64)
    peak = wide.max(axis=-1, keepdims=True)
    log_z = peak[:, 0] + np.log(np.exp(wide - peak).sum(axis=-1))
    exact = log_z - wide[np.arange(len(ids) - 1), ids[1:]]
    losses = smollm2.token_losses(logits, ids[1:])
    assert losses.dtype == np.float64
    assert np.abs(losses - exact).max() < 5e-8
    # float64 logits stay float64 throughout (the attention page's prefixes compare
    # two passes' losses at 1e-5 nats): the all-float64 losses, bit for bit
    assert np.array_equal(smollm2.token_losses(wide, ids[1:]), exact)


def test_silu_in_place_is_the_formula_bit_for_bit():
    # each step in place on one new array: the same operations as x / (1 + exp(-x)),
    # on the strided half of a wider array as the feed-forward hands it
    wide = np.random.default_rng(0).normal(scale=8, size=(6, 20)).astype(np.float32)
    for x in (wide[:, :10], wide.astype(np.float64)):
        assert np.array_equal(smollm2.silu(x), x / (1 + np.exp(-x)))
        assert smollm2.silu(x).dtype == x.dtype
    assert smollm2.silu(np.arange(3)).dtype == np.float64  # integers as before
