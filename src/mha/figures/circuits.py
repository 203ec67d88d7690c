"""Figures of the circuits page: K-composition into two induction heads, path patching
into their keys, and what the first token's attention moves.

Layers and heads are numbered from 0 (``L17H3``).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from mha.figures.style import CMAP, INK, PALETTE, new_figure


def composition(
    grids: tuple[np.ndarray, ...], names: tuple[str, ...], framed: tuple[int, int]
) -> Figure:
    """One heatmap per receiving head: ``grids[i] (layers below it, heads)`` of
    K-composition scores, titled ``names[i]``; the head ``framed`` is outlined.
    """
    fig, axes = new_figure(4.8, 5.4, ncols=len(grids), sharey=True)
    top = max(float(np.nanmax(g)) for g in grids)
    image = None
    for ax, grid, name in zip(axes, grids, names, strict=True):
        image = ax.imshow(grid, cmap=CMAP, vmin=0, vmax=top, aspect="auto")
        ax.set_title(f"into {name}", fontsize=10)
        ax.set_xticks(range(grid.shape[1]), [str(h) for h in range(grid.shape[1])])
        ax.set_xlabel("sender head", fontsize=10)
        ax.set_ylim(max(len(g) for g in grids) - 0.5, -0.5)
        ax.tick_params(length=0, labelsize=9)
        for spine in ax.spines.values():
            spine.set_visible(False)
        layer, head = framed
        if layer < len(grid):
            ax.add_patch(
                Rectangle(
                    (head - 0.5, layer - 0.5),
                    1,
                    1,
                    fill=False,
                    edgecolor=PALETTE[5],
                    lw=2,
                )
            )
    rows = max(len(g) for g in grids)
    axes[0].set_yticks(range(rows), [str(i) for i in range(rows)], fontsize=9)
    axes[0].set_ylabel("sender layer", fontsize=10)
    fig.colorbar(image, ax=axes, orientation="horizontal", fraction=0.04, pad=0.1)
    return fig


def patching(
    names: list[str],
    clean: np.ndarray,
    patched: np.ndarray,
    senders: list[str],
    controls: np.ndarray,
) -> Figure:
    """Bars per head: its induction score ``clean``, with its keys patched at each of
    ``senders`` (``patched (senders, heads)``; NaN: that sender cannot reach the
    head, no bar), and at control heads (``controls (heads, k)``: the mean, with
    the range as an error bar; NaN ignored).
    """
    fig, ax = new_figure(5.4, 3.4)
    x = np.arange(len(names))
    k = 2 + len(senders)
    width = 0.8 / k
    mean = np.nanmean(controls, axis=1)
    spread = np.stack(
        [mean - np.nanmin(controls, axis=1), np.nanmax(controls, axis=1) - mean]
    )
    offset = (np.arange(k) - (k - 1) / 2) * width
    ax.bar(x + offset[0], clean, width, color=PALETTE[0], label="unpatched")
    for i, (name, scores) in enumerate(zip(senders, patched, strict=True)):
        colour = PALETTE[5] if i == 0 else PALETTE[3]
        ax.bar(
            x + offset[1 + i],
            np.nan_to_num(scores, nan=0.0),
            width,
            color=colour,
            label=f"{name} patched",
        )
    ax.bar(
        x + offset[-1],
        mean,
        width,
        yerr=spread,
        color=PALETTE[2],
        ecolor=INK,
        label="a control head patched",
    )
    ax.set_xticks(x, names)
    ax.set_ylim(0, 1)
    ax.set_ylabel("induction score")
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.12),
        ncol=2,
        fontsize=9,
        frameon=False,
    )
    return fig


def sinks(weight: np.ndarray, moved: np.ndarray, even: float) -> Figure:
    """Per layer: the attention ``weight`` on the first token and its share of what
    moves (``moved``), against ``even``, the share of an even spread.
    """
    fig, ax = new_figure(5.4, 2.8)
    layers = np.arange(len(weight))
    ax.plot(layers, weight, "o-", color=PALETTE[0], ms=3, label="attention weight")
    ax.plot(layers, moved, "s-", color=PALETTE[5], ms=3, label="share of what moves")
    ax.axhline(even, color=INK, linestyle="--", linewidth=1, label="an even spread")
    ax.set_ylim(0, 1)
    ax.set_xlabel("layer")
    ax.set_ylabel("first token's share")
    ax.legend(loc="upper right", fontsize=9, frameon=False)
    return fig
