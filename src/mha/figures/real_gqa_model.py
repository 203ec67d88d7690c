"""Figures of the page "A real grouped-query model" (SmolLM2-135M in NumPy)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from mha.figures.style import PALETTE, new_figure


def mqa_by_layer(
    layer_perplexity: Sequence[float], published: float, every_layer: float
) -> Figure:
    """Perplexity when one layer at a time is mean-pooled to a single K/V head (MQA).

    One bar per layer (log scale), beside the model as published and the model with
    every layer converted at once.
    """
    values = np.asarray(layer_perplexity, dtype=float)
    layers = np.arange(len(values))
    fig, ax = new_figure(6.4, 3.2)
    ax.bar(layers, values, color=PALETTE[0], width=0.8, label="MQA in this layer only")
    ax.axhline(
        every_layer, color=PALETTE[5], ls="--", label="MQA in every layer at once"
    )
    ax.axhline(published, color=PALETTE[2], ls=":", label="as published (3 K/V heads)")
    ax.set_yscale("log")
    ax.set_ylim(published / 1.25, every_layer * 2)
    ax.set_xticks(layers[::3], [str(i) for i in layers[::3]])
    ax.set_xlabel("layer converted to one K/V head (mean-pooled, no retraining)")
    ax.set_ylabel("perplexity (log scale)")
    ax.legend(loc="center right")
    return fig
