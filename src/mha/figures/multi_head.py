"""Figures of the multi-head mechanism page: the split, W_O, one head vs several.

Heads and tokens are numbered from 0 (H0 is the first head), as in the code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle

from mha.figures.style import CMAP, INK, PALETTE, SMALL, new_figure
from mha.heads import split_heads

if TYPE_CHECKING:
    from mha.pages.multi_head import WholeLayer, _Contrast, _Dependence


def split_heads_reshape(seq: int = 3, d_model: int = 8, n_heads: int = 4) -> Figure:
    """``(batch, seq, d_model) -> (batch, heads, seq, d_k)``, drawn from ``split_heads``.

    Each cell shows its entry of ``x = arange(seq * d_model)``; each head's columns
    share a colour, on the left in place and on the right as the heads
    ``split_heads`` returns.
    """
    x = np.arange(seq * d_model).reshape(1, seq, d_model)  # (batch, seq, d_model)
    heads = split_heads(x, n_heads)  # (batch, heads, seq, d_k)
    d_k = heads.shape[-1]
    gap, left = 4.0, d_model
    width = left + gap + n_heads * (d_k + 1) - 1
    fig, ax = new_figure(min(7.5, 0.33 * width), 0.33 * (seq + 4.1))

    def cell(x0: float, row: int, value: int, head: int) -> None:
        y = seq - 1 - row
        tint = to_rgba(PALETTE[head % len(PALETTE)], 0.45)
        ax.add_patch(Rectangle((x0, y), 1, 1, facecolor=tint, edgecolor=INK, lw=0.6))
        ax.text(
            x0 + 0.5,
            y + 0.5,
            str(value),
            ha="center",
            va="center",
            fontsize=SMALL,
            color=INK,
        )

    for row in range(seq):
        for col in range(d_model):
            cell(col, row, x[0, row, col], col // d_k)
    right = left + gap + (width - left - gap) / 2
    for x0, title, shape in (
        (left / 2, "x", "(batch, seq, d_model)"),
        (right, f"split_heads(x, {n_heads})", "(batch, heads, seq, d_k)"),
    ):
        ax.text(
            x0,
            seq + 1.5,
            title,
            ha="center",
            fontsize=SMALL,
            family="monospace",
            color=INK,
        )
        ax.text(x0, seq + 0.4, shape, ha="center", fontsize=SMALL, color=INK)
    for head in range(n_heads):
        x0 = left + gap + head * (d_k + 1)
        for row in range(seq):
            for col in range(d_k):
                cell(x0 + col, row, heads[0, head, row, col], head)
        ax.text(
            x0 + d_k / 2,
            -0.35,
            f"H{head}",
            ha="center",
            va="top",
            fontsize=SMALL,
            color=INK,
        )
    ax.text(
        left / 2,
        -0.35,
        f"shape {x.shape}",
        ha="center",
        va="top",
        fontsize=SMALL,
        color=INK,
    )
    ax.text(
        right,
        -1.1,
        f"shape {heads.shape}",
        ha="center",
        va="top",
        fontsize=SMALL,
        color=INK,
    )
    ax.add_patch(
        FancyArrowPatch(
            (left + 0.4, seq / 2),
            (left + gap - 0.4, seq / 2),
            arrowstyle="-|>",
            mutation_scale=12,
            lw=1,
            color=INK,
        )
    )
    ax.text(
        left + gap / 2,
        seq / 2 + 0.25,
        "reshape,",
        ha="center",
        fontsize=SMALL,
        color=INK,
    )
    ax.text(
        left + gap / 2,
        seq / 2 - 0.25,
        "swap axes",
        ha="center",
        va="top",
        fontsize=SMALL,
        color=INK,
    )
    ax.set_xlim(-0.2, width + 0.2)
    ax.set_ylim(-1.9, seq + 2.2)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig


def _annotated_heatmap(
    ax, values: np.ndarray, vmax: float, places: int = 2, bold: np.ndarray | None = None
) -> None:
    """Cividis heatmap with each value written in black or white, whichever reads.

    ``bold`` (same shape as ``values``, boolean) marks the values written in bold.
    """
    ax.imshow(values, cmap=CMAP, vmin=0, vmax=vmax)
    for (i, j), value in np.ndenumerate(values):
        ax.text(
            j,
            i,
            f"{value:.{places}f}",
            ha="center",
            va="center",
            fontsize=SMALL,
            color="#000000" if value > 0.55 * vmax else "#ffffff",
            weight="bold" if bold is not None and bold[i, j] else "normal",
        )


def head_dependence(bare: _Dependence, mixed: _Dependence) -> Figure:
    """Heatmaps of ``mha.pages.multi_head.dependence`` without W_O (``bare``) and with it (``mixed``)."""
    bare, mixed = bare.moved, mixed.moved  # (h, h) each
    h = bare.shape[0]
    fig, axes = new_figure(6.0, 3.0, ncols=2)
    vmax = float(max(bare.max(), mixed.max()))
    labels = [f"H{i}" for i in range(h)]
    for ax, values, title in (
        (axes[0], bare, "concat only (W_O dropped)"),
        (axes[1], mixed, "concat, then W_O"),
    ):
        _annotated_heatmap(ax, values, vmax)
        ax.set_xticks(range(h), labels)
        ax.set_yticks(range(h), labels)
        ax.set_xlabel("output slice that moved")
        ax.set_title(title, color=INK)
    axes[0].set_ylabel("head whose projections changed")
    fig.subplots_adjust(wspace=0.35)
    return fig


def one_vs_many(contrast: _Contrast) -> Figure:
    """One query's weights: a row per head, then the wide head's single row."""
    rows = np.vstack([contrast.heads, contrast.wide[None]])  # (h + 1, k_len)
    h, k_len = contrast.heads.shape
    top = rows == rows.max(axis=1, keepdims=True)
    fig, ax = new_figure(0.7 * k_len + 2.0, 0.45 * (h + 1) + 1.1)
    _annotated_heatmap(ax, rows, float(rows.max()), places=3, bold=top)
    ax.axhline(h - 0.5, color=PALETTE[1], lw=2.5)
    ax.set_yticks(range(h + 1), [f"H{i}" for i in range(h)] + ["one wide head"])
    ax.set_xticks(range(k_len), [str(j) for j in range(k_len)])
    ax.set_xlabel(
        f"weights of query token {contrast.query} over the key tokens"
        "\n(bold: largest of the row)"
    )
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    return fig


def whole_layer(w: WholeLayer) -> Figure:
    """The whole layer in one picture, every arrow labelled with its array's shape:
    X → W_Q, W_K, W_V → split into h heads → h attention maps → concatenate → W_O.

    Drawn from ``mha.worked.base_layer.whole_layer()``: the shapes are the arrays'
    shapes, the maps the layer's attention weights (rows: queries, columns: keys).
    """
    h, _, d_k = w.q_heads.shape
    width, x_unit, y_unit = 5.2, 0.52, 0.4  # inches; 10 x-units across
    fig, ax = new_figure(width, 1.0)
    ax.axis("off")
    size = 9

    def box(x: float, y: float, span: float, text: str, colour: str) -> None:
        ax.add_patch(
            Rectangle(
                (x - span / 2, y - 0.5),
                span,
                1.0,
                facecolor=to_rgba(colour, 0.15),
                edgecolor=colour,
                lw=0.8,
            )
        )
        ax.text(x, y, text, ha="center", va="center", fontsize=size, color=INK)

    def arrow(x: float, y0: float, y1: float, label: str = "") -> None:
        ax.add_patch(
            FancyArrowPatch(
                (x, y0), (x, y1), arrowstyle="-|>", mutation_scale=9, lw=0.8, color=INK
            )
        )
        if label:
            ax.text(
                x + 0.15,
                (y0 + y1) / 2,
                label,
                ha="left",
                va="center",
                fontsize=size,
                color=INK,
            )

    def shape(a: np.ndarray) -> str:
        return "(" + ", ".join(str(d) for d in a.shape) + ")"

    box(5, -0.5, 9.6, "X: " + " ".join(w.tokens), PALETTE[4])
    arrow(5, -1.0, -2.0, shape(w.x))
    projections = ((1.7, "Q", w.q, w.layer.w_q), (5, "K", w.k, w.layer.w_k))
    projections += ((8.3, "V", w.v, w.layer.w_v),)
    for x0, name, result, weight in projections:
        box(x0, -2.5, 3.1, f"× W_{name} {shape(weight)}", PALETTE[0])
        arrow(x0, -3.0, -4.0, shape(result))
        box(x0, -4.5, 3.1, name, PALETTE[0])
        arrow(x0, -5.0, -6.0)
    box(
        5,
        -6.5,
        9.6,
        f"split into h = {h} heads H0 … H{h - 1} of d_k = {d_k}",
        PALETTE[0],
    )
    arrow(5, -7.0, -7.8, f"Q_i, K_i, V_i: {shape(w.q_heads)} each")
    ax.text(
        5,
        -8.2,
        f"each head: softmax(Q_i K_iᵀ / √{d_k}), all {shape(w.weights)}",
        ha="center",
        va="center",
        fontsize=size,
        color=INK,
    )
    cols, cell = 4, 1.85
    cell_y = cell * x_unit / y_unit  # square maps
    top, vmax = -9.6, float(w.weights.max())
    n = len(w.tokens)
    step = cell / n  # one token's row or column, in x-units
    for i in range(h):
        row, col = divmod(i, cols)
        x0, y0 = 0.65 + col * 2.35, top - row * (cell_y + 0.9)
        ax.imshow(
            w.weights[i],
            cmap=CMAP,
            vmin=0,
            vmax=vmax,
            extent=(x0, x0 + cell, y0 - cell_y, y0),
            interpolation="nearest",
        )
        ax.text(
            x0 + cell / 2,
            y0 - cell_y - 0.1,
            f"H{i}",
            ha="center",
            va="top",
            fontsize=size,
            color=INK,
        )
        for t, token in enumerate(w.tokens):  # queries left of a row, keys on top
            if col == 0:
                y_t = y0 - (t + 0.5) * step * x_unit / y_unit
                ax.text(x0 - 0.06, y_t, token, ha="right", va="center", fontsize=8)
            if row == 0:
                x_t = x0 + (t + 0.5) * step
                ax.text(
                    x_t,
                    y0 + 0.1,
                    token,
                    ha="center",
                    va="bottom",
                    fontsize=8,
                    rotation=90,
                )
    y = top - (-(-h // cols)) * (cell_y + 0.9) + 0.2
    ax.imshow(  # the colour scale: the maps' weights from 0 to the largest
        np.linspace(0, vmax, 256)[None],
        cmap=CMAP,
        vmin=0,
        vmax=vmax,
        extent=(3.0, 7.0, y - 0.55, y - 0.25),
        aspect="auto",
    )
    for value, x_v in ((0.0, 3.0), (vmax / 2, 5.0), (vmax, 7.0)):
        ax.text(x_v, y - 0.6, f"{value:.2f}", ha="center", va="top", fontsize=size)
    ax.text(2.9, y - 0.4, "weight", ha="right", va="center", fontsize=size)
    y -= 1.4
    arrow(5, y, y - 1.0, f"× V_i: {shape(w.heads)}")
    box(5, y - 1.5, 9.6, f"concatenate the {h} heads", PALETTE[2])
    arrow(5, y - 2.0, y - 3.0, shape(w.concat))
    box(5, y - 3.5, 9.6, f"× W_O {shape(w.layer.w_o)}", PALETTE[2])
    arrow(5, y - 4.0, y - 5.0, "output " + shape(w.out))
    bottom = y - 5.2
    ax.set_xlim(0, 10)
    ax.set_ylim(bottom, 0.1)
    ax.set_aspect("auto")
    fig.set_size_inches(width, (0.1 - bottom) * y_unit)
    return fig
