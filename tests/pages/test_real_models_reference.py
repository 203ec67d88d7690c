"""The real-model pages' forward-pass numbers, recomputed by transformers.

Each number the real-GQA-model page prints that depends on a forward pass (the
paragraph's perplexity, the same with multi-query attention, and with the wrong RoPE
pairing) is recomputed with transformers on the same weights, PyTorch on the CPU,
test-only (``tests/reference.py``): skipped in the plain ``make test``, required by
``pytest -m reference``. A bug such as a shared rotation table cannot reach the page.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from mha.pages.real_gqa_model import PARAGRAPH, results
from mha.pretrained import smollm2
from tests.reference import reference_module

pytestmark = pytest.mark.reference
RTOL = 1e-3  # float32 forward passes of different libraries: perplexity to 0.1%


def _perplexity(torch, model, ids: list[int]) -> float:
    with torch.no_grad():
        return float(
            torch.exp(model(torch.tensor([ids]), labels=torch.tensor([ids])).loss)
        )


def _ids() -> list[int]:
    return smollm2.load().encode(PARAGRAPH)


def test_the_perplexity_equals_the_reference(smollm2_reference, request):
    torch = reference_module("torch", request.config)
    expected = _perplexity(torch, smollm2_reference, _ids())
    assert results().perplexity == pytest.approx(expected, rel=RTOL)


def test_the_mqa_perplexity_equals_the_reference(smollm2_reference, request):
    """Multi-query attention by mean-pooling the K/V heads (Ainslie et al.), in torch:
    one K/V head per layer, the mean of the three, loaded into a model configured so."""
    torch = reference_module("torch", request.config)
    config = copy.deepcopy(smollm2_reference.config)
    groups, config.num_key_value_heads = config.num_key_value_heads, 1
    mqa = type(smollm2_reference)(config).eval()
    state = smollm2_reference.state_dict()
    for name, weight in state.items():
        if name.endswith(("k_proj.weight", "v_proj.weight")):
            state[name] = weight.reshape(groups, -1, weight.shape[-1]).mean(0)
    mqa.load_state_dict(state)
    expected = _perplexity(torch, mqa, _ids())
    assert results().mqa_perplexity == pytest.approx(expected, rel=RTOL)


def test_the_wrong_pairing_perplexity_equals_the_reference(smollm2_reference, request):
    """The GGUF file's Q/K weights are permuted for the interleaved pairing; transformers
    undoes that on loading and rotates half-split. Permuting its weights back (as
    llama.cpp's converter does) and keeping the half-split rotation is the page's
    wrong-pairing model."""
    torch = reference_module("torch", request.config)
    config = smollm2_reference.config
    wrong = copy.deepcopy(smollm2_reference)
    heads = {"q_proj": config.num_attention_heads, "k_proj": config.num_key_value_heads}
    with torch.no_grad():
        for name, module in wrong.named_modules():
            kind = name.rsplit(".", 1)[-1]
            if kind in heads:
                w = module.weight
                d = w.shape[0] // heads[kind] // 2
                permuted = w.reshape(heads[kind], 2, d, w.shape[-1]).transpose(1, 2)
                module.weight.copy_(permuted.reshape(w.shape))
    expected = _perplexity(torch, wrong, _ids())
    assert results().swapped_rope_perplexity == pytest.approx(expected, rel=RTOL)
    assert expected > 5 * results().perplexity  # nonsense, as the page says


def test_the_logits_of_the_study_paragraph_equal_the_reference(
    smollm2_reference, request
):
    torch = reference_module("torch", request.config)
    ids = _ids()
    with torch.no_grad():
        expected = smollm2_reference(torch.tensor([ids])).logits[0].numpy()
    np.testing.assert_allclose(smollm2.load().logits(ids), expected, atol=1e-3)
