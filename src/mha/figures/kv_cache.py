"""Figures of the KV-cache page: which K/V head each query head reads, cache size
against context, and what fits in memory."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator

from mha.data.published import DecoderConfig, decoder
from mha.figures.style import INK, PALETTE, SMALL, new_figure
from mha.pages.kv_cache import (
    GIB,
    attention_kind,
    cache_bytes,
    kv_head_of_query,
    sequences_that_fit,
)


def head_sharing(n_heads: int, kv_heads: Sequence[int]) -> Figure:
    """Query heads above, K/V heads below, a line from each query head to the K/V head
    it reads (``kv_head_of_query``, from ``repeat_kv``): one panel per K/V head count,
    stacked (MHA, GQA, MQA, as in Ainslie et al.'s Figure 2).

    ```python
    from mha.figures.kv_cache import head_sharing

    fig = head_sharing(8, [8, 2, 1])
    assert len(fig.axes) == 3 and len(fig.axes[1].lines) == 8  # one line a query head
    ```
    """
    fig, axes = new_figure(4.6, 1.7 * len(kv_heads), nrows=len(kv_heads), squeeze=False)
    x_query = np.arange(n_heads, dtype=float)
    for ax, h_kv in zip(axes[:, 0], kv_heads, strict=True):
        reads = kv_head_of_query(n_heads, h_kv)
        x_kv = np.array([x_query[np.equal(reads, j)].mean() for j in range(h_kv)])
        for i, j in enumerate(reads):
            ax.plot([x_query[i], x_kv[j]], [1, 0], color=PALETTE[j % 3], lw=1.2)
        ax.scatter(x_query, np.ones(n_heads), s=150, color=PALETTE[4], zorder=3)
        ax.scatter(x_kv, np.zeros(h_kv), s=150, color=PALETTE[1], marker="s", zorder=3)
        for i in range(n_heads):
            ax.text(x_query[i], 1.22, f"Q{i}", ha="center", va="bottom", fontsize=9)
        for j in range(h_kv):
            ax.text(x_kv[j], -0.22, f"KV{j}", ha="center", va="top", fontsize=9)
        kind = attention_kind(n_heads, h_kv)
        ax.set_title(f"{kind}: {h_kv} K/V head{'s' if h_kv > 1 else ''}", fontsize=10)
        ax.set_xlim(-0.6, n_heads - 0.4)
        ax.set_ylim(-0.7, 1.7)
        ax.axis("off")
    fig.subplots_adjust(hspace=0.35)
    return fig


def _tokens(x: float, _pos: int) -> str:
    return f"{x / 1024:g}k" if x >= 1024 else f"{x:g}"


def _gib(y: float, _pos: int) -> str:
    return f"{y:g}" if y >= 1 else f"1/{1 / y:g}"


def cache_vs_context(
    config: DecoderConfig, contexts: Sequence[int], kv_heads: Sequence[int]
) -> Figure:
    """Cache size of one sequence (16-bit) against context, one line per K/V head count.

    ```python
    from mha.figures.kv_cache import cache_vs_context
    from mha.data.published import decoder

    fig = cache_vs_context(decoder("Llama-2 70B"), [512, 4096, 32768], [64, 8, 1])
    assert len(fig.axes[0].lines) == 3
    ```
    """
    fig, ax = new_figure(5.6, 3.4)
    x = np.asarray(contexts, dtype=float)
    markers = ("o", "s", "^", "D", "v")
    for i, h_kv in enumerate(kv_heads):
        gib = [cache_bytes(config, n, n_kv_heads=h_kv) / GIB for n in contexts]
        label = attention_kind(config.n_heads, h_kv) + f" (h_kv = {h_kv})"
        if h_kv == config.n_kv_heads:
            label += ", as published"
        ax.plot(x, gib, marker=markers[i % len(markers)], color=PALETTE[i], label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(_tokens))
    ax.yaxis.set_major_locator(LogLocator(base=4, numticks=12))
    ax.yaxis.set_major_formatter(FuncFormatter(_gib))
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("KV cache of one sequence (GiB)")
    ax.set_title(
        f"{config.name}, 16-bit cache, all {config.n_layers} layers", fontsize=10
    )
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", labelcolor=INK)
    return fig


def fit_in_memory(names: Sequence[str], memory: int, context: int) -> Figure:
    """How many ``context``-token sequences fit in ``memory`` after 16-bit weights.

    Two bars a model: its cache as published, and the same model with full MHA.

    ```python
    from mha.figures.kv_cache import fit_in_memory

    fig = fit_in_memory(["Llama-2 7B", "Falcon-7B"], 80 * 2**30, 4096)
    assert len(fig.axes[0].patches) == 4
    ```
    """
    configs = [decoder(name) for name in names]
    fig, ax = new_figure(5.2, 0.55 * len(configs) + 1.2)
    y = np.arange(len(configs))
    height = 0.38
    published = [sequences_that_fit(c, memory, context) for c in configs]
    full = [
        sequences_that_fit(c, memory, context, n_kv_heads=c.n_heads) for c in configs
    ]
    bars = ax.barh(
        y - height / 2, published, height, color=PALETTE[0], label="as published"
    )
    ax.bar_label(bars, fmt="{:,.0f}", fontsize=SMALL, padding=2, color=INK)
    bars = ax.barh(
        y + height / 2, full, height, color=PALETTE[1], label="with full MHA"
    )
    ax.bar_label(bars, fmt="{:,.0f}", fontsize=SMALL, padding=2, color=INK)
    ax.set_yticks(
        y, [f"{c.name} ({attention_kind(c.n_heads, c.n_kv_heads)})" for c in configs]
    )
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(1, max(published + full) * 4)
    ax.set_xlabel(f"sequences of {context:,} tokens that fit (log scale)")
    ax.legend(loc="upper right", labelcolor=INK)
    return fig
