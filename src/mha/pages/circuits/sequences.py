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
from mha.heads import merge_heads, repeat_kv, split_heads
from mha.layer import MultiHeadAttention
from mha.pages.depth.repeated_tokens import Passes, induction_scores
from mha.pretrained import smollm2
from mha.pretrained.smollm2 import rms_norm

Head = tuple[int, int]


@dataclass(frozen=True)
class Pass:
    """The unchanged model on a batch of sequences ``ids (B, n)``."""

    ids: np.ndarray
    entering: np.ndarray  # (layers + 1, B, n, d_model): each block's input, then last
    outputs: np.ndarray  # (layers, B, h, n, d_k): each head's output before W_O
    first_token: np.ndarray  # (layers,) mean weight of queries t >= 1 on token 0
    first_token_moved: np.ndarray  # (layers,) ... weighted by |f(v)| (what moves)
    dla: np.ndarray  # (layers, heads) direct logit attribution, second copy
    mean_writes: np.ndarray  # (layers, heads, d_model) over every sequence and token


def run(model: smollm2.SmolLM2, passes: Passes) -> Pass:
    """What the page reads from ``passes`` over sequences ``(B, 2T)`` of T tokens
    repeated once (``repeated_tokens.traced``), with no further forward pass.

    A head's direct logit attribution at query t of the second copy is its write
    through the final norm's gain and 1/RMS of the last stream, onto the output
    direction of the next token (the repeated one) minus the mean over the vocabulary.

    ```python
    import numpy as np
    from mha.pages.circuits.sequences import run
    from mha.pages.depth.repeated_tokens import repeated_sequences, traced
    from mha.pretrained import smollm2

    model = smollm2.load()
    ids = np.tile(repeated_sequences(model)[:1, :4], 2)  # 4 tokens, then the same 4
    p = run(model, traced(ids))
    assert p.outputs.shape == (30, 1, 9, 8, 64) and p.dla.shape == (30, 9)
    assert ((p.first_token_moved > 0) & (p.first_token_moved < 1)).all()
    ```
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
    return Pass(
        ids=ids,
        entering=entering,
        outputs=outputs,
        first_token=np.array(first, dtype=np.float64),
        first_token_moved=np.array(moved, dtype=np.float64),
        dla=np.array(dla, dtype=np.float64),
        mean_writes=np.stack(mean_writes),
    )


def second_copy_losses(
    model: smollm2.SmolLM2, final: np.ndarray, ids: np.ndarray
) -> np.ndarray:
    """Each sequence's mean next-token loss (nats) on the second copy, ``(B,)``, from
    the last streams ``final (B, 2T, d_model)`` of sequences ``ids (B, 2T)`` (T tokens,
    then again).

    ```python
    import numpy as np
    from mha.pages.circuits.sequences import second_copy_losses
    from mha.pretrained import smollm2

    model = smollm2.load()
    ids = np.array([[504, 2365, 28, 905] * 2])  # 4 tokens, then the same 4
    final = model.trace(ids[0]).stream[-1][None]
    logits = model.head(final[0])[4:7]  # the second copy's first 3 queries
    expected = np.log(smollm2.perplexity_of(logits, ids[0, 5:]))
    assert np.isclose(second_copy_losses(model, final, ids)[0], expected)
    ```
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
    model: smollm2.SmolLM2, p: Pass | Prefix, heads: Sequence[Head]
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


def mean_ablated_loss(model: smollm2.SmolLM2, p: Pass, heads: Sequence[Head]) -> float:
    """The second copy's loss with each of ``heads`` writing its mean write instead of
    its own, resuming ``p`` at the first layer that changes (mean over sequences).

    ```python
    import numpy as np
    from mha.attention import causal_mask
    from mha.pages.circuits.sequences import mean_ablated_loss, run, second_copy_losses
    from mha.pages.depth.repeated_tokens import repeated_sequences, traced
    from mha.pretrained import smollm2
    from mha.pretrained.smollm2 import rms_norm

    model = smollm2.load()
    p = run(model, traced(np.tile(repeated_sequences(model)[:1, :4], 2)))
    block, keep = model.blocks[29], np.ones(9)
    keep[0] = 0  # the last layer by hand: L29H0 removed, its mean write added
    normed = rms_norm(p.entering[29], block.attention_norm, block.eps)
    x = p.entering[29] + block.attention(normed, causal_mask(8), keep)[0]
    x = x + p.mean_writes[29, 0]
    expected = second_copy_losses(model, x + block.feed_forward(x), p.ids)[0]
    assert abs(mean_ablated_loss(model, p, [(29, 0)]) - expected) < 1e-3
    ```
    """
    return float(_mean_ablated_final(model, p, heads)[1].mean())


def _mean_ablated_final(
    model: smollm2.SmolLM2, p: Pass, heads: Sequence[Head]
) -> tuple[np.ndarray, np.ndarray]:
    """The last stream with ``heads`` mean-ablated, and its second-copy losses."""
    start = min(layer for layer, _ in heads)
    replace = {(layer, head): p.mean_writes[layer, head] for layer, head in heads}
    causal = causal_mask(p.ids.shape[1])
    final = model.resume(p.entering[start], start, causal, replace=replace)
    return final, second_copy_losses(model, final, p.ids)


def path_patched_losses(
    model: smollm2.SmolLM2, p: Pass, heads: Sequence[Head]
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

    ```python
    import numpy as np
    from mha.pages.circuits.sequences import mean_ablated_loss, path_patched_losses, run
    from mha.pages.depth.repeated_tokens import repeated_sequences, traced
    from mha.pretrained import smollm2

    model = smollm2.load()
    p = run(model, traced(np.tile(repeated_sequences(model)[:1, :4], 2)))
    clean, total, direct, later = path_patched_losses(model, p, [(29, 0)])
    assert np.isclose(total[0], mean_ablated_loss(model, p, [(29, 0)]))
    ```
    """
    own = _writes(model, p, heads)
    mean = sum(p.mean_writes[layer, head] for layer, head in heads)
    final, total = _mean_ablated_final(model, p, heads)
    clean = second_copy_losses(model, p.entering[-1], p.ids)
    direct = second_copy_losses(model, p.entering[-1] - own + mean, p.ids)
    later = second_copy_losses(model, final + own - mean, p.ids)
    return np.stack([clean, total, direct, later])


@dataclass(frozen=True)
class Prefix:
    """The unchanged model on ``ids (B, n)`` up to a layer: each block's input and
    each head's output before W_O, what patching into keys reads (``Pass`` holds the
    same, for every layer)."""

    ids: np.ndarray
    entering: np.ndarray  # (layers + 1, B, n, d_model), as far as it was run
    outputs: np.ndarray  # (layers, B, h, n, d_k), as far as it was run


def prefix(model: smollm2.SmolLM2, ids: np.ndarray, layers: int) -> Prefix:
    """The first ``layers`` blocks over every row of ``ids (B, n)`` at once (one
    batched pass, causal), keeping what ``patched_induction`` reads.

    ```python
    import numpy as np
    from mha.pages.circuits.sequences import prefix
    from mha.pretrained import smollm2

    model = smollm2.load()
    p = prefix(model, np.array([[504, 2365, 28]]), 2)
    assert np.allclose(p.entering[:, 0], model.trace([504, 2365, 28]).stream[:3], atol=1e-4)
    ```
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
    return Prefix(ids=ids, entering=np.stack(entering), outputs=np.stack(outputs))


def patched_induction(
    model: smollm2.SmolLM2,
    p: Pass | Prefix,
    receivers: Sequence[Head],
    sender_sets: Sequence[Sequence[Head]],
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

    ```python
    import numpy as np
    from mha.pages.circuits.sequences import patched_induction, run
    from mha.pages.depth.repeated_tokens import induction_scores, repeated_sequences
    from mha.pages.depth.repeated_tokens import traced
    from mha.pretrained import smollm2

    model = smollm2.load()
    ids = np.tile(repeated_sequences(model)[:1, :4], 2)  # 4 tokens, then the same 4
    p = run(model, traced(ids))
    clean, late = patched_induction(model, p, [(18, 6)], [[], [(18, 0)]])
    weights = model.attentions(ids[0])[18, 6]
    assert np.isclose(clean[0, 0], induction_scores(weights, half=4), atol=1e-3)
    assert np.isnan(late).all()  # L18H0 cannot reach a head of its own layer
    ```
    """
    n = p.ids.shape[1]
    causal = causal_mask(n)
    swaps: dict[tuple[Head, ...], np.ndarray] = {}

    def swap(senders: tuple[Head, ...]) -> np.ndarray:
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


class _FirstValues:
    """An attention layer whose first token's values are replaced in every head: by
    zero, or by their mean over the batch's sequences (what is common to them)."""

    def __init__(self, attention: MultiHeadAttention, mean: bool):
        self.attention, self.mean = attention, mean

    def __call__(
        self,
        x: np.ndarray,
        mask: np.ndarray | None = None,
        head_mask: np.ndarray | None = None,
        start: int = 0,
    ) -> tuple[np.ndarray, np.ndarray]:
        a = self.attention
        q, k, v = a._project(x, x, start)
        v = v.copy()
        v[..., 0, :] = v[..., 0, :].mean(axis=0) if self.mean else 0
        return a._attend(q, k, v, mask, head_mask)


def first_value_losses(model: smollm2.SmolLM2, ids: np.ndarray) -> np.ndarray:
    """Second-copy losses ``(2, B)`` (nats) of sequences ``ids (B, 2T)`` with the first
    token's values zeroed in every layer, then replaced by their mean over the
    sequences: one batched pass each.

    ```python
    import numpy as np
    from mha.pages.circuits.sequences import first_value_losses, second_copy_losses
    from mha.pages.depth.repeated_tokens import repeated_sequences
    from mha.pretrained import smollm2

    model = smollm2.load()
    ids = np.tile(repeated_sequences(model)[:1, :4], 2)  # one sequence: its own mean
    zero, mean = first_value_losses(model, ids)
    final = model.resume(model.embed(ids[0]), 0, np.tril(np.ones((8, 8), bool)))
    (clean,) = second_copy_losses(model, final, ids)
    assert np.isclose(mean[0], clean, atol=1e-3) and zero.shape == (1,)
    ```
    """
    ids = np.asarray(ids)
    x = np.ascontiguousarray(model.embedding[:, ids].transpose(1, 2, 0))
    causal = causal_mask(ids.shape[1])
    losses = []
    for mean in (False, True):
        changed = model.map_attention(lambda a, mean=mean: _FirstValues(a, mean))
        losses.append(second_copy_losses(model, changed.resume(x, 0, causal), ids))
    return np.stack(losses)
