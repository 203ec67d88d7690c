"""The hull figure draws the page's value vectors, their hull and the outputs."""

from __future__ import annotations

import numpy as np

from tests.figures.drawn import assert_series, drawn


def test_convex_hull_draws_the_values_their_hull_and_the_outputs():
    p, (panel,) = drawn("ffn", "convex_hull")
    assert_series(
        panel.lines,
        {"value vectors": p.hull.values.T, "outputs": p.hull.outputs.T},
    )
    (outline,) = panel.patches.values()
    assert np.allclose(outline[: len(p.hull.hull)], p.hull.hull)
    assert panel.patches.keys() == {"convex hull of the values"}
