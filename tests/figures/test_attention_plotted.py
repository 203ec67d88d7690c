"""The √d_k figures draw the page's measured and theoretical variances, and its
softmax statistics, each under the name of the scores it belongs to."""

from __future__ import annotations

import numpy as np

from tests.figures.drawn import assert_series, drawn


def test_variance_vs_dk_puts_each_measurement_and_theory_under_its_name():
    p, (panel,) = drawn("attention", "variance_vs_dk")
    v = p.variance
    assert_series(
        panel.lines,
        {
            "d_k σ⁴ (theory)": [v.d_k, v.theory_unscaled],
            "Var(q·k), measured": [v.d_k, v.unscaled],
            "σ⁴ (theory)": [v.d_k, v.theory_scaled],
            "Var(q·k / √d_k), measured": [v.d_k, v.scaled],
        },
    )
    assert panel.xticks == [str(d) for d in v.d_k]


def test_saturation_vs_dk_puts_each_statistic_of_each_score_in_its_panel():
    p, panels = drawn("attention", "saturation_vs_dk")
    s = p.saturation
    fields = ("max_weight", "entropy", "gradient")
    assert len(panels) == len(fields)
    for panel, field in zip(panels, fields, strict=True):
        assert_series(
            panel.lines,
            {
                "q·k": [s.d_k, getattr(s.unscaled, field)],
                "q·k / √d_k": [s.d_k, getattr(s.scaled, field)],
            },
        )
        assert panel.xticks == [str(d) for d in s.d_k[::2]]
    assert panels[1].title.startswith("entropy")
    (uniform,) = [v for k, v in panels[1].lines.items() if k.startswith("_")]
    assert np.allclose(uniform[1], s.max_entropy) and panels[1].texts == ["uniform"]
