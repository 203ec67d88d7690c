"""Figures of the decoding page: the step's mask for t new queries on L cached keys."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from mha.figures.style import INK, PALETTE, SMALL, new_figure


def step_masks(masks: Sequence[tuple[int, int, np.ndarray]]) -> list[Figure]:
    """One panel per ``(cached, new, mask)``: rows the new queries, columns every key,
    a filled cell where the query may read the key, cached keys in one colour and
    new keys in another, a line between the two, each group named above it.
    """
    panels = []
    for cached, new, mask in masks:
        width = cached + new
        fig, ax = new_figure(0.45 * width + 1.1, 0.45 * new + 1.25)
        colour = np.where(np.arange(width) < cached, 1, 2) * mask  # 0 blocked
        cmap = ListedColormap(["none", PALETTE[0], PALETTE[1]])
        ax.imshow(colour, cmap=cmap, vmin=0, vmax=2, aspect="equal")
        for i in range(new + 1):  # the grid, so that a blocked cell shows as empty
            ax.axhline(i - 0.5, color=INK, lw=0.5)
        for j in range(width + 1):
            ax.axvline(j - 0.5, color=INK, lw=2 if j == cached and cached else 0.5)
        ax.set_xticks(range(width), [str(j) for j in range(width)], fontsize=SMALL)
        ax.set_yticks(range(new), [str(cached + i) for i in range(new)], fontsize=SMALL)
        ax.set_xlabel("key position")
        ax.set_ylabel("query position")
        ax.tick_params(length=0)
        for side in ax.spines.values():
            side.set_visible(False)
        for start, stop, label in ((0, cached, "cached"), (cached, width, "new")):
            if stop > start:  # which keys are which, above their columns
                middle = (start + stop - 1) / 2
                ax.text(middle, -0.6, label, ha="center", va="bottom", fontsize=SMALL)
        if cached == 0:
            title = f"prefill: {new} tokens"
        else:
            title = f"{new} new on {cached} cached"
        ax.set_title(title, pad=SMALL + 8)
        fig.tight_layout(pad=0.3)
        panels.append(fig)
    return panels
