"""Figures of the fast-attention page: peak memory of the two paths against n."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter

from mha.figures.style import INK, PALETTE, new_figure

MB = 1e6


def memory(rows: list[dict], bench_rows: list[dict]) -> Figure:
    """Peak bytes of ``attend`` and ``tiled_attention`` against n (log-log): the
    build's measurements filled, ``make bench``'s open and extending further, and the
    three n×n arrays the naive path must hold, dashed.
    """
    fig, ax = new_figure(6.0, 4.4)
    series = (
        ("attend", "naive", PALETTE[0], "o"),
        ("tiled_attention", "tiled", PALETTE[1], "s"),
    )
    wide = np.array([r["n"] for r in bench_rows])
    for label, key, colour, marker in series:
        ax.plot(
            wide,
            [r[key] / MB for r in bench_rows],
            marker=marker,
            color=colour,
            markerfacecolor="none",
            label=f"{label} (make bench)",
        )
        ax.plot(
            [r["n"] for r in rows],
            [r[key] / MB for r in rows],
            linestyle="none",
            marker=marker,
            color=colour,
            label=f"{label} (this build)",
        )
    ax.plot(
        wide,
        [r["dense"] / MB for r in bench_rows],
        linestyle="--",
        color=PALETTE[2],
        label="three n×n float64 arrays",
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(wide, [f"{n:,}" for n in wide])
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.set_xlabel("tokens n")
    ax.set_ylabel("peak memory (MB)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
    return fig


def tiling(visited: np.ndarray, block: int) -> Figure:
    """Query blocks (rows) against key blocks (columns): a filled square for each
    tile ``visited`` (computed), hatched on the diagonal where the causal mask cuts
    through the tile, an empty outline for each tile skipped.
    """
    blocks = visited.shape[0]
    fig, ax = new_figure(4.6, 4.4)
    for i, j in np.ndindex(visited.shape):
        if not visited[i, j]:
            style = {"fc": "none", "ec": INK, "lw": 0.4, "alpha": 0.45}
        elif i == j:
            style = {"fc": PALETTE[1], "ec": INK, "lw": 0.4, "hatch": "////"}
        else:
            style = {"fc": PALETTE[0], "ec": INK, "lw": 0.4}
        ax.add_patch(Rectangle((j, i), 1, 1, **style))
    computed = int(visited.sum())
    diagonal = int(np.trace(visited))
    handles = [
        Rectangle((0, 0), 1, 1, fc=PALETTE[0], ec=INK, lw=0.4),
        Rectangle((0, 0), 1, 1, fc=PALETTE[1], ec=INK, lw=0.4, hatch="////"),
        Rectangle((0, 0), 1, 1, fc="none", ec=INK, lw=0.4),
    ]
    labels = [
        f"computed: {computed - diagonal} tiles",
        f"computed, masked inside: {diagonal}",
        f"skipped: {visited.size - computed}",
    ]
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(0.0, -0.02), ncol=1)
    ax.set_xlim(0, blocks)
    ax.set_ylim(blocks, 0)
    ax.set_aspect("equal")
    ticks = np.arange(0, blocks + 1, max(1, blocks // 4))
    ax.set_xticks(ticks, [f"{t * block:,}" for t in ticks])
    ax.set_yticks(ticks, [f"{t * block:,}" for t in ticks])
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel(f"keys, in blocks of {block} (token index)")
    ax.set_ylabel(f"queries, in blocks of {block} (token index)")
    ax.spines[["top", "left"]].set_visible(True)
    ax.spines[["bottom", "right"]].set_visible(False)
    return fig
