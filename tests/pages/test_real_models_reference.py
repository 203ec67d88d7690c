"""The real-model pages' forward-pass numbers, recomputed by transformers.

Each number the real-GQA-model page prints that depends on a forward pass (the
paragraph's perplexity, the same with multi-query attention, and with the wrong RoPE
pairing), and what the depth page's numbers are made of (the induction ablation's
losses, the stream norms and the first token's attention share, on one of its
sequences), is recomputed with transformers on the same weights, PyTorch on the CPU,
test-only (``tests/reference.py``): skipped in the plain ``make test``, required by
``pytest -m reference``. A bug such as a shared rotation table cannot reach the page.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from mha.experiments import repeated_tokens
from mha.pages.real_gqa_model import _PARAGRAPH, _results
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
    return smollm2.load().encode(_PARAGRAPH)


def test_the_perplexity_equals_the_reference(smollm2_reference, request):
    torch = reference_module("torch", request.config)
    expected = _perplexity(torch, smollm2_reference, _ids())
    assert _results().perplexity == pytest.approx(expected, rel=RTOL)


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
    assert _results().mqa_perplexity == pytest.approx(expected, rel=RTOL)


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
    assert _results().swapped_rope_perplexity == pytest.approx(expected, rel=RTOL)
    assert expected > 5 * _results().perplexity  # nonsense, as the page says


def test_the_logits_of_the_study_paragraph_equal_the_reference(
    smollm2_reference, request
):
    torch = reference_module("torch", request.config)
    ids = _ids()
    with torch.no_grad():
        expected = smollm2_reference(torch.tensor([ids])).logits[0].numpy()
    np.testing.assert_allclose(smollm2.load().logits(ids), expected, atol=1e-3)


# --- the depth page: the ablation, the stream norms and the sinks, on one sequence --


def _depth_reference(torch, reference, ids: np.ndarray, removed=()):
    """transformers on one repeated sequence: the loss on its second copy, the
    stream entering each block and the final one (hooks before each layer and the
    final norm), and the attention weights; ``removed`` (layer, head) pairs are
    zeroed before o_proj, as ``head_mask`` does it."""
    layers = reference.model.layers
    d_k = reference.config.head_dim
    streams = []  # (n, d_model) entering each layer, then entering the final norm

    def keep(module, args, kwargs) -> None:
        streams.append((args[0] if args else kwargs["hidden_states"])[0])

    hooks = [
        layer.register_forward_pre_hook(keep, with_kwargs=True) for layer in layers
    ]
    hooks.append(reference.model.norm.register_forward_pre_hook(keep, with_kwargs=True))
    for layer, head in removed:

        def zero(module, args, head=head):
            x = args[0].clone()
            x[..., head * d_k : (head + 1) * d_k] = 0
            return (x,)

        hooks.append(layers[layer].self_attn.o_proj.register_forward_pre_hook(zero))
    try:
        with torch.no_grad():
            out = reference(torch.tensor([ids.tolist()]), output_attentions=True)
    finally:
        for hook in hooks:
            hook.remove()
    half = repeated_tokens.HALF
    queries = np.arange(half, 2 * half - 1)
    logits = out.logits[0].double().log_softmax(-1).numpy()
    loss = float(-logits[queries, ids[queries + 1]].mean())
    stream = np.stack([s.numpy() for s in streams]).astype(float)
    weights = np.stack([a[0].numpy() for a in out.attentions]).astype(float)
    return loss, stream, weights


@pytest.fixture(scope="module")
def one_sequence() -> np.ndarray:
    return repeated_tokens.repeated_sequences(smollm2.load())[:1]


def test_the_depth_ablation_losses_equal_the_reference(
    smollm2_reference, request, one_sequence
):
    """The five strongest induction heads removed, and the random set the page names
    (its worst), on one sequence: the second copy's loss equals transformers' to 1e-3
    nats, and so does the loss with every head kept."""
    torch = reference_module("torch", request.config)
    scan, model = repeated_tokens.scan(), smollm2.load()
    top = repeated_tokens.strongest(scan.induction, repeated_tokens.N_ABLATED)
    worst = [tuple(h) for h in scan.random_sets[int(np.argmax(scan.loss_random))]]
    losses = {}
    for name, heads in (("all kept", []), ("top", top), ("worst random", worst)):
        losses[name] = _depth_reference(
            torch, smollm2_reference, one_sequence[0], heads
        )[0]
        ours = repeated_tokens._ablated_loss(model, one_sequence, heads)
        assert ours == pytest.approx(losses[name], abs=1e-3), (name, heads)
    assert losses["top"] > losses["worst random"] > losses["all kept"]  # as the page


def test_the_depth_stream_norms_and_first_token_shares_equal_the_reference(
    smollm2_reference, request, one_sequence
):
    """Layer by layer on one sequence: the first token's stream norm over the others'
    mean norm (the page's outlier ratio) to 0.1%, and the share of attention on the
    first token (the sinks) to 1e-3."""
    torch = reference_module("torch", request.config)
    ids = one_sequence[0]
    _, stream, weights = _depth_reference(torch, smollm2_reference, ids)
    trace = smollm2.load().trace(ids)

    def ratio(s: np.ndarray) -> np.ndarray:  # (layers + 1, n, d) -> (layers + 1,)
        norms = np.linalg.norm(s, axis=-1)
        return norms[:, 0] / norms[:, 1:].mean(axis=-1)

    assert stream.shape == trace.stream.shape
    np.testing.assert_allclose(ratio(trace.stream), ratio(stream), rtol=1e-3)
    assert ratio(stream).max() > 50  # the outlier the page is about
    share = weights[:, :, 1:, 0].mean(axis=(1, 2))  # (layers,)
    ours = trace.weights.astype(float)[:, :, 1:, 0].mean(axis=(1, 2))
    np.testing.assert_allclose(ours, share, atol=1e-3, rtol=0)
