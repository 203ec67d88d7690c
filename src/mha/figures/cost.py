"""Figures of the cost page: measured time against the number of heads, score ranks."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from mha.figures.style import PALETTE, new_figure
from mha.pages.cost import ScoreRank, Timings


def head_timings(timings: Timings) -> Figure:
    """Median wall-clock of the layer and of its attention core against h (log-log).

    Shaded bands are the interquartile ranges of the repeats; the gap between the
    two lines is what the projections cost.

    ```python
    from mha.figures.cost import head_timings
    from mha.pages.cost import timings

    fig = head_timings(timings())
    assert len(fig.axes[0].lines) == 2
    ```
    """
    heads = np.array([r.n_heads for r in timings.rows])
    fig, ax = new_figure(6.0, 3.2)
    series = (
        ("whole layer", "layer", PALETTE[0], "o"),
        (
            "attention core (scores, softmax, weighted sum)",
            "attention",
            PALETTE[1],
            "s",
        ),
    )
    for label, key, colour, marker in series:
        median = np.array([getattr(r, f"{key}_ms") for r in timings.rows])
        q1 = np.array([getattr(r, f"{key}_q1_ms") for r in timings.rows])
        q3 = np.array([getattr(r, f"{key}_q3_ms") for r in timings.rows])
        ax.fill_between(heads, q1, q3, color=colour, alpha=0.2, linewidth=0)
        ax.plot(heads, median, marker=marker, color=colour, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(heads, [str(h) for h in heads])
    ax.set_xlabel(f"heads h (d_model = {timings.d_model}, d_k = d_model / h)")
    ax.set_ylabel("median time per call (ms)")
    ax.legend(loc="upper left")
    return fig


def _plain(value: float, _position: int) -> str:
    return f"{value:g}"


def score_ranks(ranks: tuple[ScoreRank, ...]) -> Figure:
    """Rank of each head's score matrix against d_k, with the bound min(n, d_k).

    ```python
    from mha.figures.cost import score_ranks
    from mha.pages.cost import score_ranks as compute

    fig = score_ranks(compute(d_model=16, heads=(1, 4, 16), n=8))
    assert len(fig.axes[0].lines) == 2
    ```
    """
    d_k = np.array([r.d_k for r in ranks])
    fig, ax = new_figure(6.0, 3.0)
    ax.plot(
        d_k, [r.bound for r in ranks], color=PALETTE[1], ls="--", label="min(n, d_k)"
    )
    every_d_k = np.concatenate([np.full(r.ranks.shape, r.d_k) for r in ranks])
    every_rank = np.concatenate([r.ranks for r in ranks])
    ax.plot(
        every_d_k,
        every_rank,
        color=PALETTE[0],
        marker="o",
        ls="none",
        label="rank of each head's score matrix",
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_formatter(FuncFormatter(_plain))  # 64, not a small 2⁶
    ax.set_xticks(d_k, [str(d) for d in d_k])
    ax.set_xlabel(f"d_k (h = d_model / d_k, n = {ranks[0].n} tokens)")
    ax.set_ylabel("rank")
    ax.legend(loc="upper left")
    return fig
