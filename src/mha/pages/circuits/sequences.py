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

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mha.attention import attend, causal_mask
from mha.experiments.repeated_tokens import Passes, induction_scores
from mha.experiments.value_norms import value_norms, weighted_by_norm
from mha.heads import merge_heads, repeat_kv, split_heads
from mha.layer import MultiHeadAttention
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


def _second_copy_losses(
    model: smollm2.SmolLM2, final: np.ndarray, ids: np.ndarray
) -> np.ndarray:
    """Each sequence's mean next-token loss (nats) on the second copy, ``(B,)``, from
    the last streams ``final (B, 2T, d_model)`` of sequences ``ids (B, 2T)`` (T tokens,
    then again).
    """
    half = ids.shape[1] // 2
    queries = np.arange(half, 2 * half - 1)
    rows = final[:, queries]  # (B, T - 1, d_model)
    # the head as one product over every sequence's rows: one per sequence reads
    # the whole 49152-token head each time (measured: 1.5 times the CPU)
    logits = model.head(rows.reshape(-1, rows.shape[-1])).reshape(*rows.shape[:2], -1)
    return np.array(
        [
            np.log(smollm2.perplexity_of(scores, row[queries + 1]))
            for scores, row in zip(logits, ids, strict=True)
        ]
    )


def _writes(
    model: smollm2.SmolLM2, p: _Pass | _Prefix, heads: Sequence[_Head]
) -> np.ndarray:
    """The sum of ``heads``' own writes to the stream, ``(B, n, d_model)``: one
    product per layer, over its chosen heads side by side."""
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        by_layer.setdefault(layer, []).append(head)
    total = 0.0
    for layer, chosen in sorted(by_layer.items()):
        a = model.blocks[layer].attention
        out = p.outputs[layer][:, chosen]  # (B, k, n, d_k)
        w_o = a.w_o.reshape(a.n_heads, a.d_k, -1)[chosen].reshape(-1, a.w_o.shape[1])
        total = total + merge_heads(out) @ w_o
    return total


def _mean_ablated_loss(
    model: smollm2.SmolLM2, p: _Pass, heads: Sequence[_Head]
) -> float:
    """The second copy's loss with each of ``heads`` writing its mean write instead of
    its own, resuming ``p`` at the first layer that changes (mean over sequences).
    """
    return float(_mean_ablated_final(model, p, heads)[1].mean())


def _mean_ablated_final(
    model: smollm2.SmolLM2, p: _Pass, heads: Sequence[_Head]
) -> tuple[np.ndarray, np.ndarray]:
    """The last stream with ``heads`` mean-ablated, and its second-copy losses."""
    start = min(layer for layer, _ in heads)
    replace = {(layer, head): p.mean_writes[layer, head] for layer, head in heads}
    causal = causal_mask(p.ids.shape[1])
    final = model.resume(p.entering[start], start, causal, replace=replace)
    return final, _second_copy_losses(model, final, p.ids)


def _path_patched_losses(
    model: smollm2.SmolLM2, p: _Pass, heads: Sequence[_Head]
) -> np.ndarray:
    """Second-copy losses ``(4, B)`` (nats, each sequence) of the unchanged model, of
    ``heads`` mean-ablated on every path, on the direct path to the logits only, and
    on the paths through later layers only.

    Every path: the heads write their mean, and the layers above read it
    (``resume``). Direct only: the unchanged last stream, with each head's own write
    swapped for its mean there and nowhere else (the later layers see the heads as
    they were). Later layers only: the every-path stream with the heads' own writes
    put back into it at the end (only the later layers saw the mean). One resumed
    pass in all.
    """
    own = _writes(model, p, heads)
    mean = sum(p.mean_writes[layer, head] for layer, head in heads)
    final, total = _mean_ablated_final(model, p, heads)
    clean = _second_copy_losses(model, p.entering[-1], p.ids)
    direct = _second_copy_losses(model, p.entering[-1] - own + mean, p.ids)
    later = _second_copy_losses(model, final + own - mean, p.ids)
    return np.stack([clean, total, direct, later])


@dataclass(frozen=True)
class _Prefix:
    """The unchanged model on ``ids (B, n)`` up to a layer: each block's input and
    each head's output before W_O, what patching into keys reads (``Pass`` holds the
    same, for every layer)."""

    ids: np.ndarray
    entering: np.ndarray  # (layers + 1, B, n, d_model), as far as it was run
    outputs: np.ndarray  # (layers, B, h, n, d_k), as far as it was run


def _prefix(model: smollm2.SmolLM2, ids: np.ndarray, layers: int) -> _Prefix:
    """The first ``layers`` blocks over every row of ``ids (B, n)`` at once (one
    batched pass, causal), keeping what ``patched_induction`` reads.
    """
    ids = np.asarray(ids)
    if ids.ndim != 2 or not 0 < layers <= model.config.n_layers:
        raise ValueError(
            f"ids, layers: expected ids (B, n) and 0 < layers <= "
            f"{model.config.n_layers}, got {ids.shape} and {layers}"
        )
    x = np.ascontiguousarray(model.embedding[:, ids].transpose(1, 2, 0))
    causal = causal_mask(ids.shape[1])
    entering, outputs = [x], []
    for block in model.blocks[:layers]:
        a = block.attention
        normed = rms_norm(x, block.attention_norm, block.eps)
        attended, w = a(normed, mask=causal)
        v = split_heads(normed @ a.w_v, a.n_kv_heads)
        outputs.append(w @ repeat_kv(v, a.n_heads // a.n_kv_heads))
        x = x + attended
        x = x + block.feed_forward(x.reshape(-1, x.shape[-1])).reshape(x.shape)
        entering.append(x)
    return _Prefix(ids=ids, entering=np.stack(entering), outputs=np.stack(outputs))


def _patched_induction(
    model: smollm2.SmolLM2,
    p: _Pass | _Prefix,
    receivers: Sequence[_Head],
    sender_sets: Sequence[Sequence[_Head]],
) -> np.ndarray:
    """Each receiver's induction score on each sequence, ``(sets, receivers, B)``,
    when its keys are recomputed from a stream in which every sender of a set wrote
    what it wrote on the next sequence (the last borrows from the first): the senders
    of a set are patched together; an empty set patches nothing (the clean score).

    A sender can only reach a receiver of a later layer: the senders of a set at or
    above a receiver's layer are left out for it, and a receiver that none of the set
    reaches scores NaN. Only the keys change: the queries and values are the
    unchanged pass's, and no other layer is rerun (the direct path from sender to
    keys). The senders' write is their outputs (kept by ``run`` or ``prefix``)
    through their rows of W_O, then one key projection per set and receiver.
    """
    n = p.ids.shape[1]
    causal = causal_mask(n)
    swaps: dict[tuple[_Head, ...], np.ndarray] = {}

    def swap(senders: tuple[_Head, ...]) -> np.ndarray:
        """What patching ``senders`` together adds to the stream: (B, n, d_model)."""
        if senders not in swaps:
            written = _writes(model, p, senders)
            swaps[senders] = np.roll(written, -1, axis=0) - written
        return swaps[senders]

    scores = np.full((len(sender_sets), len(receivers), p.ids.shape[0]), np.nan)
    for r, (layer, head) in enumerate(receivers):
        block = model.blocks[layer]
        a = block.attention
        d_k, kv = a.d_k, head // (a.n_heads // a.n_kv_heads)
        x = p.entering[layer]  # (B, n, d_model)
        w_k = a.w_k[:, kv * d_k : (kv + 1) * d_k]
        normed = rms_norm(x, block.attention_norm, block.eps)
        q = a.rope.from_position(normed @ a.w_q[:, head * d_k : (head + 1) * d_k], 0)
        for i, senders in enumerate(sender_sets):
            reaching = [s for s in senders if s[0] < layer]
            if senders and not reaching:
                continue
            changed = x + swap(tuple(reaching)) if reaching else x
            keys = rms_norm(changed, block.attention_norm, block.eps) @ w_k
            _, weights = attend(q, a.rope.from_position(keys, 0), keys, causal)
            scores[i, r] = induction_scores(weights.astype(np.float64), n // 2)
    return scores


class _FirstValues(MultiHeadAttention):
    """An attention layer whose first token's values are replaced in every head: by
    zero, or by their mean over the batch's sequences (what is common to them)."""

    mean: bool

    @classmethod
    def of(cls, attention: MultiHeadAttention, mean: bool) -> _FirstValues:
        """A copy of ``attention`` (the same weights, shared) that replaces them."""
        changed = copy.copy(attention)
        changed.__class__ = cls
        changed.mean = mean
        return changed

    def _project(
        self, x: np.ndarray, kv: np.ndarray, start: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        q, k, v = super()._project(x, kv, start)
        v = v.copy()
        v[..., 0, :] = v[..., 0, :].mean(axis=0) if self.mean else 0
        return q, k, v


def _first_value_losses(model: smollm2.SmolLM2, ids: np.ndarray) -> np.ndarray:
    """Second-copy losses ``(2, B)`` (nats) of sequences ``ids (B, 2T)`` with the first
    token's values zeroed in every layer, then replaced by their mean over the
    sequences: one batched pass each.
    """
    ids = np.asarray(ids)
    x = np.ascontiguousarray(model.embedding[:, ids].transpose(1, 2, 0))
    causal = causal_mask(ids.shape[1])
    losses = []
    for mean in (False, True):
        changed = model.map_attention(lambda a, mean=mean: _FirstValues.of(a, mean))
        losses.append(_second_copy_losses(model, changed.resume(x, 0, causal), ids))
    return np.stack(losses)
