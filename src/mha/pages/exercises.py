"""The "Recall and exercises" page, ``docs/exercises.md``: the recall answers.

``page()`` computes what the recall answers print. The exercises' checkers are the
library's, ``mha.checkers``: they import NumPy and the core only.
"""

from __future__ import annotations

import functools

import numpy as np

from mha.accounting import (
    LayerMultiplyAdds,
    kv_cache_bytes,
    layer_multiply_adds,
    param_count,
    score_flops,
    score_multiply_adds,
)
from mha.attention import causal_mask, scaled_dot_product_attention, softmax
from mha.data import published
from mha.heads import split_heads
from mha.layer import MultiHeadAttention
from mha.pages import circuits, fast_attention
from mha.positions import sinusoidal
from mha.rope import RotaryEmbedding
from mha.support.page import Fact, Page
from mha.worked import cricket
from mha.worked.cricket import Cricket


@functools.cache
def page() -> Page:
    """What the recall answers print: every number computed by the core."""
    d, h = cricket.Q_HIS.shape[0], 4  # question 1: the cricket example with 4 heads
    q = split_heads(cricket.Q_HIS[None], h)  # (4, 1, 1): each head sees one dimension
    k, v = split_heads(cricket.K, h), split_heads(cricket.V, h)  # (4, 3, 1)
    weights = scaled_dot_product_attention(q, k, v)[1][:, 0]  # (heads, keys)
    four = {"d_model": d, "n_heads": h, "d_k": d // h, "weights": weights}
    four |= {"scale": np.sqrt(d // h), "two_head_scale": np.sqrt(d // 2)}
    b = published.model("BERT-base")  # question 2, also counted from a layer's arrays
    bert = {"d_model": b.d_model, "n_heads": b.n_heads, "d_k": b.d_k}
    bert |= {"params": param_count(b.d_model, b.n_heads), "d_squared": b.d_model**2}
    bert |= {"params_from_arrays": MultiHeadAttention(b.d_model, b.n_heads).param_count}
    bert["four_d_squared"] = 4 * b.d_model**2
    before, after = cricket.solve(), cricket.solve(v=cricket.V_TRIPLED)  # question 3
    voita = published.VOITA_2019  # question 5
    pruned = published.model(voita.model)
    per_head = 4 * pruned.d_model * pruned.d_k  # columns of W_Q, W_K, W_V, rows of W_O
    total = pruned.n_layers * param_count(pruned.d_model, pruned.n_heads)
    pruning = {"result": voita, "d_model": pruned.d_model, "d_k": pruned.d_k}
    pruning |= {"per_head": per_head, "pruned": per_head * voita.heads_pruned}
    pruning |= {"total": total, "pruned_share": per_head * voita.heads_pruned / total}
    pruning["kept_heads"] = voita.heads_total - voita.heads_pruned
    n, width, heads = cricket.COST_N, cricket.COST_D_MODEL, cricket.COST_HEADS  # q. 6
    cost = {"n": n, "d_model": width, "n_heads": heads, "d_k": width // heads}
    cost["per_head"] = n * n * (width // heads)
    for key, n_heads in (("one_head", 1), ("many_heads", heads)):
        cost[key] = score_multiply_adds(n, width, n_heads)
        cost[f"{key}_flops"] = score_flops(n, width, n_heads)
    fast = fast_attention.page()  # the tiled question, at the fast page's largest n
    row, block, size = fast.memory[-1], fast.tile, fast.itemsize
    online = {
        "n": row["n"],
        "block": block,
        "d_k": fast.d_k,
        "blocks": (row["n"] // block) ** 2,
    }
    online |= {"scores_bytes": row["n"] ** 2 * size, "block_bytes": block**2 * size}
    online |= {"naive_mb": row["naive_mb"], "tiled_mb": row["tiled_mb"]}
    online["dense_arrays"] = fast.dense_arrays
    s = circuits.page().s  # the keys question: the induction head, patched or not
    keys = {
        "receiver": "L{}H{}".format(*s.top[0]),
        "sender": "L{}H{}".format(*s.previous),
    }
    keys |= {
        "clean": float(s.sequences.clean[0]),
        "patched": float(s.sequences.patched[0]),
    }
    keys["control"] = float(np.nanmean(s.sequences.controls[0]))
    rope_shift, more = _rope_shift(), _more_recall()
    return Page(
        online=online,
        tokens=cricket.TOKENS,
        four_heads=four,
        flat=[i for i, row in enumerate(weights) if np.allclose(row, row[0])],
        bert=bert,
        example=before,
        tripled=after,
        moved=np.flatnonzero(~np.isclose(before.full.output, after.full.output)),
        variance=_score_variance(),
        pruning=pruning,
        cost=cost,
        rope_shift=rope_shift,
        keys=keys,
        **more,
        facts=_facts(weights, bert, cost, before, after)
        | _rope_facts(rope_shift)
        | _recall_facts(*(more[k] for k in ("masks", "cross", "hull", "kv", "whole"))),
        figures={},
    )


def _score_variance(heads=(1, 8, 64), d_model=512, samples=4000) -> list[dict]:
    """Question 4: the sampled variance of q·k, raw and scaled by 1/√d_k, for q and k
    with independent N(0, 1) entries, at each head width (theory: d_k and 1)."""
    rng, rows = np.random.default_rng(0), []
    for h in heads:
        d_k = d_model // h
        q, k = rng.normal(size=(samples, d_k)), rng.normal(size=(samples, d_k))
        dots = (q * k).sum(axis=1)  # (samples,)
        row = {"n_heads": h, "d_k": d_k, "theory_raw": float(d_k)}  # d_k σ⁴
        rows.append(
            row
            | {"raw": float(dots.var()), "scaled": float((dots / np.sqrt(d_k)).var())}
        )
    return rows


def _rope_shift(m=3, n=10, shift=1_000, d_k=64) -> dict:
    """Question 7: one random q at ``m`` and k at ``n``, scored rotated and with
    sinusoidal vectors added, before and after moving both by ``shift``."""
    q, k = np.random.default_rng(0).standard_normal((2, d_k))
    rope, p = RotaryEmbedding(d_k), sinusoidal(n + shift + 1, d_k)
    out = {"m": m, "n": n, "shift": shift, "d_k": d_k, "base": rope.base}
    out |= {"rope": [], "added": []}
    for s in (0, shift):
        q_m, k_n = rope(np.stack([q, k]), np.array([m, n]) + s)
        out["rope"].append(float(q_m @ k_n))
        out["added"].append(float((q + p[m + s]) @ (k + p[n + s])))
    return out | {"rope_change": abs(out["rope"][1] - out["rope"][0])}


def _rope_facts(question: dict) -> dict[str, Fact]:
    """The RoPE answer's facts: the rotated score stays, the added one moves."""
    rope, added = question["rope"], question["added"]
    return {
        "rope_stays": Fact(
            np.isclose(rope[0], rope[1], rtol=0, atol=1e-9),
            f"{rope}",
            says="the rotated score before and after moving both positions differs by at most 1e-9",
        ),
        "added_moves": Fact(
            abs(added[0] - added[1]) > 0.1,
            f"{added}",
            says="the score with added position vectors moves by more than 0.1 when both positions move",
        ),
    }


def _more_recall() -> dict[str, dict]:
    """The answers on masks, cross-attention, the FFN, depth, the KV cache and the
    whole layer's cost, each computed by the core."""
    rng = np.random.default_rng(0)
    n, d_k = 4, 3  # masks: a causal head over four tokens
    q, k, v = (rng.normal(size=(n, d_k)) for _ in range(3))
    out, _ = scaled_dot_product_attention(q, k, v, causal_mask(n))
    masks = {"n": n, "kept": int(causal_mask(n).sum()), "scores": n * n}
    masks |= {"first": out[0], "v_first": v[0]}
    layer = MultiHeadAttention(8, 4, rng=rng)  # cross: 3 decoder tokens, 5 encoder
    x, memory = rng.normal(size=(3, 8)), rng.normal(size=(5, 8))
    cross = {"d_model": 8, "n_heads": 4, "n": 3, "m": 5}
    cross["weights"] = layer(x, kv=memory)[1]
    values = rng.normal(size=(6, 4))  # the FFN: one head's outputs against its values
    mixed = softmax(rng.normal(size=(6, 6)) * 3) @ values
    within = (mixed >= values.min(axis=0)) & (mixed <= values.max(axis=0))
    hull = {"tokens": 6, "d_k": 4, "checks": mixed.size, "within": int(within.sum())}
    smol = published.decoder("SmolLM2-135M")  # depth: who can read whom
    pairs = smol.n_heads**2 * smol.n_layers * (smol.n_layers - 1) // 2
    depth = {"model": smol.name, "n_layers": smol.n_layers, "n_heads": smol.n_heads}
    depth["pairs"] = pairs
    kv = {}  # the KV cache: float16, batch 1, each model's published context
    for key, name in (("big", "Llama-2 7B"), ("small", "Llama-2 70B")):
        c = published.decoder(name)
        per_layer = kv_cache_bytes(1, c.n_kv_heads, c.head_dim, c.max_context, 2)
        kv[key] = {"config": c, "bytes": per_layer * c.n_layers}
    kv["ratio"] = kv["big"]["bytes"] / kv["small"]["bytes"]
    base = published.model("Transformer base")  # the whole layer, the count table's n
    whole = layer_multiply_adds(cricket.COST_N, base.d_model, base.n_heads)
    return dict(masks=masks, cross=cross, hull=hull, depth=depth, kv=kv, whole=whole)


def _recall_facts(
    masks: dict, cross: dict, hull: dict, kv: dict, whole: LayerMultiplyAdds
) -> dict[str, Fact]:
    """The facts of the answers on masks, cross-attention, the FFN, the cache and the
    whole layer's cost.
    """
    w = cross["weights"]
    return {
        "first_copies": Fact(
            np.allclose(masks["first"], masks["v_first"]),
            f"out[0] {masks['first']}, v[0] {masks['v_first']}",
            says="under a causal mask, the first token's output equals its own value vector",
        ),
        "rows_over_memory": Fact(
            w.shape[-1] == cross["m"] and np.allclose(w.sum(axis=-1), 1),
            f"weights {w.shape}, row sums {w.sum(axis=-1).round(6).tolist()}",
            says="cross-attention's weights have one column per encoder token and every row sums to one",
        ),
        "all_within": Fact(
            hull["within"] == hull["checks"],
            f"{hull['within']} of {hull['checks']}",
            says="every checked output coordinate lies between its values' smallest and largest",
        ),
        "gqa_smaller": Fact(
            kv["small"]["bytes"] < kv["big"]["bytes"]
            and kv["small"]["config"].params > kv["big"]["config"].params,
            f"{kv['small']['bytes']} vs {kv['big']['bytes']} bytes",
            says="the model with more parameters but fewer K/V heads has the smaller cache",
        ),
        "projections_more": Fact(
            whole.projections > whole.attention,
            f"projections {whole.projections}, scores and sum {whole.attention}",
            says="the whole layer's projections cost more multiply-adds than its scores and weighted sum",
        ),
    }


def _facts(
    weights: np.ndarray, bert: dict, cost: dict, before: Cricket, after: Cricket
) -> dict[str, Fact]:
    """The facts the recall answers state: the flat head, the counts, the tripling."""
    flat = [i for i, row in enumerate(weights) if np.allclose(row, row[0])]
    moved = np.flatnonzero(~np.isclose(before.full.output, after.full.output))
    tripled = cricket.tripling_facts(before, after)  # the cricket page states them too
    return {
        "flat_head": Fact(
            len(flat) == 1 and cricket.Q_HIS[flat[0]] == 0,
            f"weights of 'his' per head: {np.round(weights, 3).tolist()}",
            says="exactly one head spreads the weight of his evenly, the one whose query coordinate is zero",
        ),
        "bert_same": Fact(
            bert["params"] == bert["params_from_arrays"] == bert["four_d_squared"],
            f"{bert['params']}, {bert['params_from_arrays']}, {bert['four_d_squared']}",
            says="param_count, the real layer's arrays and 4 d_model^2 give the same number for BERT-base",
        ),
        "flops_same": Fact(
            cost["one_head"] == cost["many_heads"],
            f"{cost['one_head']} vs {cost['many_heads']}",
            says="one head and h heads cost the same multiply-adds for the scores",
        ),
        "no_weight_changes": tripled["no_weight_moves"],
        "head_a_still": tripled["a_unmoved"],
        "head_b_triples": tripled["b_tripled"],
        "single_moves": Fact(
            len(moved) == 1,
            f"coordinates that move: {moved.tolist()}",
            says="tripling v(century) moves exactly one coordinate of the single head's output",
        ),
    }
