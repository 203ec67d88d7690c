"""Figures of the real-heads page: the atlas of all-MiniLM-L6-v2's 72 heads and pruning.

Layers and heads are numbered from 1 in every figure, as in Clark et al. (2019):
"head 2-9" is head 9 of layer 2.
"""

from __future__ import annotations

import numpy as np
from matplotlib import patheffects
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from mha.data import michel2019, voita2019
from mha.experiments.pruning import Pruning
from mha.figures.style import CMAP, INK, PALETTE, new_figure
from mha.pages.real_heads import KINDS, TARGETS, Atlas, head_name

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


def _grid_axes(ax, n_layers: int, n_heads: int, fontsize: float = 8) -> None:
    ax.set_xticks(
        range(n_heads), [str(h + 1) for h in range(n_heads)], fontsize=fontsize
    )
    ax.set_yticks(
        range(n_layers), [str(i + 1) for i in range(n_layers)], fontsize=fontsize
    )
    ax.set_xlabel("head", fontsize=fontsize)
    ax.set_ylabel("layer", fontsize=fontsize)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)


def kind_grid(atlas: Atlas) -> Figure:
    """All 72 heads as a layers x heads grid, each cell coloured and lettered by kind.

    ```python
    from mha.pages.real_heads import atlas
    from mha.figures.real_heads import kind_grid

    fig = kind_grid(atlas())
    assert len(fig.axes[0].texts) == 72 - atlas().count("mixed")
    ```
    """
    n_layers, n_heads = atlas.kinds.shape
    kinds = list(KINDS)
    codes = np.vectorize(kinds.index)(atlas.kinds)  # (layers, heads) int
    colours = [
        KIND_STYLE[k][0] if KIND_STYLE[k][0] != "none" else "#ffffff00" for k in kinds
    ]
    fig, ax = new_figure(7.0, 3.6)
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
                    fontsize=8,
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
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return fig


def statistic_grids(atlas: Atlas) -> Figure:
    """One layers x heads heatmap per statistic, all on the same 0-1 colour scale.

    ```python
    from mha.pages.real_heads import atlas
    from mha.figures.real_heads import statistic_grids

    assert len(statistic_grids(atlas()).axes) == 9  # 7 maps, 1 spare, 1 colour bar
    ```
    """
    names = [*TARGETS, "spread"]
    fig, axes = new_figure(9.0, 4.6, nrows=2, ncols=4)
    n_layers, n_heads = atlas.kinds.shape
    image = None
    for ax, name in zip(axes.flat, names, strict=False):
        image = ax.imshow(atlas.statistics[name], cmap=CMAP, vmin=0, vmax=1)
        ax.set_title(STAT_TITLES[name], fontsize=9)
        _grid_axes(ax, n_layers, n_heads, fontsize=6)
    axes.flat[-1].axis("off")
    fig.colorbar(image, ax=axes.flat[-1], fraction=0.5, label="mean over word tokens")
    fig.tight_layout()
    return fig


def typical_heads(atlas: Atlas, example: int) -> Figure:
    """Heatmaps of the typical head of every kind present, on seed sentence ``example``.

    Row i of a heatmap is token i's attention over the tokens (columns).

    ```python
    from mha.pages.real_heads import atlas
    from mha.figures.real_heads import typical_heads

    fig = typical_heads(atlas(), 1)
    assert len(fig.axes) >= len(atlas().present())
    ```
    """
    seed = atlas.examples[example]
    kinds = atlas.present()
    n = len(seed.tokens)
    ncols = min(3, len(kinds))
    nrows = -(-len(kinds) // ncols)
    side = 3.1 if n > 12 else 2.4
    fig, axes = new_figure(
        ncols * side + 0.6,
        nrows * (side + 0.35),
        nrows=nrows,
        ncols=ncols,
        squeeze=False,
    )
    fontsize = 5.5 if n > 12 else 7
    for ax in axes.flat[len(kinds) :]:
        ax.axis("off")
    for ax, kind in zip(axes.flat, kinds, strict=False):
        layer, head = atlas.typical(kind)
        ax.imshow(seed.weights[layer, head], cmap=CMAP, vmin=0, vmax=1)
        ax.set_title(f"{kind}: head {head_name(layer, head)}", fontsize=8)
        ax.set_xticks(range(n), seed.tokens, rotation=90, fontsize=fontsize)
        ax.set_yticks(range(n), seed.tokens, fontsize=fontsize)
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
    fig.tight_layout()
    return fig


def pruning_damage(result: Pruning) -> Figure:
    """Left: 1 - cosine when each head alone is removed. Right: each layer's heads.

    ```python
    from mha.experiments.pruning import pruning
    from mha.figures.real_heads import pruning_damage

    fig = pruning_damage(pruning())
    assert len(fig.axes) == 3  # heatmap, its colour bar, the layer bars
    ```
    """
    fig, (left, right) = new_figure(9.0, 3.0, ncols=2, width_ratios=(2.2, 1))
    n_layers, n_heads = result.single_cosine.shape
    image = left.imshow(result.damage, cmap=CMAP, vmin=0)
    _grid_axes(left, n_layers, n_heads)
    left.set_title("one head removed", fontsize=9)
    fig.colorbar(image, ax=left, label="1 − cosine", shrink=0.9)
    layers = np.arange(1, n_layers + 1)
    right.barh(layers, 1 - result.layer_cosine, color=PALETTE[0])
    right.set_yticks(layers)
    right.invert_yaxis()
    right.set_ylabel("layer")
    right.set_xlabel("1 − cosine")
    right.set_title("all heads of a layer removed", fontsize=9)
    fig.tight_layout()
    return fig


def cumulative_pruning(result: Pruning) -> Figure:
    """Quality against heads removed (least damaging first), with the papers' shares.

    ```python
    from mha.experiments.pruning import pruning
    from mha.figures.real_heads import cumulative_pruning

    fig = cumulative_pruning(pruning())
    assert len(fig.axes[0].lines) == 4  # two curves, two reference lines
    ```
    """
    fig, ax = new_figure(7.0, 3.4)
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
    for share, paper, style in (
        (michel2019.BERT_PRUNABLE, michel2019.SHORT, "--"),
        (voita2019.pruned_share(), voita2019.SHORT, ":"),
    ):
        x = share * result.n_heads
        ax.axvline(x, color=INK, linestyle=style, linewidth=0.8)
        ax.text(
            x,
            0.02,
            f" {paper}: {share:.0%}",
            rotation=90,
            va="bottom",
            fontsize=7,
            transform=ax.get_xaxis_transform(),
        )
    ax.set_xlim(0, result.n_heads)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("heads removed, least damaging first")
    ax.set_ylabel("quality")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8)
    return fig
