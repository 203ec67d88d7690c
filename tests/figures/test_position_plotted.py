"""The position page's figures draw the page's studies, each under its own title or
label: the two similarity maps, the wavelengths, the three decay curves, the offsets."""

from __future__ import annotations

import numpy as np

from mha.figures.plotted import plotted
from mha.pages.position import page
from tests.figures.from_page import draw


def test_similarity_draws_the_sinusoidal_and_the_learned_map_under_their_titles():
    a = page().absolute
    drawn = {panel.title: panel.images for panel in plotted(draw(page(), "similarity"))}
    assert drawn.keys() == {"sinusoidal (fixed)", "MiniLM (learned)"}
    assert np.array_equal(drawn["sinusoidal (fixed)"][0], a.sinusoidal)
    assert np.array_equal(drawn["MiniLM (learned)"][0], a.learned)


def test_frequencies_draws_each_pairs_wavelength_and_the_trained_context():
    p = page()
    (panel,) = plotted(draw(p, "frequencies"))
    pairs, turns = panel.lines["one turn of pair j"]
    assert pairs.tolist() == list(range(p.rope.d_k // 2))
    assert np.array_equal(turns, p.rope.wavelengths)
    assert round(turns[-1]) == p.slowest_wavelength
    assert panel.lines["trained context"][1].tolist() == [p.rope.context] * 2


def test_decay_draws_each_curve_relative_to_distance_0_under_its_label():
    p = page()
    (panel,) = plotted(draw(p, "decay"))
    curves = {
        "Su et al.'s bound": p.rope.bound,
        "q = k = all ones": p.rope.ones,
        "random q, k (mean |score|)": p.rope.random_mean,
    }
    for label, values in curves.items():
        x, y = panel.lines[label]
        assert np.array_equal(x, p.rope.distances)
        assert np.allclose(y, values / values[0])
    assert panel.lines["Su et al.'s bound"][1, -1] == p.bound_share
    assert panel.lines["q = k = all ones"][1, -1] == p.ones_share
    random = panel.lines["random q, k (mean |score|)"][1]
    assert (random.min(), random.max()) == p.random_range


def test_previous_token_draws_each_models_weight_at_each_offset():
    p = page()
    minilm, smollm2 = plotted(draw(p, "heads"))
    back = np.arange(p.offsets)  # tokens back from the query, 0 first
    assert minilm.title.startswith("MiniLM") and smollm2.title.startswith("SmolLM2")
    (weights,) = minilm.bars.values()
    assert np.array_equal(weights, p.real.minilm_offsets)
    assert minilm.xticks == [_signed(d) for d in np.arange(1 - p.offsets, p.offsets)]
    assert weights[minilm.xticks.index(_signed(-1))] == p.minilm_previous
    (weights,) = smollm2.bars.values()
    assert np.array_equal(weights, p.real.smollm2_offsets)
    assert smollm2.xticks == [_signed(-d) for d in back]


def _signed(offset: int) -> str:
    """An offset as a matplotlib tick label writes it (a true minus sign)."""
    return str(offset).replace("-", "\N{MINUS SIGN}")
