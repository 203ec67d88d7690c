"""Figures of the cricket worked example."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from mha.figures.style import new_figure
from mha.pages.cricket import Cricket


def three_distributions(
    example: Cricket, tokens: tuple[str, ...], query: str
) -> Figure:
    """Bars of the attention weights of ``query`` over ``tokens`` under one head, head
    A and head B.

    ```python
    from mha.figures.cricket import three_distributions
    from mha.pages.cricket import page

    fig = three_distributions(*page().figures["three_distributions"].data)
    assert len(fig.axes[0].patches) == 9  # 3 runs x 3 keys
    ```
    """
    runs = (example.full, example.head_a, example.head_b)
    fig, ax = new_figure(6.0, 2.8)
    width = 0.26
    x = np.arange(len(tokens))
    for i, run in enumerate(runs):
        bars = ax.bar(x + (i - 1) * width, run.weights, width, label=run.name)
        ax.bar_label(bars, fmt="%.3f", padding=1)
    ax.set_xticks(x, [f'"{t}"' for t in tokens])
    ax.set_ylim(0, 1)
    ax.set_ylabel(f'weight from "{query}"')
    ax.legend(loc="upper right")
    return fig


def extended_distributions(
    extended: dict[str, Cricket], tokens: tuple[str, ...]
) -> Figure:
    """The extended example: one panel per query, bars of one head, head A and head B
    (no value labels: the page's tables beside it give every weight).

    ```python
    from mha.figures.cricket import extended_distributions
    from mha.pages.cricket import page

    fig = extended_distributions(*page().figures["extended"].data)
    assert [len(ax.patches) for ax in fig.axes] == [12, 12]  # 3 runs x 4 keys each
    ```
    """
    fig, axes = new_figure(6.4, 5.0, nrows=len(extended), sharex=True)
    width = 0.3
    x = np.arange(len(tokens))
    for ax, (query, example) in zip(axes, extended.items(), strict=True):
        for i, run in enumerate((example.full, example.head_a, example.head_b)):
            ax.bar(x + (i - 1) * width, run.weights, width, label=run.name)
        ax.set_ylim(0, 1)
        ax.set_ylabel(f'weight from "{query}"')
    axes[-1].set_xticks(x, [f'"{t}"' for t in tokens])
    axes[0].legend(loc="upper right")
    fig.subplots_adjust(hspace=0.25)
    return fig
