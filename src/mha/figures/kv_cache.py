"""Figures of the KV-cache page: which K/V head each query head reads, cache size
against context, and what fits in memory."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator

from mha.figures.style import INK, PALETTE, SMALL, new_figure


def head_sharing(n_heads: int, panels: Sequence[tuple[str, int, list[int]]]) -> Figure:
    """Query heads above, K/V heads below, a line from each query head to the K/V head
    it reads: one panel ``(kind, K/V heads, K/V head of each query head)`` per K/V
    head count, stacked (MHA, GQA, MQA, as in Ainslie et al.'s Figure 2). A panel of
    kind ``"MLA"`` draws its one square as the cached latent, from which every head's
    keys and values are projected.
    """
    fig, axes = new_figure(4.6, 1.7 * len(panels), nrows=len(panels), squeeze=False)
    x_query = np.arange(n_heads, dtype=float)
    for ax, (kind, h_kv, reads) in zip(axes[:, 0], panels, strict=True):
        x_kv = np.array([x_query[np.equal(reads, j)].mean() for j in range(h_kv)])
        for i, j in enumerate(reads):
            ax.plot([x_query[i], x_kv[j]], [1, 0], color=PALETTE[j % 3], lw=1.2)
        ax.scatter(x_query, np.ones(n_heads), s=150, color=PALETTE[4], zorder=3)
        ax.scatter(x_kv, np.zeros(h_kv), s=150, color=PALETTE[1], marker="s", zorder=3)
        for i in range(n_heads):
            ax.text(x_query[i], 1.22, f"Q{i}", ha="center", va="bottom", fontsize=9)
        latent = kind == "MLA"
        for j in range(h_kv):
            label = "latent c (+ position key)" if latent else f"KV{j}"
            ax.text(x_kv[j], -0.22, label, ha="center", va="top", fontsize=9)
        title = f"{kind}: {h_kv} K/V head{'s' if h_kv > 1 else ''}"
        if latent:
            title = "MLA: one cached latent; each head projects its own K and V from it"
        ax.set_title(title, fontsize=10)
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
    name: str,
    layers: int,
    contexts: Sequence[int],
    lines: Sequence[tuple[str, Sequence[float]]],
) -> Figure:
    """Cache of one sequence (GiB, 16-bit) against context: one ``(label, sizes)``
    line per K/V head count.
    """
    fig, ax = new_figure(5.6, 3.4)
    x = np.asarray(contexts, dtype=float)
    markers = ("o", "s", "^", "D", "v")
    for i, (label, gib) in enumerate(lines):
        ax.plot(x, gib, marker=markers[i % len(markers)], color=PALETTE[i], label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(_tokens))
    ax.yaxis.set_major_locator(LogLocator(base=4, numticks=12))
    ax.yaxis.set_major_formatter(FuncFormatter(_gib))
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("KV cache of one sequence (GiB)")
    ax.set_title(f"{name}, 16-bit cache, all {layers} layers", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", labelcolor=INK)
    return fig


def fit_in_memory(bars: Sequence[tuple[str, int, int]], context: int) -> Figure:
    """How many ``context``-token sequences fit beside the weights: two bars a
    ``(label, as published, with full MHA)``.
    """
    labels, published, full = (list(column) for column in zip(*bars, strict=True))
    fig, ax = new_figure(5.2, 0.55 * len(bars) + 1.2)
    y = np.arange(len(bars))
    height = 0.38
    for offset, counts, colour, label in (
        (-height / 2, published, PALETTE[0], "as published"),
        (height / 2, full, PALETTE[1], "with full MHA"),
    ):
        drawn = ax.barh(y + offset, counts, height, color=colour, label=label)
        ax.bar_label(drawn, fmt="{:,.0f}", fontsize=SMALL, padding=2, color=INK)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(1, max(published + full) * 4)
    ax.set_xlabel(f"sequences of {context:,} tokens that fit (log scale)")
    ax.legend(loc="upper right", labelcolor=INK)
    return fig
