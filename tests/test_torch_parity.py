"""The core's MultiHeadAttention against torch.nn.MultiheadAttention on the same weights.

torch is a test-only reference (``tests/reference.py``): without it these tests are
skipped, except in a reference run (``pytest -m reference``), where its absence fails.
"""

from __future__ import annotations

import numpy as np
import pytest

from mha import MultiHeadAttention, causal_mask
from tests.pages.test_multi_head import run_tab
from tests.reference import reference_module

pytestmark = pytest.mark.reference


@pytest.fixture(scope="module")
def torch(request: pytest.FixtureRequest):
    """The torch module; a skip without it (a failure in a reference run)."""
    return reference_module("torch", request.config)


def torch_copy(torch, layer: MultiHeadAttention, dtype):
    """A ``torch.nn.MultiheadAttention`` holding ``layer``'s weights.

    torch computes ``x @ W.T`` and stacks W_Q, W_K, W_V as rows of one matrix.
    """
    has_bias = layer.b_q is not None
    twin = torch.nn.MultiheadAttention(
        layer.d_model, layer.n_heads, bias=has_bias, batch_first=True, dtype=dtype
    )
    with torch.no_grad():
        stacked = np.concatenate([layer.w_q, layer.w_k, layer.w_v], axis=1).T
        twin.in_proj_weight.copy_(torch.from_numpy(stacked))
        twin.out_proj.weight.copy_(torch.from_numpy(layer.w_o.T))
        if has_bias:
            biases = np.concatenate([layer.b_q, layer.b_k, layer.b_v])
            twin.in_proj_bias.copy_(torch.from_numpy(biases))
            twin.out_proj.bias.copy_(torch.from_numpy(layer.b_o))
    return twin.eval()


def random_layer(d_model: int, n_heads: int, bias: bool) -> MultiHeadAttention:
    """A layer whose every parameter, biases included, is a random draw."""
    rng = np.random.default_rng(d_model * 100 + n_heads)
    layer = MultiHeadAttention(d_model, n_heads, bias=bias, rng=rng)
    if bias:
        for name in ("b_q", "b_k", "b_v", "b_o"):
            setattr(layer, name, rng.normal(size=getattr(layer, name).shape))
    return layer


@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    ("d_model", "n_heads", "bias"), [(8, 1, False), (8, 2, True), (64, 8, True)]
)
def test_outputs_and_weights_match_torch(
    torch, d_model: int, n_heads: int, bias: bool, causal: bool, dtype_name: str
) -> None:
    layer = random_layer(d_model, n_heads, bias)
    x = np.random.default_rng(3).normal(size=(2, 7, d_model)).astype(dtype_name)
    mask = causal_mask(7) if causal else None

    out, weights = layer(x, mask=mask)
    twin = torch_copy(torch, layer, getattr(torch, dtype_name))
    xt = torch.from_numpy(x)
    with torch.no_grad():
        out_t, weights_t = twin(
            xt,
            xt,
            xt,
            attn_mask=None if mask is None else torch.from_numpy(~mask),
            average_attn_weights=False,
        )
    assert out.dtype == np.dtype(dtype_name)
    assert weights_t.shape == weights.shape == (2, n_heads, 7, 7)
    np.testing.assert_allclose(out, out_t.numpy(), rtol=0, atol=1e-5)
    np.testing.assert_allclose(weights, weights_t.numpy(), rtol=0, atol=1e-5)


def test_torch_averages_the_heads_unless_told_not_to(torch) -> None:
    layer = random_layer(8, 2, bias=True)
    x = np.random.default_rng(4).normal(size=(1, 5, 8))
    _, weights = layer(x)
    xt = torch.from_numpy(x)
    with torch.no_grad():
        _, averaged = torch_copy(torch, layer, torch.float64)(xt, xt, xt)
    np.testing.assert_allclose(averaged.numpy(), weights.mean(axis=1), atol=1e-12)


def test_the_pages_pytorch_tab_runs(torch) -> None:
    namespace = run_tab("PyTorch")
    layer, x = namespace["layer"], namespace["x"]
    _, weights = layer(x, mask=causal_mask(5))
    np.testing.assert_allclose(
        namespace["weights"].detach().numpy(), weights, rtol=0, atol=1e-5
    )
