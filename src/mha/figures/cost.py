"""Figures of the cost page: measured time against the number of heads, score ranks,
and where a whole layer's multiply-adds go at each published model's context."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from mha.figures.style import INK, PALETTE, new_figure

if TYPE_CHECKING:
    from mha.pages.cost import _LayerCost, _ScoreRank, _Timings


def head_timings(timings: _Timings) -> Figure:
    """Median wall-clock of the layer and of its attention core against h (log-log).

    Shaded bands are the interquartile ranges of the repeats; the gap between the
    two lines is what the projections cost.
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


def score_ranks(ranks: tuple[_ScoreRank, ...]) -> Figure:
    """Rank of each head's score matrix against d_k, with the bound min(n, d_k)."""
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


def layer_split(layers: tuple[_LayerCost, ...]) -> Figure:
    """One bar per model at its full context: the projections' share of the layer's
    multiply-adds, then the scores' and weighted sum's, each printed in its part.
    """
    fig, ax = new_figure(6.0, 0.3 * len(layers) + 1.0)
    y = np.arange(len(layers))[::-1]  # the first model on top
    shares = np.array([r.share for r in layers])
    ax.barh(y, 1 - shares, color=PALETTE[0], label="projections (4·n·d² for MHA)")
    ax.barh(
        y,
        shares,
        left=1 - shares,
        color=PALETTE[1],
        label="scores and weighted sum (2·n²·d)",
    )
    for row, share in zip(y, shares, strict=True):
        if share < 0.85:  # room in the projections' part
            ax.text(0.02, row, f"{1 - share:.0%}", va="center", color="white")
        if share > 0.15:
            ax.text(0.98, row, f"{share:.0%}", va="center", ha="right", color="black")
    ax.axvline(0.5, color=INK, lw=0.8, ls="--")
    names = [f"{r.name}, n = {r.context:,}" for r in layers]
    ax.set_yticks(y, names)
    ax.set_xlim(0, 1)
    ax.set_xticks([0, 0.5, 1], ["0%", "50%", "100%"])
    ax.set_xlabel("share of one layer's multiply-adds at the model's full context")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=1, frameon=False)
    ax.tick_params(axis="y", length=0)
    return fig
