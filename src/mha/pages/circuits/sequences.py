"""The circuits at work: SmolLM2 on the depth page's repeated random sequences.

Nothing here runs the unchanged model again: the depth page's passes over the
``N_SEQUENCES`` sequences (``repeated_tokens.passes``: every layer's input and every
head's attention weights) are read back, and each head's output before W_O is its
weights times its values. From them come each head's direct logit attribution to the
repeated token, each layer's attention on the first token beside what that attention
moves (``mha.experiments.value_norms``), the heads' mean writes, and path patching into
the keys of the induction heads. Ablations resume the pass at the first layer they
change (``SmolLM2.resume``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mha.attention import attend, causal_mask
from mha.experiments.value_norms import value_norms, weighted_by_norm
from mha.heads import repeat_kv, split_heads
from mha.pages.depth.repeated_tokens import Passes, induction_scores
from mha.pretrained import smollm2
from mha.pretrained.smollm2 import rms_norm

_Head = tuple[int, int]


@dataclass(frozen=True)
class _Pass:
    """The unchanged model on a batch of sequences ``ids (B, n)``."""

    ids: np.ndarray
    entering: np.ndarray  # (layers + 1, B, n, d_model): each block's input, then last
    outputs: np.ndarray  # (layers, B, h, n, d_k): each head's output before W_O
    first_token: np.ndarray  # (layers,) mean weight of queries t >= 1 on token 0
    first_token_moved: np.ndarray  # (layers,) ... weighted by |f(v)| (what moves)
    dla: np.ndarray  # (layers, heads) direct logit attribution, second copy
    mean_writes: np.ndarray  # (layers, heads, d_model) over every sequence and token


def _run(model: smollm2.SmolLM2, passes: Passes) -> _Pass:
    """What the page reads from ``passes`` over sequences ``(B, 2T)`` of T tokens
    repeated once (``repeated_tokens.traced``), with no further forward pass.

    A head's direct logit attribution at query t of the second copy is its write
    through the final norm's gain and 1/RMS of the last stream, onto the output
    direction of the next token (the repeated one) minus the mean over the vocabulary.
    """
    ids, entering = passes.ids, passes.stream
    half = ids.shape[1] // 2
    queries = np.arange(half, 2 * half - 1)  # their next token repeats the first copy
    final = entering[-1][:, queries]  # (B, q, d_model)
    scale = 1 / np.sqrt(np.mean(final**2, axis=-1) + model.blocks[0].eps)
    # the next token's output direction minus the vocabulary's mean, through the gain
    target = model.embedding[:, ids[:, queries + 1]].transpose(1, 2, 0)
    target = model.final_norm * (target - model.embedding.mean(axis=1))
    pull = target * (scale / final.shape[0] / len(queries))[..., None]
    # each layer's outputs written in place, not stacked afterwards (a second copy)
    c, (b, n) = model.config, ids.shape
    outputs = np.empty((c.n_layers, b, c.n_heads, n, c.d_k), final.dtype)
    first, moved, dla, mean_writes = [], [], [], []
    for layer, block in enumerate(model.blocks):
        a = block.attention
        normed = rms_norm(entering[layer], block.attention_norm, block.eps)
        w = passes.weights[layer]  # (B, h, n, n)
        v = split_heads(normed @ a.w_v, a.n_kv_heads)
        heads = np.matmul(
            w, repeat_kv(v, a.n_heads // a.n_kv_heads), out=outputs[layer]
        )
        w_o = a.w_o.reshape(a.n_heads, a.d_k, a.d_model)
        shares = weighted_by_norm(w, value_norms(a, normed))
        first.append(w[..., 1:, 0].mean())
        moved.append(shares[..., 1:, 0].mean())
        dla.append(np.einsum("bhqd,bqd->h", heads[:, :, queries] @ w_o, pull))
        mean_writes.append((heads.mean(axis=(0, 2))[:, None] @ w_o)[:, 0])
    return _Pass(
        ids=ids,
        entering=entering,
        outputs=outputs,
        first_token=np.array(first, dtype=np.float64),
        first_token_moved=np.array(moved, dtype=np.float64),
        dla=np.array(dla, dtype=np.float64),
        mean_writes=np.stack(mean_writes),
    )


def _second_copy_loss(
    model: smollm2.SmolLM2, final: np.ndarray, ids: np.ndarray
) -> float:
    """Mean next-token loss (nats) on the second copy, from the last streams
    ``final (B, 2T, d_model)`` of sequences ``ids (B, 2T)`` (T tokens, then again).
    """
    half = ids.shape[1] // 2
    queries = np.arange(half, 2 * half - 1)
    rows = final[:, queries]  # (B, T - 1, d_model)
    # the head as one product over every sequence's rows: one per sequence reads
    # the whole 49152-token head each time (measured: 1.5 times the CPU)
    logits = model.head(rows.reshape(-1, rows.shape[-1])).reshape(*rows.shape[:2], -1)
    losses = [
        np.log(smollm2.perplexity_of(scores, row[queries + 1]))
        for scores, row in zip(logits, ids, strict=True)
    ]
    return float(np.mean(losses))


def _mean_ablated_loss(
    model: smollm2.SmolLM2, p: _Pass, heads: Sequence[_Head]
) -> float:
    """The second copy's loss with each of ``heads`` writing its mean write instead of
    its own, resuming ``p`` at the first layer that changes.
    """
    start = min(layer for layer, _ in heads)
    replace = {(layer, head): p.mean_writes[layer, head] for layer, head in heads}
    causal = causal_mask(p.ids.shape[1])
    final = model.resume(p.entering[start], start, causal, replace=replace)
    return _second_copy_loss(model, final, p.ids)


def _patched_induction(
    model: smollm2.SmolLM2, p: _Pass, receivers: Sequence[_Head], sender: _Head | None
) -> np.ndarray:
    """The induction score of each of ``receivers`` (mean over the sequences) when its
    keys are recomputed from a stream in which ``sender``'s write is the one it made on
    the next sequence (the last borrows from the first); ``None`` patches nothing.

    Only the keys change: the queries and values are the unchanged pass's, and no
    other layer is rerun (the direct path from sender to keys). The sender's write is
    its output (kept by ``run``) through its rows of W_O, then one key projection
    per receiver.
    """
    n = p.ids.shape[1]
    causal = causal_mask(n)
    swap = 0.0
    if sender is not None:
        s_layer, s_head = sender
        if s_layer >= min(layer for layer, _ in receivers):
            raise ValueError(
                f"sender: expected a layer below every receiver's, got {sender} for "
                f"{list(receivers)}"
            )
        a = model.blocks[s_layer].attention
        w_o = a.w_o[s_head * a.d_k : (s_head + 1) * a.d_k]
        written = p.outputs[s_layer][:, s_head] @ w_o  # (B, n, d_model)
        swap = np.roll(written, -1, axis=0) - written  # (B, n, d_model)
    scores = []
    for layer, head in receivers:
        block = model.blocks[layer]
        a = block.attention
        d_k, kv = a.d_k, head // (a.n_heads // a.n_kv_heads)
        x = p.entering[layer]  # (B, n, d_model)
        w_k = a.w_k[:, kv * d_k : (kv + 1) * d_k]
        keys = rms_norm(x + swap, block.attention_norm, block.eps) @ w_k
        normed = rms_norm(x, block.attention_norm, block.eps)
        queries = normed @ a.w_q[:, head * d_k : (head + 1) * d_k]
        q, k = a.rope.from_position(queries, 0), a.rope.from_position(keys, 0)
        _, weights = attend(q, k, k, causal)
        scores.append(induction_scores(weights.astype(np.float64), n // 2).mean())
    return np.array(scores)
