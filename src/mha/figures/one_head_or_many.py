"""Figures of the head-count sweep on the two-relation toy task.

Heads are numbered from 0 (H0 is a model's first head). The trained heads' maps and
roles are small multiples: a list of figures, one per head count, which wrap on a
narrow screen.
"""

from __future__ import annotations

import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from mha.figures.style import CMAP, DENSE, INK, PALETTE, new_figure
from mha.pages.one_head_or_many.head_sweep import _CURVE_LEVEL, _CURVE_WINDOW, _Sweep


def _heads_axis(ax, heads: list[int]) -> None:
    """A log2 x axis with one tick per head count."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(heads, [str(h) for h in heads])
    ax.minorticks_off()


def _range_plot(ax, heads: list[int], values: np.ndarray, colour: str) -> None:
    """Mean of each column of ``values (seeds, len(heads))`` with its min-max range."""
    mean = values.mean(axis=0)
    spread = np.stack([mean - values.min(axis=0), values.max(axis=0) - mean])
    ax.errorbar(heads, mean, yerr=spread, color=colour, marker="o", capsize=3)
    for row in values:
        ax.plot(heads, row, linestyle="none", marker=".", color=colour, alpha=0.4)


def sweep_results(
    sweep: _Sweep, paper: tuple, d_model: int, paper_d_model: int
) -> Figure:
    """Toy test loss and accuracy per h, beside the ``paper``'s rows (Vaswani et al.'s
    Table 3 row A: ``n_heads``, ``perplexity``, ``bleu``); the widths label the axes.
    """
    fig, axes = new_figure(5.9, 5.4, nrows=2, ncols=2)
    heads = [r.n_heads for r in sweep.results]
    loss = np.stack([r.test_loss for r in sweep.results], axis=1)  # (seeds, len(h))
    accuracy = np.stack([r.accuracy for r in sweep.results], axis=1)
    _range_plot(axes[0, 0], heads, loss, PALETTE[0])
    axes[0, 0].set_yscale("log")
    axes[0, 0].set_title("toy: test loss\n(nats, lower is better)")
    _range_plot(axes[1, 0], heads, accuracy, PALETTE[0])
    axes[1, 0].set_ylim(0, 1.05)
    axes[1, 0].set_title("toy: test accuracy\n(higher is better)")
    axes[1, 0].set_xlabel(f"heads h (d_model = {d_model})")

    paper_heads = [row.n_heads for row in paper]
    for ax, values, title in (
        (axes[0, 1], [row.perplexity for row in paper], "dev perplexity"),
        (axes[1, 1], [row.bleu for row in paper], "dev BLEU"),
    ):
        ax.plot(paper_heads, values, marker="s", color=PALETTE[1])
        ax.set_title(f"Vaswani et al. 2017,\nTable 3 (A): {title}")
        _heads_axis(ax, paper_heads)
    axes[1, 1].set_xlabel(f"heads h (d_model = {paper_d_model})")
    for ax in axes[:, 0]:
        _heads_axis(ax, heads)
    fig.tight_layout()
    return fig


def learning_curves(sweep: _Sweep) -> Figure:
    """Training loss against step for every h (mean over seeds, running mean).

    A dotted line marks the page's learned level, the loss the page counts as learned.
    """
    fig, ax = new_figure(5.6, 3.2)
    for colour, result in zip(PALETTE, sweep.results, strict=False):
        curve = result.curve()
        steps = np.arange(_CURVE_WINDOW, _CURVE_WINDOW + curve.size)
        ax.plot(steps, curve, color=colour, label=f"h = {result.n_heads}")
    ax.axhline(_CURVE_LEVEL, color=INK, linewidth=0.8, linestyle=":")
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("loss on the step's batch (nats)")
    ax.legend(ncols=2)
    return fig


def head_heatmaps(
    maps: dict[int, np.ndarray],
    labels: list[str],
    previous: np.ndarray,
    referenced: np.ndarray,
) -> list[Figure]:
    """Attention weights ``maps[h] (h, n, n)`` of every head on one input, per h.

    One panel per h, its heads H0, H1, ... two to a row; rows of a map are queries
    (``labels``), columns keys. A circle marks each query's ``previous`` token and a
    cross the token it refers to (``referenced``): the two places its answers are.
    The last panel is the colour bar.
    """
    rows = np.arange(len(labels))
    panels = []
    for h, weights in maps.items():
        columns = min(h, 2)
        lines = -(-h // columns)
        fig, axes = new_figure(
            1.25 * columns + 0.9,
            1.35 * lines + 0.9,
            nrows=lines,
            ncols=columns,
            squeeze=False,
            layout="constrained",  # the shared "query" and "key" clear the labels
        )
        for i, ax in enumerate(axes.flat):
            if i >= h:  # an odd h leaves the last slot empty
                ax.set_axis_off()
                continue
            ax.imshow(weights[i], cmap=CMAP, vmin=0, vmax=1)
            ax.scatter(
                previous,
                rows,
                marker="o",
                s=16,
                facecolors="none",
                edgecolors=PALETTE[5],
                linewidths=0.9,
            )
            ax.scatter(
                referenced,
                rows,
                marker="x",
                s=14,
                color=PALETTE[5],
                linewidths=0.9,
            )
            ax.set_title(f"H{i}", fontsize=DENSE, pad=2)
            bottom, left = i >= h - columns, i % columns == 0
            ax.set_xticks(rows, labels if bottom else [], rotation=90, fontsize=DENSE)
            ax.set_yticks(rows, labels if left else [], fontsize=DENSE)
            ax.tick_params(length=0)
        fig.suptitle(f"h = {h}")
        fig.supylabel("query", fontsize=DENSE)
        fig.supxlabel("key", fontsize=DENSE)
        panels.append(fig)
    fig, bar = new_figure(2.4, 0.9)
    fig.colorbar(
        ScalarMappable(Normalize(0, 1), CMAP),
        cax=bar,
        orientation="horizontal",
        label="attention weight",
    )
    return [*panels, fig]


def head_roles(sweep: _Sweep) -> list[Figure]:
    """Each trained head's mean weight on the previous vs the referenced token.

    One panel per h, one point per head and reporting seed, and a last panel with the
    seeds' legend. A head in the lower right corner serves the positional relation,
    one in the upper left the content relation; the diagonal is where all the weight
    is on one of the two.
    """
    panels = []
    for result in sweep.results:
        fig, ax = new_figure(2.1, 2.3)
        ax.plot([0, 1], [1, 0], color=PALETTE[4], linewidth=0.8, linestyle=":")
        for colour, mass in zip(PALETTE, result.attention_mass, strict=False):
            ax.scatter(mass[:, 0], mass[:, 1], s=12, color=colour, alpha=0.8)
        ax.set_xlim(-0.03, 1.03)
        ax.set_ylim(-0.03, 1.03)
        ax.set_aspect("equal")
        ax.set_title(f"h = {result.n_heads}")
        ax.set_xlabel("on previous")
        ax.set_ylabel("on referenced")
        panels.append(fig)
    fig, ax = new_figure(1.2, 1.2)
    handles = [
        Line2D([], [], linestyle="none", marker="o", color=colour, label=f"seed {seed}")
        for colour, seed in zip(PALETTE, sweep.config.seeds, strict=False)
    ]
    ax.legend(handles=handles, loc="center")
    ax.axis("off")
    return [*panels, fig]
