"""Figures of the cricket worked example, drawn from what its page hands them."""

from __future__ import annotations

from typing import Protocol

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from mha.figures.style import INK, PALETTE, new_figure


class HeadRun(Protocol):
    """What a figure reads of one head's run: its name, columns, dots and weights."""

    name: str
    dims: tuple[int, ...]
    dots: np.ndarray
    weights: np.ndarray


class Cricket(Protocol):
    """What a figure reads of the example: the one wide head's run and heads A and B."""

    full: HeadRun
    head_a: HeadRun
    head_b: HeadRun


def three_distributions(
    example: Cricket, tokens: tuple[str, ...], query: str
) -> Figure:
    """Bars of the attention weights of ``query`` over ``tokens`` under one head, head
    A and head B.
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


def head_vectors(
    example: Cricket, q: np.ndarray, k: np.ndarray, tokens: tuple[str, ...]
) -> list[Figure]:
    """One panel per two-dimensional head (A, then B): the query and each key drawn
    in the head's own plane, with each key's dot product and softmax weight printed
    by it, and the key's foot on the query's line (how far it reaches along q).
    """
    return [
        _plane(run, q[list(run.dims)], k[:, list(run.dims)], tokens)
        for run in (example.head_a, example.head_b)
    ]


def _plane(run: HeadRun, q: np.ndarray, k: np.ndarray, tokens: tuple[str, ...]):
    fig, ax = new_figure(3.3, 4.2)
    reach = max(float(np.abs(k).max()), float(np.abs(q).max())) + 0.7
    unit = q / np.linalg.norm(q)
    ax.axline((0, 0), tuple(unit), color=INK, lw=0.6, ls=":")  # the query's line
    for j, token in enumerate(tokens):
        colour, foot = PALETTE[j], (k[j] @ unit) * unit
        label = f'"{token}": q·k = {run.dots[j]:g}, weight {run.weights[j]:.3f}'
        if np.any(k[j]):
            ax.add_patch(_arrow(k[j], colour, 1.2))
            ax.plot(*zip(k[j], foot, strict=True), color=colour, lw=0.9, ls="--")
            left = k[j][0] < 0.5  # a key near the vertical axis: its name on the left
            ax.text(
                k[j][0] + (-0.08 if left else 0.08),
                k[j][1],
                token,
                ha="right" if left else "left",
                va="center",
                fontsize=9,
            )
        else:  # a key that is zero in this head: every query scores it 0
            ax.plot(0, 0, "o", color=colour)
            ax.text(0.1, -0.1, f"{token} (zero)", va="top", fontsize=9)
        ax.plot([], [], color=colour, lw=2, label=label)  # the legend's line
    ax.add_patch(_arrow(q, INK, 2.2))
    ax.text(q[0] + 0.1, q[1] + 0.05, "q(his)", va="bottom", fontsize=9)
    ax.set_xlim(-0.5, reach)
    ax.set_ylim(-0.7, reach)
    ax.set_aspect("equal")
    ax.set_title(run.name, fontsize=10)
    ax.set_xlabel(f"column {run.dims[0]}")
    ax.set_ylabel(f"column {run.dims[1]}")
    ax.grid(True, lw=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    return fig


def _arrow(tip: np.ndarray, colour: str, width: float) -> FancyArrowPatch:
    return FancyArrowPatch(
        (0, 0), tuple(tip), arrowstyle="-|>", mutation_scale=12, lw=width, color=colour
    )
