"""The heads explorer as a static figure: every heatmap at once, for print and no-JS."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from mha.figures.style import CMAP, SMALL, new_figure


def heatmaps(example: dict) -> Figure:
    """Every heatmap of an explorer example (``mha.pages.heads_explorer``), two a row.

    Rows of a heatmap are queries, columns keys, colour the attention weight
    (cividis, 0 to 1). The most heads come first; token labels sit on the first
    heatmap of each head count (the others share its rows and columns). Each head count
    starts a row of its own.
    """
    configs = sorted(example["configs"], key=lambda c: -c["n_heads"])
    keys = [k["token"] for k in example["keys"]]
    queries = [q["token"] for q in example["queries"]]
    columns = 2  # maps a row: legible on a desktop column, and on a phone
    grid = _pack(configs, columns)  # rows of (config, head index) slots
    cell = 0.2  # inches per heatmap cell
    fig, axes = new_figure(
        columns * (len(keys) * cell + 0.6),
        len(grid) * (len(queries) * cell + 1.2),
        nrows=len(grid),
        ncols=columns,
        squeeze=False,
        layout="constrained",
    )
    for slots, row in zip(grid, axes, strict=True):
        for slot, ax in zip(slots + [None] * columns, row, strict=False):
            if slot is None:
                ax.set_visible(False)
                continue
            config, i = slot
            head = config["heads"][i]
            weights = np.array([r["weights"] for r in head["rows"]])  # (n_q, n_k)
            image = ax.imshow(weights, cmap=CMAP, vmin=0, vmax=1, interpolation="none")
            name = head["name"].replace(" + ", "\n+ ")
            ax.set_title(f"{config['label']}, H{i}: {name}", fontsize=SMALL, loc="left")
            first = i == 0  # token labels on a config's first heatmap only
            ax.set_xticks(np.arange(len(keys)), keys if first else [])
            ax.set_yticks(np.arange(len(queries)), queries if first else [])
            ax.tick_params(bottom=False, left=False)
            ax.tick_params(axis="x", labelrotation=90)
            for spine in ax.spines.values():
                spine.set_visible(False)
    bar = fig.colorbar(image, ax=axes, shrink=0.5, aspect=30)
    bar.set_label("attention weight")
    return fig


def _pack(configs: list[dict], columns: int) -> list[list]:
    """Lay the heatmaps out in rows of ``columns``, each head count on rows of its own."""
    rows: list[list] = []
    for config in configs:
        slots = [(config, i) for i in range(len(config["heads"]))]
        rows += [slots[k : k + columns] for k in range(0, len(slots), columns)]
    return rows
