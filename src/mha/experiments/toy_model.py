"""One multi-head attention layer and a linear readout, trained in NumPy by hand.

The toy task's one-hot tokens go through the core's self-attention, then ``W_out
(d_model, 2 * n_words)`` and two softmaxes (the previous and the referenced word); no
residual, MLP or norm. The backward pass is written out by hand, Adam updates the
weights, and every parameter has a leading ``models`` axis: one call trains several.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mha.attention import scaled_dot_product_attention
from mha.experiments.toy_task import D_MODEL, N_TARGETS, N_WORDS, Batch, generate
from mha.heads import merge_heads, split_heads
from mha.layer import MultiHeadAttention
from mha.support.validate import positive_int

Params = dict[str, np.ndarray]  # name -> (models, rows, cols)
ATTENTION_WEIGHTS = ("w_q", "w_k", "w_v", "w_o")


def init_params(n_heads: int, seeds: Sequence[int], dtype: type = np.float32) -> Params:
    """One fresh model per seed, stacked on a ``models`` axis (the core's layer draws
    the same matrices for every h from one seed).

    ```python
    import numpy as np
    from mha.experiments.toy_model import init_params

    one, eight = init_params(1, [0, 1]), init_params(8, [0, 1])
    assert one["w_q"].shape == (2, 32, 32)
    assert all(np.array_equal(one[k], eight[k]) for k in one)  # same seed, same draws
    ```
    """
    models = []
    for seed in seeds:
        rng = np.random.default_rng([seed, 0])
        layer = MultiHeadAttention(D_MODEL, n_heads, rng=rng, dtype=dtype)
        w_out = rng.normal(0.0, D_MODEL**-0.5, size=(D_MODEL, N_TARGETS * N_WORDS))
        models.append({k: getattr(layer, k) for k in ATTENTION_WEIGHTS})
        models[-1]["w_out"] = w_out.astype(dtype)
    return {k: np.stack([m[k] for m in models]) for k in models[0]}


@dataclass(frozen=True)
class Forward:
    """A forward pass and what its backward needs (``M`` models, ``B`` sequences)."""

    x: np.ndarray  # (M, B, n, d_model) inputs
    q: np.ndarray  # (M, B, h, n, d_k)
    k: np.ndarray  # (M, B, h, n, d_k)
    v: np.ndarray  # (M, B, h, n, d_k)
    weights: np.ndarray  # (M, B, h, n, n) attention weights
    heads: np.ndarray  # (M, B, h, n, d_k) each head's output, weights @ v
    concat: np.ndarray  # (M, B, n, d_model) merged heads, before W_O
    y: np.ndarray  # (M, B, n, d_model) the layer's output
    logits: np.ndarray  # (M, B, n, 2, n_words)


def forward(params: Params, x: np.ndarray, n_heads: int) -> Forward:
    """Run every model on ``x (M, B, n, d_model)`` (or ``(B, n, d_model)``, shared).

    ```python
    import numpy as np
    from mha import MultiHeadAttention
    from mha.experiments.toy_model import forward, init_params
    from mha.experiments.toy_task import generate

    params, x = init_params(4, [7]), generate(5).inputs()
    layer = MultiHeadAttention(32, 4)
    names = ("w_q", "w_k", "w_v", "w_o")
    layer.w_q, layer.w_k, layer.w_v, layer.w_o = (params[k][0] for k in names)
    assert np.allclose(forward(params, x, 4).y[0], layer(x)[0])  # the core's layer
    ```
    """
    x = np.broadcast_to(x, (params["w_q"].shape[0], *x.shape[-3:]))
    q, k, v = (
        split_heads(x @ params[w][:, None], n_heads) for w in ("w_q", "w_k", "w_v")
    )
    heads, weights = scaled_dot_product_attention(q, k, v)  # (M, B, h, n, d_k)
    concat = merge_heads(heads)
    y = concat @ params["w_o"][:, None]
    logits = (y @ params["w_out"][:, None]).reshape(*y.shape[:-1], N_TARGETS, N_WORDS)
    return Forward(x, q, k, v, weights, heads, concat, y, logits)


def loss_and_grads(
    params: Params, x: np.ndarray, targets: np.ndarray, n_heads: int
) -> tuple[np.ndarray, Params]:
    """Each model's mean cross-entropy ``(M,)`` on ``targets (B, n, 2)`` (or ``(M, B,
    n, 2)``) and its gradients, by backpropagation.

    ```python
    import numpy as np
    from mha.experiments.toy_model import init_params, loss_and_grads
    from mha.experiments.toy_task import generate

    batch = generate(4)
    loss, grads = loss_and_grads(init_params(2, [0]), batch.inputs(), batch.targets(), 2)
    assert loss.shape == (1,) and abs(loss[0] - np.log(8)) < 0.5  # near chance
    assert grads["w_q"].shape == (1, 32, 32)
    ```
    """
    fwd = forward(params, x, n_heads)
    m, b, n = fwd.y.shape[:3]
    hot = _one_hot(targets, fwd.logits.shape)  # (M, B, n, 2, n_words)
    log_probs = log_softmax(fwd.logits)
    loss = -(log_probs * hot).sum(axis=(1, 2, 3, 4)) / (b * n * N_TARGETS)

    # d loss / d logits of a mean cross-entropy: (p - onehot) / count
    d_logits = (np.exp(log_probs) - hot) / fwd.logits.dtype.type(b * n * N_TARGETS)
    d_logits = d_logits.reshape(m, b * n, N_TARGETS * N_WORDS)

    def flat(a: np.ndarray) -> np.ndarray:  # (M, B, n, d) -> (M, B*n, d)
        return a.reshape(m, b * n, a.shape[-1])

    def t(a: np.ndarray) -> np.ndarray:  # transpose the last two axes
        return np.swapaxes(a, -1, -2)

    grads = {"w_out": t(flat(fwd.y)) @ d_logits}
    d_y = (d_logits @ t(params["w_out"])).reshape(fwd.y.shape)
    grads["w_o"] = t(flat(fwd.concat)) @ flat(d_y)
    d_heads = split_heads(d_y @ t(params["w_o"])[:, None], n_heads)  # (M, B, h, n, d_k)

    # heads = A v, A = softmax(S), S = q kᵀ / √d_k. The softmax backward needs
    # Σ_j A_ij dA_ij per row, which equals d_heads_i · heads_i (a sum over d_k, not n).
    a = fwd.weights
    d_a = d_heads @ t(fwd.v)
    d_v = t(a) @ d_heads
    d_s = a * (d_a - (d_heads * fwd.heads).sum(axis=-1, keepdims=True))
    scale = fwd.q.dtype.type(1 / np.sqrt(fwd.q.shape[-1]))
    d_q = d_s @ fwd.k * scale
    d_k = t(d_s) @ fwd.q * scale
    for name, d in (("w_q", d_q), ("w_k", d_k), ("w_v", d_v)):
        grads[name] = t(flat(fwd.x)) @ flat(merge_heads(d))
    return loss, grads


@dataclass(frozen=True)
class Scores:
    """How well each of ``M`` models does on a batch."""

    loss: np.ndarray  # (M,) mean cross-entropy in nats
    accuracy: np.ndarray  # (M, 2) fraction right: [previous word, referenced word]


def evaluate(params: Params, batch: Batch, n_heads: int) -> Scores:
    """Loss and accuracy of every model on ``batch`` (no gradients).

    ```python
    from mha.experiments.toy_model import evaluate, init_params
    from mha.experiments.toy_task import generate

    scores = evaluate(init_params(2, [0, 1]), generate(50), 2)
    assert scores.loss.shape == (2,) and (scores.accuracy < 0.5).all()  # untrained
    ```
    """
    fwd = forward(params, batch.inputs(params["w_q"].dtype.type), n_heads)
    hot = _one_hot(batch.targets(), fwd.logits.shape)
    loss = -(log_softmax(fwd.logits) * hot).sum(axis=-1).mean(axis=(1, 2, 3))
    right = np.take_along_axis(hot, fwd.logits.argmax(-1)[..., None], axis=-1)
    accuracy = right[..., 0].mean(axis=(1, 2))  # (M, 2)
    return Scores(loss=loss, accuracy=accuracy)


def _one_hot(targets: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Word indices ``(..., B, n, 2)`` as a boolean one-hot array of ``shape``."""
    return np.broadcast_to(targets[..., None] == np.arange(shape[-1]), shape)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log softmax over the last axis, finite even where a probability underflows.

    ```python
    import numpy as np
    from mha.experiments.toy_model import log_softmax

    assert np.isfinite(log_softmax(np.array([0.0, 1e4]))).all()
    ```
    """
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


class Adam:
    """Adam (Kingma & Ba) with one learning rate per model and the usual defaults.

    ```python
    import numpy as np
    from mha.experiments.toy_model import Adam

    params = {"w": np.array([[[1.0]], [[1.0]]])}  # two models, one weight each
    adam = Adam(params, learning_rates=[0.1, 0.01])
    adam.step(params, {"w": np.ones((2, 1, 1))})
    assert np.allclose(params["w"].ravel(), [0.9, 0.99])  # the first step moves by lr
    ```
    """

    beta1, beta2, eps = 0.9, 0.999, 1e-8

    def __init__(self, params: Params, learning_rates: Sequence[float]) -> None:
        dtype = next(iter(params.values())).dtype
        self.lr = np.asarray(learning_rates, dtype=dtype)[:, None, None]  # (M, 1, 1)
        self.m = {k: np.zeros_like(p) for k, p in params.items()}
        self.v = {k: np.zeros_like(p) for k, p in params.items()}
        self.t = 0

    def step(self, params: Params, grads: Params) -> None:
        """Update ``params`` in place from ``grads``."""
        self.t += 1
        correction1 = 1 - self.beta1**self.t
        correction2 = 1 - self.beta2**self.t
        for name, g in grads.items():
            m, v = self.m[name], self.v[name]
            m *= self.beta1
            m += (1 - self.beta1) * g
            v *= self.beta2
            v += (1 - self.beta2) * g * g
            step = m / correction1 / (np.sqrt(v / correction2) + self.eps)
            params[name] -= self.lr * step


def train(
    n_heads: int,
    seeds: Sequence[int],
    learning_rates: Sequence[float],
    steps: int,
    batch_size: int,
) -> tuple[Params, np.ndarray]:
    """Train one float32 model per ``(seeds[i], learning_rates[i])`` (a seed fixes the
    weights and the batches): the weights and each step's loss ``(steps, M)``.

    ```python
    from mha.experiments.toy_model import train

    rates = [0.0, 0.03]
    params, losses = train(2, seeds=[0, 0], learning_rates=rates, steps=20, batch_size=8)
    assert losses[-1, 1] < losses[-1, 0]  # learning beats a zero step size
    ```
    """
    if len(seeds) != len(learning_rates):
        raise ValueError(
            f"learning_rates: expected one per seed ({len(seeds)}), "
            f"got {len(learning_rates)}"
        )
    steps = positive_int("steps", steps)
    batch_size = positive_int("batch_size", batch_size)
    params = init_params(n_heads, seeds)
    dtype = params["w_q"].dtype.type
    adam = Adam(params, learning_rates)
    distinct = sorted(set(seeds))
    which = [distinct.index(seed) for seed in seeds]  # model -> its data stream
    streams = [
        generate(steps * batch_size, np.random.default_rng([s, 1])) for s in distinct
    ]
    inputs = np.stack([b.inputs(dtype) for b in streams])  # (seeds, steps*B, n, d)
    targets = np.stack([b.targets() for b in streams])  # (seeds, steps*B, n, 2)
    losses = np.empty((steps, len(seeds)))
    for step in range(steps):
        rows = slice(step * batch_size, (step + 1) * batch_size)
        losses[step], grads = loss_and_grads(
            params, inputs[which, rows], targets[which, rows], n_heads
        )
        adam.step(params, grads)
    return params, losses
