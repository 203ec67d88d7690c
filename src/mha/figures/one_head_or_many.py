"""Figures of the head-count sweep on the two-relation toy task."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from mha.data import vaswani2017
from mha.experiments.toy_model import forward
from mha.experiments.toy_task import D_MODEL, N_POSITIONS, NAMES, WORDS, Batch
from mha.figures.style import CMAP, INK, PALETTE, new_figure
from mha.pages.one_head_or_many import CURVE_LEVEL, CURVE_WINDOW, Sweep


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


def sweep_results(sweep: Sweep) -> Figure:
    """Toy test loss and accuracy per h, beside Vaswani et al.'s Table 3 row (A).

    ```python
    from mha.pages.one_head_or_many import CURVE_LEVEL, CURVE_WINDOW, SweepConfig, sweep
    from mha.figures.one_head_or_many import sweep_results

    tiny = sweep(SweepConfig(heads=(1, 2), learning_rates=(0.03,), seeds=(1,),
                             steps=5, validation_size=8, test_size=8))
    assert len(sweep_results(tiny).axes) == 4
    ```
    """
    fig, axes = new_figure(7.0, 5.2, nrows=2, ncols=2)
    heads = [r.n_heads for r in sweep.results]
    loss = np.stack([r.test_loss for r in sweep.results], axis=1)  # (seeds, len(h))
    accuracy = np.stack([r.accuracy for r in sweep.results], axis=1)
    _range_plot(axes[0, 0], heads, loss, PALETTE[0])
    axes[0, 0].set_yscale("log")
    axes[0, 0].set_title("toy: test loss (nats, lower is better)", fontsize=9)
    _range_plot(axes[1, 0], heads, accuracy, PALETTE[0])
    axes[1, 0].set_ylim(0, 1.05)
    axes[1, 0].set_title("toy: test accuracy (higher is better)", fontsize=9)
    axes[1, 0].set_xlabel(f"heads h (d_model = {D_MODEL})")

    paper_heads = [row.n_heads for row in vaswani2017.ROW_A]
    for ax, values, title in (
        (axes[0, 1], [row.perplexity for row in vaswani2017.ROW_A], "dev perplexity"),
        (axes[1, 1], [row.bleu for row in vaswani2017.ROW_A], "dev BLEU"),
    ):
        ax.plot(paper_heads, values, marker="s", color=PALETTE[1])
        ax.set_title(f"Vaswani et al. 2017, Table 3 (A): {title}", fontsize=9)
        _heads_axis(ax, paper_heads)
    axes[1, 1].set_xlabel(f"heads h (d_model = {vaswani2017.D_MODEL})")
    for ax in axes[:, 0]:
        _heads_axis(ax, heads)
    fig.tight_layout()
    return fig


def learning_curves(sweep: Sweep) -> Figure:
    """Training loss against step for every h (mean over seeds, running mean).

    A dotted line marks ``CURVE_LEVEL``, the loss the page counts as learned.

    ```python
    from mha.pages.one_head_or_many import CURVE_LEVEL, CURVE_WINDOW, SweepConfig, sweep
    from mha.figures.one_head_or_many import learning_curves

    tiny = sweep(SweepConfig(heads=(1, 2), learning_rates=(0.03,), seeds=(1,),
                             steps=12, validation_size=8, test_size=8))
    assert len(learning_curves(tiny).axes[0].lines) == 3  # two curves and the level
    ```
    """
    fig, ax = new_figure(6.0, 3.2)
    for colour, result in zip(PALETTE, sweep.results, strict=False):
        curve = result.curve()
        steps = np.arange(CURVE_WINDOW, CURVE_WINDOW + curve.size)
        ax.plot(steps, curve, color=colour, label=f"h = {result.n_heads}")
    ax.axhline(CURVE_LEVEL, color=INK, linewidth=0.8, linestyle=":")
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("loss on the step's batch (nats)")
    ax.legend(fontsize=8, ncols=2)
    return fig


def head_heatmaps(sweep: Sweep, example: Batch, heads: tuple[int, ...]) -> Figure:
    """Attention weights of every head on one input, for each h in ``heads``.

    One row per h (the first reporting seed's model), one panel per head; rows of a
    panel are queries, columns keys. A circle marks each query's previous token and
    a cross the token it refers to: the two places its answers are.

    ```python
    from mha.pages.one_head_or_many import CURVE_LEVEL, CURVE_WINDOW, SweepConfig, sweep
    from mha.experiments.toy_task import generate
    from mha.figures.one_head_or_many import head_heatmaps

    tiny = sweep(SweepConfig(heads=(1, 2), learning_rates=(0.03,), seeds=(1,),
                             steps=5, validation_size=8, test_size=8))
    fig = head_heatmaps(tiny, generate(1), heads=(1, 2))
    assert sum(bool(ax.images) for ax in fig.axes) == 3  # 1 + 2 heads
    ```
    """
    columns = max(heads)
    fig, axes = new_figure(
        0.95 * columns + 1.6,
        1.05 * len(heads) + 0.7,
        nrows=len(heads),
        ncols=columns,
        gridspec_kw={"left": 0.16, "right": 0.88, "bottom": 0.16, "top": 0.95},
    )
    axes = np.atleast_2d(axes)
    labels = [
        f"{NAMES[n]} {WORDS[w]}"
        for n, w in zip(example.names[0], example.words[0], strict=True)
    ]
    rows = np.arange(N_POSITIONS)
    for row_axes, h in zip(axes, heads, strict=True):
        params = {k: v[:1] for k, v in sweep.result(h).params.items()}
        weights = forward(params, example.inputs(np.float32)[:1], h).weights[0, 0]
        for i, ax in enumerate(row_axes):
            if i >= h:
                ax.set_axis_off()
                continue
            image = ax.imshow(weights[i], cmap=CMAP, vmin=0, vmax=1)
            ax.scatter(
                example.prev_positions,
                rows,
                marker="o",
                s=16,
                facecolors="none",
                edgecolors=PALETTE[5],
                linewidths=0.9,
            )
            ax.scatter(
                example.ref_positions[0],
                rows,
                marker="x",
                s=14,
                color=PALETTE[5],
                linewidths=0.9,
            )
            ax.set_title(f"head {i + 1}", fontsize=7, pad=2)
            bottom, left = h == heads[-1] and i == 0, i == 0
            ax.set_xticks(
                rows if bottom else [],
                labels if bottom else [],
                rotation=90,
                fontsize=5,
            )
            ax.set_yticks(rows if left else [], labels if left else [], fontsize=5)
            if left:
                ax.set_ylabel(f"h = {h}\nquery", fontsize=8)
            if bottom:
                ax.set_xlabel("key", fontsize=8)
    bar = fig.add_axes((0.91, 0.3, 0.012, 0.4))
    fig.colorbar(image, cax=bar, label="attention weight")
    return fig


def head_roles(sweep: Sweep) -> Figure:
    """Each trained head's mean weight on the previous vs the referenced token.

    One panel per h, one point per head and reporting seed. A head in the lower
    right corner serves the positional relation, one in the upper left the content
    relation; the diagonal is where all the weight is on one of the two.

    ```python
    from mha.pages.one_head_or_many import CURVE_LEVEL, CURVE_WINDOW, SweepConfig, sweep
    from mha.figures.one_head_or_many import head_roles

    tiny = sweep(SweepConfig(heads=(1, 2), learning_rates=(0.03,), seeds=(1,),
                             steps=5, validation_size=8, test_size=8))
    assert len(head_roles(tiny).axes) == 2
    ```
    """
    n = len(sweep.results)
    fig, axes = new_figure(1.6 * n + 0.4, 2.2, ncols=n, sharey=True)
    axes = np.atleast_1d(axes)
    for ax, result in zip(axes, sweep.results, strict=True):
        ax.plot([0, 1], [1, 0], color=PALETTE[4], linewidth=0.8, linestyle=":")
        for colour, seed, mass in zip(
            PALETTE, sweep.config.seeds, result.attention_mass, strict=False
        ):
            ax.scatter(
                mass[:, 0],
                mass[:, 1],
                s=12,
                color=colour,
                alpha=0.8,
                label=f"seed {seed}",
            )
        ax.set_xlim(-0.03, 1.03)
        ax.set_ylim(-0.03, 1.03)
        ax.set_aspect("equal")
        ax.set_title(f"h = {result.n_heads}", fontsize=9)
        ax.set_xlabel("on previous", fontsize=8)
    axes[0].set_ylabel("on referenced", fontsize=8)
    axes[-1].legend(fontsize=6, loc="upper right")
    return fig
