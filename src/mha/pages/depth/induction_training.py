"""Attention-only Transformers trained in NumPy on the induction task: one layer or two.

Learned token and position embeddings of width ``D_MODEL``, causal attention layers
added to the residual stream, a linear readout; no MLP, no normalisation. Every head
has width ``D_K``, so ``Shape(1, 2)`` (one layer of two heads) and ``Shape(2, 1)``
(two layers of one head) have the same attention weights, side by side or stacked.
The loss is the cross-entropy at the scored positions of fresh ``induction.sample``
batches; the backward pass is written out by hand and Adam (``toy_model.Adam``)
steps every seed at once (a leading ``models`` axis).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mha.attention import attend, causal_mask
from mha.experiments.toy_model import ATTENTION_WEIGHTS, Adam, log_softmax
from mha.heads import merge_heads, split_heads
from mha.pages.depth.induction import _LENGTH, _VOCAB, _Batch, sample
from mha.support.validate import positive_int

_D_MODEL = 32
_D_K = 16
_LEARNING_RATE = 0.015  # peak; falls linearly to 0 (measured: 800 steps, 6 of 6 seeds)

_Params = dict[str, np.ndarray]  # name -> (models, rows, cols)


@dataclass(frozen=True)
class _Shape:
    """How the heads are arranged: ``n_layers`` layers of ``n_heads`` heads each."""

    n_layers: int
    n_heads: int

    @property
    def name(self) -> str:
        """``"1 layer x 2 heads"``."""
        layers, heads = self.n_layers, self.n_heads
        return f"{layers} layer{'s' * (layers != 1)} x {heads} head{'s' * (heads != 1)}"

    def attention_params(self) -> int:
        """Weights of all attention layers: 4 d_model (h d_k) per layer."""
        return self.n_layers * 4 * _D_MODEL * self.n_heads * _D_K


def _init_params(
    shape: _Shape, seeds: Sequence[int], dtype: type = np.float32
) -> _Params:
    """One freshly initialised model per seed, stacked on a leading ``models`` axis."""
    width = shape.n_heads * _D_K
    models = []
    for seed in seeds:
        rng = np.random.default_rng([seed, 2])
        model = {
            "embed": rng.normal(0, 1, (_VOCAB, _D_MODEL)),
            "position": rng.normal(0, 1, (_LENGTH, _D_MODEL)),
            "unembed": rng.normal(0, _D_MODEL**-0.5, (_D_MODEL, _VOCAB)),
        }
        for layer in range(shape.n_layers):
            for name in ATTENTION_WEIGHTS:
                rows, cols = (width, _D_MODEL) if name == "w_o" else (_D_MODEL, width)
                model[f"{name}{layer}"] = rng.normal(0, rows**-0.5, (rows, cols))
        models.append(model)
    return {k: np.stack([m[k] for m in models]).astype(dtype) for k in models[0]}


def _forward(params: _Params, tokens: np.ndarray, shape: _Shape) -> tuple:
    """Run every model on its own sequences ``tokens (M, B, n)``: the one-hot tokens,
    each layer's ``(x, q, k, v, weights, heads)`` (for the backward pass), the last
    residual state and the logits."""
    dtype = params["embed"].dtype
    n = tokens.shape[-1]
    one_hot = (tokens[..., None] == np.arange(_VOCAB)).astype(dtype)
    x = _apply(one_hot, params["embed"]) + params["position"][:, None, :n]
    mask = causal_mask(n)
    passes = []
    for layer in range(shape.n_layers):
        q, k, v = (
            split_heads(_apply(x, params[f"{w}{layer}"]), shape.n_heads)
            for w in ("w_q", "w_k", "w_v")
        )
        heads, weights = attend(q, k, v, mask)
        passes.append((x, q, k, v, weights, heads))
        x = x + _apply(merge_heads(heads), params[f"w_o{layer}"])
    return one_hot, passes, x, _apply(x, params["unembed"])


def _apply(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x (M, B, n, a) @ w (M, a, b)`` per model, as one product per model."""
    m, b, n, _ = x.shape
    return (x.reshape(m, b * n, -1) @ w).reshape(m, b, n, -1)


def _loss_and_grads(
    params: _Params, tokens: np.ndarray, targets: np.ndarray, shape: _Shape
) -> tuple[np.ndarray, _Params]:
    """Mean cross-entropy over the scored positions of each model ``(M,)``, and gradients.

    ``tokens, targets (M, B, n)``; a target of -1 is not scored.
    """
    one_hot, passes, final, logits = _forward(params, tokens, shape)
    dtype = logits.dtype.type
    scored = targets >= 0  # (M, B, n)
    count = scored.sum(axis=(1, 2)).astype(dtype)[:, None, None, None]  # (M, 1, 1, 1)
    log_probs = log_softmax(logits)
    hot = (targets[..., None] == np.arange(_VOCAB)) & scored[..., None]
    loss = -(log_probs * hot).sum(axis=(1, 2, 3)) / count[:, 0, 0, 0]
    d_logits = (np.exp(log_probs) * scored[..., None] - hot) / count

    def flat(a: np.ndarray) -> np.ndarray:  # (M, B, n, c) -> (M, B*n, c)
        return a.reshape(a.shape[0], -1, a.shape[-1])

    grads = {"unembed": _t(flat(final)) @ flat(d_logits)}
    d_x = _apply(d_logits, _t(params["unembed"]))
    for layer in reversed(range(shape.n_layers)):
        x, q, k, v, weights, heads = passes[layer]
        grads[f"w_o{layer}"] = _t(flat(merge_heads(heads))) @ flat(d_x)
        d_heads = split_heads(_apply(d_x, _t(params[f"w_o{layer}"])), shape.n_heads)
        # heads = A v, A = softmax(S), S = q kᵀ / √d_k: Σ_j A_ij dA_ij = d_heads_i · heads_i
        d_a = d_heads @ _t(v)
        d_v = _t(weights) @ d_heads
        d_s = weights * (d_a - (d_heads * heads).sum(axis=-1, keepdims=True))
        scale = dtype(1 / np.sqrt(_D_K))
        d_q = d_s @ k * scale
        d_k = _t(d_s) @ q * scale
        for name, d in (("w_q", d_q), ("w_k", d_k), ("w_v", d_v)):
            merged = merge_heads(d)
            grads[f"{name}{layer}"] = _t(flat(x)) @ flat(merged)
            d_x = d_x + _apply(merged, _t(params[f"{name}{layer}"]))
    grads["embed"] = _t(flat(one_hot)) @ flat(d_x)
    grads["position"] = d_x.sum(axis=1)
    return loss, grads


def _t(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


@dataclass(frozen=True)
class _Trained:
    """How ``shape``'s models, one per seed, do after training."""

    shape: _Shape
    accuracy: np.ndarray  # (seeds,) on the scored positions of the test batch


def _train_and_score(
    shape: _Shape, seeds: Sequence[int], steps: int, batch_size: int, test: _Batch
) -> _Trained:
    """Train one model per seed (its initial weights and its stream of batches), Adam's
    step size falling linearly from ``LEARNING_RATE`` to zero, then score each model
    on ``test`` (what a page caches).
    """
    steps = positive_int("steps", steps)
    batch_size = positive_int("batch_size", batch_size)
    if not seeds:
        raise ValueError("seeds: expected at least one seed, got none")
    params = _init_params(shape, seeds)
    adam = Adam(params, [_LEARNING_RATE] * len(seeds))
    batches = [sample(steps * batch_size, np.random.default_rng([s, 3])) for s in seeds]
    tokens = np.stack([b.tokens for b in batches])  # (M, steps*B, n)
    targets = np.stack([b.targets for b in batches])
    peak = adam.lr.copy()
    for step in range(steps):
        rows = slice(step * batch_size, (step + 1) * batch_size)
        _, grads = _loss_and_grads(params, tokens[:, rows], targets[:, rows], shape)
        adam.lr = peak * (1 - step / steps)  # linear decay: late steps do not undo
        adam.step(params, grads)
    tokens = np.broadcast_to(test.tokens, (len(seeds), *test.tokens.shape))
    predicted = _forward(params, tokens, shape)[-1].argmax(axis=-1)
    right = predicted == test.targets
    return _Trained(shape, right[:, test.scored].mean(axis=-1))
