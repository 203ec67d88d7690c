"""Figures of the KV-cache page: which K/V head each query head reads, cache size
against context, and what fits in memory."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, LogLocator

from mha.figures.style import INK, PALETTE, SMALL, new_figure


def head_sharing(
    n_heads: int,
    panels: Sequence[tuple[str, int, list[int]]],
    latent: tuple[int, int],
) -> Figure:
    """Query heads above, K/V heads below, a line from each query head to the K/V head
    it reads: one panel ``(kind, K/V heads, K/V head of each query head)`` per K/V
    head count, stacked (MHA, GQA, MQA, as in Ainslie et al.'s Figure 2); then MLA,
    whose cache is a ``latent = (d_c, d_rope)``: a bar of the latent's width and a
    small position key, from which each head's own keys and values (hollow: not
    cached) are projected.
    """
    rows = len(panels) + 1
    ratios = [1.0] * len(panels) + [1.5]  # the latent's panel has three rows of shapes
    fig, axes = new_figure(
        4.6,
        1.7 * sum(ratios),
        nrows=rows,
        squeeze=False,
        gridspec_kw={"height_ratios": ratios},
    )
    x_query = np.arange(n_heads, dtype=float)
    for ax, (kind, h_kv, reads) in zip(axes[:-1, 0], panels, strict=True):
        x_kv = np.array([x_query[np.equal(reads, j)].mean() for j in range(h_kv)])
        for i, j in enumerate(reads):
            ax.plot([x_query[i], x_kv[j]], [1, 0], color=PALETTE[j % 3], lw=1.2)
        _queries(ax, x_query)
        ax.scatter(x_kv, np.zeros(h_kv), s=150, color=PALETTE[1], marker="s", zorder=3)
        for j in range(h_kv):
            ax.text(x_kv[j], -0.22, f"KV{j}", ha="center", va="top", fontsize=9)
        ax.set_title(f"{kind}: {h_kv} K/V head{'s' if h_kv > 1 else ''}", fontsize=10)
        _frame(ax, n_heads)
    _latent(axes[-1, 0], x_query, latent)
    fig.subplots_adjust(hspace=0.35)
    return fig


def _queries(ax, x_query: np.ndarray) -> None:
    ax.scatter(x_query, np.ones(len(x_query)), s=150, color=PALETTE[4], zorder=3)
    for i, x in enumerate(x_query):
        ax.text(x, 1.22, f"Q{i}", ha="center", va="bottom", fontsize=9)


def _frame(ax, n_heads: int) -> None:
    ax.set_xlim(-0.6, n_heads - 0.4)
    ax.set_ylim(-0.7, 1.7)
    ax.axis("off")


def _latent(ax, x_query: np.ndarray, latent: tuple[int, int]) -> None:
    """MLA's panel: the cached latent as a bar (with the position key beside it),
    each head's own K/V projected from it, hollow, and its query reading them."""
    d_c, d_rope = latent
    right = x_query[-1]
    bar = right - 1.6  # the latent's bar, then a gap, then the position key
    key = bar * d_rope / d_c  # drawn in proportion to the latent
    y_kv, y_latent = 0.35, -0.45
    for i, x in enumerate(x_query):
        ax.plot([x, x], [1, y_kv], color=PALETTE[0], lw=1.2)  # its own K/V
        ax.plot(
            [x, bar * i / (len(x_query) - 1)],
            [y_kv, y_latent + 0.12],
            color=PALETTE[2],
            lw=0.8,
        )  # projected from the latent
    ax.scatter(
        x_query,
        np.full(len(x_query), y_kv),
        s=110,
        marker="s",
        zorder=3,
        facecolor="none",
        edgecolor=PALETTE[1],
        lw=1.5,
    )
    _queries(ax, x_query)
    ax.add_patch(Rectangle((-0.2, y_latent - 0.1), bar + 0.4, 0.22, color=PALETTE[1]))
    ax.add_patch(
        Rectangle((right - key, y_latent - 0.1), key + 0.2, 0.22, color=PALETTE[5])
    )
    ax.text(
        bar / 2,
        y_latent - 0.2,
        f"cached latent c: {d_c} values",
        ha="center",
        va="top",
        fontsize=9,
    )
    ax.text(
        right - key / 2,
        y_latent - 0.2,
        f"position\nkey: {d_rope}",
        ha="center",
        va="top",
        fontsize=9,
    )
    ax.text(
        right + 0.35, y_kv, "own K, V\n(not cached)", ha="left", va="center", fontsize=9
    )
    ax.set_title(
        f"MLA: {d_c + d_rope} values cached a token (filled)",
        fontsize=10,
    )
    _frame(ax, len(x_query))
    ax.set_xlim(-0.6, len(x_query) + 1.3)
    ax.set_ylim(-1.15, 1.7)


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
