"""Figures of the real-heads page: the atlas of all-MiniLM-L6-v2's 72 heads and pruning.

Layers and heads are numbered from 0 in every figure, as in transformers: L1H8 is
head 8 of layer 1 (Clark et al. (2019) call it head 2-9). The maps of several heads are
small multiples: a list of figures, one per map, which wrap on a narrow screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib import patheffects
from matplotlib.cm import ScalarMappable
from matplotlib.colors import ListedColormap, Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from mha.figures.style import CMAP, DENSE, INK, PALETTE, SMALL, new_figure
from mha.pages.real_heads import KINDS, TARGETS, Atlas

if TYPE_CHECKING:
    from mha.pages.real_heads.pruning import _Pruning

# one colour and one letter per kind; "mixed" is left blank
KIND_STYLE: dict[str, tuple[str, str]] = {
    "previous token": (PALETTE[0], "P"),
    "next token": (PALETTE[4], "N"),
    "[CLS]": (PALETTE[1], "C"),
    "[SEP]": (PALETTE[5], "S"),
    "punctuation": (PALETTE[3], "."),
    "same word": (PALETTE[2], "="),
    "broad": ("#999999", "B"),
    "mixed": ("none", ""),
}
STAT_TITLES = {
    "previous": "previous token",
    "next": "next token",
    "cls": "[CLS]",
    "sep": "[SEP]",
    "punctuation": "punctuation",
    "same_word": "same word",
    "spread": "spread (entropy / log n)",
}
# cell letters: white with a black outline, legible on every cell colour in light and
# dark mode (the cells keep their colours; only INK follows the page)
OUTLINE = [patheffects.withStroke(linewidth=2, foreground="black")]


def _grid_axes(ax, n_layers: int, n_heads: int) -> None:
    """Layers down, heads across, both numbered from 0."""
    ax.set_xticks(range(n_heads), [str(h) for h in range(n_heads)])
    ax.set_yticks(range(n_layers), [str(i) for i in range(n_layers)])
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)


def kind_grid(atlas: Atlas) -> Figure:
    """All 72 heads as a layers x heads grid, each cell coloured and lettered by kind."""
    n_layers, n_heads = atlas.kinds.shape
    kinds = list(KINDS)
    codes = np.vectorize(kinds.index)(atlas.kinds)  # (layers, heads) int
    colours = [
        KIND_STYLE[k][0] if KIND_STYLE[k][0] != "none" else "#ffffff00" for k in kinds
    ]
    fig, ax = new_figure(5.0, 4.2)
    ax.imshow(codes, cmap=ListedColormap(colours), vmin=-0.5, vmax=len(kinds) - 0.5)
    for layer in range(n_layers):
        for head in range(n_heads):
            letter = KIND_STYLE[atlas.kinds[layer, head]][1]
            if letter:
                ax.text(
                    head,
                    layer,
                    letter,
                    ha="center",
                    va="center",
                    fontsize=SMALL,
                    color="white",
                    path_effects=OUTLINE,
                )
    ax.set_xticks(np.arange(-0.5, n_heads), minor=True)
    ax.set_yticks(np.arange(-0.5, n_layers), minor=True)
    ax.grid(which="minor", color=INK, linewidth=0.4)
    ax.tick_params(which="minor", length=0)
    _grid_axes(ax, n_layers, n_heads)
    handles = [
        Patch(
            facecolor=KIND_STYLE[k][0],
            edgecolor=INK,
            linewidth=0.4,
            label=f"{KIND_STYLE[k][1] or ' '}  {k} ({atlas.count(k)})",
        )
        for k in atlas.present()
    ]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    return fig


def statistic_grids(atlas: Atlas) -> list[Figure]:
    """One layers x heads heatmap per statistic, all on the same 0-1 colour scale.

    Small multiples: one figure per map, then one for the colour bar.
    """
    n_layers, n_heads = atlas.kinds.shape
    panels = []
    for name in [*TARGETS, "spread"]:
        fig, ax = new_figure(3.1, 2.1)
        ax.imshow(atlas.statistics[name], cmap=CMAP, vmin=0, vmax=1)
        ax.set_title(STAT_TITLES[name])
        _grid_axes(ax, n_layers, n_heads)
        panels.append(fig)
    fig, ax = new_figure(3.1, 0.9)
    scale = ScalarMappable(Normalize(0, 1), CMAP)
    fig.colorbar(scale, cax=ax, orientation="horizontal", label="mean over word tokens")
    return [*panels, fig]


def typical_heads(atlas: Atlas, example: int) -> list[Figure]:
    """Heatmaps of the typical head of every kind present, on seed sentence ``example``.

    Row i of a heatmap is token i's attention over the tokens (columns). Small
    multiples: one figure per kind, each narrow enough for a phone at its natural
    size, so a long sentence's labels can be ``DENSE``.
    """
    seed = atlas.examples[example]
    n = len(seed.tokens)
    side = 3.4 if n > 12 else 2.2
    fontsize = DENSE if n > 12 else SMALL
    panels = []
    for kind in atlas.present():
        layer, head = atlas.typical(kind)
        fig, ax = new_figure(side, side)
        ax.imshow(seed.weights[layer, head], cmap=CMAP, vmin=0, vmax=1)
        ax.set_title(f"{kind}: L{layer}H{head}", fontsize=SMALL)
        ax.set_xticks(range(n), seed.tokens, rotation=90, fontsize=fontsize)
        ax.set_yticks(range(n), seed.tokens, fontsize=fontsize)
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
        panels.append(fig)
    return panels


def pruning_damage(result: _Pruning) -> list[Figure]:
    """Left: 1 - cosine when each head alone is removed. Right: each layer's heads.

    Two panels, side by side on a wide screen, one above the other on a phone.
    """
    n_layers, n_heads = result.single_cosine.shape
    heads, left = new_figure(4.0, 2.6)
    image = left.imshow(result.damage, cmap=CMAP, vmin=0)
    _grid_axes(left, n_layers, n_heads)
    left.set_title("one head removed")
    heads.colorbar(image, ax=left, label="1 − cosine", shrink=0.9)
    layers, right = new_figure(2.6, 2.6)
    index = np.arange(n_layers)
    right.barh(index, 1 - result.layer_cosine, color=PALETTE[0])
    right.set_yticks(index)
    right.invert_yaxis()
    right.set_ylabel("layer")
    right.set_xlabel("1 − cosine")
    right.set_title("all heads of a layer removed")
    return [heads, layers]


def cumulative_pruning(
    result: _Pruning, papers: tuple[tuple[float, str], ...]
) -> Figure:
    """Quality against heads removed (least damaging first), with the shares of heads
    that ``papers`` (``(share, name)``, dashed then dotted) pruned.
    """
    fig, ax = new_figure(5.6, 3.4)
    ax.plot(
        result.counts,
        result.cumulative_cosine,
        marker="o",
        markersize=3,
        label="cosine to the unpruned embeddings",
    )
    ax.plot(
        result.counts,
        result.cumulative_retrieval,
        marker="s",
        markersize=3,
        label="retrieval accuracy",
    )
    for (share, paper), style in zip(papers, ("--", ":"), strict=True):
        x = share * result.n_heads
        ax.axvline(x, color=INK, linestyle=style, linewidth=0.8)
        ax.text(
            x,
            0.02,
            f" {paper}: {share:.0%}",
            rotation=90,
            va="bottom",
            fontsize=SMALL,
            transform=ax.get_xaxis_transform(),
        )
    ax.set_xlim(0, result.n_heads)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("heads removed, least damaging first")
    ax.set_ylabel("quality")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1)
    return fig
