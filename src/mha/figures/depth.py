"""Figures of the depth page: the residual stream, the induction circuit, the trained
models, and SmolLM2's induction heads and attention sinks beside the first token's norm.

Layers and heads are numbered from 0 (``L17H3``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FixedLocator, NullLocator

from mha.figures.style import CMAP, INK, PALETTE, new_figure

if TYPE_CHECKING:
    from mha.pages.depth import Scan, _Task


def residual_norms(scan: Scan) -> Figure:
    """Per layer: the norm of the residual stream and of what each sublayer adds to it."""
    fig, ax = new_figure(5.4, 3.0)
    layers = np.arange(len(scan.attention_norm))
    ax.plot(
        np.arange(len(scan.stream_norm)),
        scan.stream_norm,
        "o-",
        color=PALETTE[0],
        ms=3,
        label="residual stream x entering the layer",
    )
    ax.plot(
        layers,
        scan.attention_norm,
        "s-",
        color=PALETTE[1],
        ms=3,
        label="attention's write",
    )
    ax.plot(
        layers,
        scan.mlp_norm,
        "^-",
        color=PALETTE[2],
        ms=3,
        label="feed-forward's write",
    )
    ax.set_yscale("log")
    ax.set_xlabel(f"layer (the last point: after layer {layers[-1]})")
    ax.set_ylabel("mean norm (log scale)")
    ax.legend(loc="upper left", fontsize=9)
    return fig


def circuit_attention(weights: tuple[np.ndarray, ...], tokens: np.ndarray) -> Figure:
    """The built circuit's two heads' ``weights (n, n)`` on ``tokens``: row t is query
    t's attention.
    """
    n = len(tokens)
    fig, axes = new_figure(5.4, 3.0, ncols=2)
    titles = ("L0H0: previous token", "L1H0: induction")
    labels = [f"{t}" for t in tokens]
    for ax, w, title in zip(axes, weights, titles, strict=True):
        ax.imshow(w, cmap=CMAP, vmin=0, vmax=1)
        ax.set_title(title, fontsize=10)
        ax.set_xticks(range(n), labels, fontsize=9)
        ax.set_yticks(range(n), labels, fontsize=9)
        ax.set_xlabel("key token", fontsize=9)
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
    axes[0].set_ylabel("query token", fontsize=9)
    fig.tight_layout()
    return fig


def training(task: _Task) -> Figure:
    """Held-out accuracy of each trained model, per seed, on a log scale, against
    chance, the exclusion baseline and twice chance.
    """
    fig, ax = new_figure(5.4, 2.8)
    runs = (task.one, task.two)
    width = 0.8 / len(runs[0].accuracy)
    for i, run in enumerate(runs):
        for s, value in enumerate(run.accuracy):
            ax.bar(
                i + (s - (len(run.accuracy) - 1) / 2) * width,
                value,
                width * 0.9,
                color=PALETTE[i],
            )
    lines = (
        (task.chance, ":", "chance"),
        (task.exclusion, "-.", "exclusion baseline"),
        (2 * task.chance, "--", "twice chance"),
    )
    for level, style, label in lines:
        ax.axhline(level, color=INK, linestyle=style, linewidth=1, label=label)
    ax.legend(loc="upper left", fontsize=9)
    ax.set_xticks(range(len(runs)), [run.shape.name for run in runs], fontsize=10)
    ax.set_xlim(-0.5, 1.5)
    ax.set_yscale("log")
    ax.set_ylim(0.05, 1.05)
    ticks = [0.05, 0.1, 0.2, 0.5, 1.0]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_yticklabels([f"{t:.0%}" for t in ticks])
    ax.set_ylabel("held-out accuracy (log scale)")
    return fig


def head_scores(scan: Scan, top: list[tuple[int, int]]) -> Figure:
    """The induction and previous-token score of each of SmolLM2's 270 heads.

    Rows are layers, columns heads; the heads ``top`` (``(layer, head)``) are framed.
    """
    n_layers, n_heads = scan.induction.shape
    fig, axes = new_figure(4.8, 7.0, ncols=2, sharey=True)
    image = None
    grids = (
        ("induction score", scan.induction),
        ("previous-token score", scan.previous),
    )
    for ax, (title, grid) in zip(axes, grids, strict=True):
        image = ax.imshow(grid, cmap=CMAP, vmin=0, vmax=1, aspect="auto")
        ax.set_title(title, fontsize=10)
        ax.set_xticks(range(n_heads), [str(h) for h in range(n_heads)], fontsize=9)
        ax.set_xlabel("head", fontsize=10)
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
    axes[0].set_yticks(range(n_layers), [str(i) for i in range(n_layers)], fontsize=9)
    axes[0].set_ylabel("layer", fontsize=10)
    for layer, head in top:
        axes[0].add_patch(
            Rectangle(
                (head - 0.5, layer - 0.5), 1, 1, fill=False, edgecolor=PALETTE[5], lw=2
            )
        )
    fig.colorbar(image, ax=axes, orientation="horizontal", fraction=0.04, pad=0.08)
    return fig


def sinks_and_norms(
    share: np.ndarray, ratio: np.ndarray, even: float, outsized: float
) -> Figure:
    """Two curves over the layers, one above the other: the ``share`` of attention on
    the first token (against ``even``, an even spread), and the ``ratio`` of the first
    token's residual stream to the others' where each layer reads it (log scale,
    against ``outsized``).
    """
    fig, (top, bottom) = new_figure(5.4, 4.2, nrows=2, sharex=True)
    layers = np.arange(len(share))
    top.plot(layers, share, "o-", color=PALETTE[0], ms=3, label="first token's share")
    top.axhline(even, color=INK, linestyle="--", linewidth=1, label="an even spread")
    top.set_ylim(0, 1)
    top.set_ylabel("weight on\nthe first token")
    top.legend(loc="upper right", fontsize=9)
    bottom.plot(layers, ratio, "s-", color=PALETTE[1], ms=3, label="first / others")
    bottom.axhline(
        outsized, color=INK, linestyle=":", linewidth=1, label=f"{outsized:.0f} times"
    )
    bottom.set_yscale("log")
    bottom.set_ylabel("first token's norm\n/ others' (log)")
    bottom.legend(loc="lower right", fontsize=9)
    bottom.set_xticks(layers[::3], [str(i) for i in layers[::3]], fontsize=9)
    bottom.set_xlabel("layer (the stream it reads)")
    fig.align_ylabels((top, bottom))
    return fig
