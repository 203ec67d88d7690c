"""Attention-only Transformers trained in NumPy on the induction task: one layer or two.

Each model embeds tokens and positions (both learned) into a residual stream of
width ``D_MODEL``, adds the output of each causal attention layer to it, and reads
the next-token logits from the last state (``x @ W_U``); no MLP, no normalisation.
Every head has width ``D_K``, so ``Shape(1, 2)`` (one layer of two heads) and
``Shape(2, 1)`` (two layers of one head) have the same attention parameters: the same
two heads, side by side or stacked. Only stacking lets a head's keys read what an
earlier head wrote (``mha.experiments.induction``).

The loss is the cross-entropy at the scored positions of ``induction.sample``
batches (fresh every step). The backward pass is written out by hand (checked
against finite differences in the tests) and Adam (``toy_model.Adam``) updates the
weights. Every parameter has a leading ``models`` axis: one NumPy call advances every
seed at once.

```python
from mha.experiments.induction_training import Shape, train

run = train(Shape(2, 1), seeds=[0, 1], steps=5, batch_size=4)
assert run.params["embed"].shape == (2, 12, 32) and run.losses.shape == (5, 2)
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mha.attention import attend, causal_mask
from mha.experiments.induction import LENGTH, VOCAB, Batch, sample
from mha.experiments.toy_model import Adam
from mha.heads import merge_heads, split_heads
from mha.support.validate import positive_int

D_MODEL = 32
D_K = 16
LEARNING_RATE = 0.015  # peak; falls linearly to 0 (measured: 800 steps, 6 of 6 seeds)

Params = dict[str, np.ndarray]  # name -> (models, rows, cols)
LAYER_WEIGHTS = ("w_q", "w_k", "w_v", "w_o")


@dataclass(frozen=True)
class Shape:
    """How the heads are arranged: ``n_layers`` layers of ``n_heads`` heads each."""

    n_layers: int
    n_heads: int

    @property
    def name(self) -> str:
        """``"1 layer x 2 heads"``-style label."""
        layers = "layer" if self.n_layers == 1 else "layers"
        heads = "head" if self.n_heads == 1 else "heads"
        return f"{self.n_layers} {layers} x {self.n_heads} {heads}"

    def attention_params(self) -> int:
        """Weights of all attention layers: 4 d_model (h d_k) per layer.

        ```python
        from mha.experiments.induction_training import Shape

        assert Shape(1, 2).attention_params() == Shape(2, 1).attention_params()
        ```
        """
        return self.n_layers * 4 * D_MODEL * self.n_heads * D_K


def init_params(shape: Shape, seeds: Sequence[int], dtype: type = np.float32) -> Params:
    """One freshly initialised model per seed, stacked on a leading ``models`` axis.

    ```python
    from mha.experiments.induction_training import Shape, init_params

    params = init_params(Shape(2, 1), [0, 1, 2])
    assert params["w_q1"].shape == (3, 32, 16) and params["unembed"].shape == (3, 32, 12)
    ```
    """
    width = shape.n_heads * D_K
    models = []
    for seed in seeds:
        rng = np.random.default_rng([seed, 2])
        model = {
            "embed": rng.normal(0, 1, (VOCAB, D_MODEL)),
            "position": rng.normal(0, 1, (LENGTH, D_MODEL)),
            "unembed": rng.normal(0, D_MODEL**-0.5, (D_MODEL, VOCAB)),
        }
        for layer in range(shape.n_layers):
            for name in LAYER_WEIGHTS:
                rows, cols = (width, D_MODEL) if name == "w_o" else (D_MODEL, width)
                model[f"{name}{layer}"] = rng.normal(0, rows**-0.5, (rows, cols))
        models.append(model)
    return {k: np.stack([m[k] for m in models]).astype(dtype) for k in models[0]}


@dataclass(frozen=True)
class LayerPass:
    """One attention layer's forward pass, kept for its backward pass."""

    x: np.ndarray  # (M, B, n, d) the residual stream it reads
    q: np.ndarray  # (M, B, h, n, d_k)
    k: np.ndarray
    v: np.ndarray
    weights: np.ndarray  # (M, B, h, n, n)
    heads: np.ndarray  # (M, B, h, n, d_k)


@dataclass(frozen=True)
class Forward:
    """A forward pass of ``M`` models on ``B`` sequences each."""

    one_hot: np.ndarray  # (M, B, n, vocab) the input tokens
    layers: tuple[LayerPass, ...]
    final: np.ndarray  # (M, B, n, d) the last residual state
    logits: np.ndarray  # (M, B, n, vocab)


def forward(params: Params, tokens: np.ndarray, shape: Shape) -> Forward:
    """Run every model on its own sequences ``tokens (M, B, n)``.

    ```python
    import numpy as np
    from mha.experiments.induction_training import Shape, forward, init_params

    tokens = np.zeros((2, 3, 23), dtype=int)
    assert forward(init_params(Shape(1, 2), [0, 1]), tokens, Shape(1, 2)).logits.shape == (
        2, 3, 23, 12
    )
    ```
    """
    dtype = params["embed"].dtype
    n = tokens.shape[-1]
    one_hot = (tokens[..., None] == np.arange(VOCAB)).astype(dtype)
    x = _apply(one_hot, params["embed"]) + params["position"][:, None, :n]
    mask = causal_mask(n)
    passes = []
    for layer in range(shape.n_layers):
        q, k, v = (
            split_heads(_apply(x, params[f"{w}{layer}"]), shape.n_heads)
            for w in ("w_q", "w_k", "w_v")
        )
        heads, weights = attend(q, k, v, mask)
        passes.append(LayerPass(x, q, k, v, weights, heads))
        x = x + _apply(merge_heads(heads), params[f"w_o{layer}"])
    return Forward(one_hot, tuple(passes), x, _apply(x, params["unembed"]))


def _apply(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x (M, B, n, a) @ w (M, a, b)`` per model, as one product per model."""
    m, b, n, _ = x.shape
    return (x.reshape(m, b * n, -1) @ w).reshape(m, b, n, -1)


def loss_and_grads(
    params: Params, tokens: np.ndarray, targets: np.ndarray, shape: Shape
) -> tuple[np.ndarray, Params]:
    """Mean cross-entropy over the scored positions of each model ``(M,)``, and gradients.

    ``tokens, targets (M, B, n)``; a target of -1 is not scored.

    ```python
    import numpy as np
    from mha.experiments.induction import sample
    from mha.experiments.induction_training import Shape, init_params, loss_and_grads

    batch = sample(8)
    loss, grads = loss_and_grads(
        init_params(Shape(2, 1), [0]), batch.tokens[None], batch.targets[None], Shape(2, 1)
    )
    assert loss.shape == (1,) and grads["w_k1"].shape == (1, 32, 16)
    ```
    """
    fwd = forward(params, tokens, shape)
    dtype = fwd.logits.dtype.type
    scored = targets >= 0  # (M, B, n)
    count = scored.sum(axis=(1, 2)).astype(dtype)[:, None, None, None]  # (M, 1, 1, 1)
    log_probs = _log_softmax(fwd.logits)
    hot = (targets[..., None] == np.arange(VOCAB)) & scored[..., None]
    loss = -(log_probs * hot).sum(axis=(1, 2, 3)) / count[:, 0, 0, 0]
    d_logits = (np.exp(log_probs) * scored[..., None] - hot) / count

    def flat(a: np.ndarray) -> np.ndarray:  # (M, B, n, c) -> (M, B*n, c)
        return a.reshape(a.shape[0], -1, a.shape[-1])

    grads = {"unembed": _t(flat(fwd.final)) @ flat(d_logits)}
    d_x = _apply(d_logits, _t(params["unembed"]))
    for layer in reversed(range(shape.n_layers)):
        p = fwd.layers[layer]
        w_o = params[f"w_o{layer}"]
        grads[f"w_o{layer}"] = _t(flat(merge_heads(p.heads))) @ flat(d_x)
        d_heads = split_heads(_apply(d_x, _t(w_o)), shape.n_heads)
        # heads = A v, A = softmax(S), S = q kᵀ / √d_k: Σ_j A_ij dA_ij = d_heads_i · heads_i
        d_a = d_heads @ _t(p.v)
        d_v = _t(p.weights) @ d_heads
        d_s = p.weights * (d_a - (d_heads * p.heads).sum(axis=-1, keepdims=True))
        scale = dtype(1 / np.sqrt(D_K))
        d_q = d_s @ p.k * scale
        d_k = _t(d_s) @ p.q * scale
        for name, d in (("w_q", d_q), ("w_k", d_k), ("w_v", d_v)):
            merged = merge_heads(d)
            grads[f"{name}{layer}"] = _t(flat(p.x)) @ flat(merged)
            d_x = d_x + _apply(merged, _t(params[f"{name}{layer}"]))
    grads["embed"] = _t(flat(fwd.one_hot)) @ flat(d_x)
    grads["position"] = d_x.sum(axis=1)
    return loss, grads


def _t(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def predict(params: Params, tokens: np.ndarray, shape: Shape) -> np.ndarray:
    """Each model's predicted token at every position of ``tokens (B, n)``: ``(M, B, n)``.

    ```python
    from mha.experiments.induction import sample
    from mha.experiments.induction_training import Shape, init_params, predict

    assert predict(init_params(Shape(1, 2), [0, 1]), sample(4).tokens, Shape(1, 2)).shape == (
        2, 4, 23
    )
    ```
    """
    models = params["embed"].shape[0]
    tokens = np.broadcast_to(tokens, (models, *np.shape(tokens)))
    return forward(params, tokens, shape).logits.argmax(axis=-1)


@dataclass(frozen=True)
class Training:
    """The trained weights of ``M`` models and how their loss fell."""

    shape: Shape
    params: Params
    losses: np.ndarray  # (steps, M) on each step's fresh batch, before the update

    def accuracy(self, batch: Batch) -> np.ndarray:
        """``(M,)``: each model's accuracy on the scored positions of ``batch``."""
        right = predict(self.params, batch.tokens, self.shape) == batch.targets
        return right[:, batch.scored].mean(axis=-1)


def train(
    shape: Shape,
    seeds: Sequence[int],
    steps: int,
    batch_size: int,
    learning_rate: float = LEARNING_RATE,
) -> Training:
    """Train one model per seed (its initial weights and its stream of batches).

    Adam's step size falls linearly from ``learning_rate`` to zero over the run.

    ```python
    from mha.experiments.induction_training import Shape, train

    run = train(Shape(1, 2), seeds=[3], steps=30, batch_size=16)
    assert run.losses[-5:].mean() < run.losses[:5].mean()
    ```
    """
    steps = positive_int("steps", steps)
    batch_size = positive_int("batch_size", batch_size)
    if not seeds:
        raise ValueError("seeds: expected at least one seed, got none")
    params = init_params(shape, seeds)
    adam = Adam(params, [learning_rate] * len(seeds))
    batches = [sample(steps * batch_size, np.random.default_rng([s, 3])) for s in seeds]
    tokens = np.stack([b.tokens for b in batches])  # (M, steps*B, n)
    targets = np.stack([b.targets for b in batches])
    losses = np.empty((steps, len(seeds)))
    peak = adam.lr.copy()
    for step in range(steps):
        rows = slice(step * batch_size, (step + 1) * batch_size)
        losses[step], grads = loss_and_grads(
            params, tokens[:, rows], targets[:, rows], shape
        )
        adam.lr = peak * (1 - step / steps)  # linear decay: late steps do not undo
        adam.step(params, grads)
    return Training(shape, params, losses)


@dataclass(frozen=True)
class Trained:
    """How ``shape``'s models, one per seed, do after training."""

    shape: Shape
    accuracy: np.ndarray  # (seeds,) on the scored positions of the test batch
    final_loss: np.ndarray  # (seeds,) mean training loss over the last tenth


def train_and_score(
    shape: Shape, seeds: Sequence[int], steps: int, batch_size: int, test: Batch
) -> Trained:
    """``train`` every seed, then score each model on ``test`` (what a page caches).

    ```python
    from mha.experiments.induction import sample
    from mha.experiments.induction_training import Shape, train_and_score

    result = train_and_score(Shape(2, 1), [0, 1], 10, 4, sample(20))
    assert result.accuracy.shape == result.final_loss.shape == (2,)
    ```
    """
    run = train(shape, seeds, steps, batch_size)
    tail = run.losses[-max(1, steps // 10) :].mean(axis=0)
    return Trained(shape, run.accuracy(test), tail)
