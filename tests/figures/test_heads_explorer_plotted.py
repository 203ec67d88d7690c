"""The heads explorer's static figure draws each head's weights under its own title,
most heads first, with the sentence's tokens on each head count's first map."""

from __future__ import annotations

import numpy as np

from mha.figures.plotted import plotted
from mha.pages.heads_explorer import page
from tests.figures.from_page import draw


def test_heatmaps_draws_each_heads_weights_under_its_title_and_the_tokens():
    p = page()
    (static,) = p.figures["heatmaps"].data
    fig = draw(p, "heatmaps")
    panels = [panel for panel in plotted(fig) if panel.images]
    maps = list(zip([ax for ax in fig.axes if ax.images], panels, strict=True))
    heads = [
        (config, i, head)
        for config in sorted(static["configs"], key=lambda c: -c["n_heads"])
        for i, head in enumerate(config["heads"])
    ]
    assert len(maps) == len(heads)
    for (ax, panel), (config, i, head) in zip(maps, heads, strict=True):
        (image,) = panel.images
        assert np.array_equal(image, [row["weights"] for row in head["rows"]])
        title = ax.get_title(loc="left")  # plotted reads the centred title only
        assert title.replace("\n", " ") == f"{config['label']}, H{i}: {head['name']}"
        labels = list(p.tokens) if i == 0 else [""] * len(p.tokens)
        assert panel.xticks == labels and panel.yticks == labels


def test_heatmaps_show_the_weights_the_page_quotes_under_each_heads_title():
    p = page()
    fig = draw(p, "heatmaps")
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.images]
    panels = [panel for panel in plotted(fig) if panel.images]
    maps = {  # "4 heads, H0": its weights
        title.split(":")[0]: panel.images[0]
        for title, panel in zip(titles, panels, strict=True)
    }
    first, second = (i for i, token in enumerate(p.tokens) if token == "the")
    cat, mat = p.tokens.index("cat"), p.tokens.index("mat")
    quoted = {  # (query, key): the page's weight per head, by head count
        "4 heads": {
            (first, second): p.patterns.the_to_the,
            (cat, mat): p.patterns.cat_to_mat,
        },
        "2 heads": {(first, second): p.patterns.two_heads_the_to_the},
    }
    for label, cells in quoted.items():
        for (query, key), weights in cells.items():
            for i, weight in enumerate(weights):
                drawn = maps[f"{label}, H{i}"][query, key]
                assert abs(drawn - weight) <= 5e-5  # the explorer's data keep 4 places
