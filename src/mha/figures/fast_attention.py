"""Figures of the fast-attention page: peak memory of the two paths against n."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from mha.figures.style import PALETTE, new_figure

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
