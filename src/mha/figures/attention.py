"""Figures of the scaled dot-product attention page: the √d_k study."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure

from mha.figures.style import INK, PALETTE, SMALL, new_figure

if TYPE_CHECKING:
    from mha.pages.attention import _SaturationStudy, _VarianceStudy

UNSCALED, SCALED = PALETTE[5], PALETTE[0]  # vermillion and blue: colour-blind safe


def variance_vs_dk(study: _VarianceStudy) -> Figure:
    """Empirical (markers) and theoretical (lines) score variance against d_k, log-log."""
    fig, ax = new_figure(5.6, 3.4)
    d_k = study.d_k
    ax.plot(d_k, study.theory_unscaled, color=UNSCALED, lw=1, label="d_k σ⁴ (theory)")
    ax.plot(d_k, study.unscaled, "o", color=UNSCALED, ms=5, label="Var(q·k), measured")
    ax.plot(d_k, study.theory_scaled, color=SCALED, lw=1, label="σ⁴ (theory)")
    ax.plot(
        d_k, study.scaled, "s", color=SCALED, ms=5, label="Var(q·k / √d_k), measured"
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(d_k, [str(d) for d in d_k])
    levels = 2.0 ** np.arange(0, np.log2(study.theory_unscaled.max()) + 1, 2)
    ax.set_yticks(levels * study.sigma**4, [f"{v:g}" for v in levels * study.sigma**4])
    ax.minorticks_off()
    ax.set_xlabel("d_k")
    ax.set_ylabel("variance of the score")
    ax.legend(loc="upper left", frameon=False, labelcolor=INK)
    return fig


def saturation_vs_dk(study: _SaturationStudy) -> list[Figure]:
    """Largest weight, entropy and softmax-Jacobian norm against d_k, scaled or not.

    Three panels, side by side on a wide screen, one above the other on a phone.
    """
    panels = (
        ("max_weight", "largest weight"),
        ("entropy", "entropy of the\nweights (bits)"),
        ("gradient", "typical gradient gain\n‖J‖_F/√n (log)"),
    )
    figures, axes = [], []
    for field, label in panels:
        fig, ax = new_figure(2.3, 2.5)
        for run, colour, marker, name in (
            (study.unscaled, UNSCALED, "o", "q·k"),
            (study.scaled, SCALED, "s", "q·k / √d_k"),
        ):
            ax.plot(
                study.d_k, getattr(run, field), marker=marker, ms=4, color=colour
            ).pop().set_label(name)
        ax.set_xscale("log", base=2)
        ax.set_xticks(study.d_k[::2], [str(d) for d in study.d_k[::2]])
        ax.set_xlabel("d_k")
        ax.set_title(label)
        figures.append(fig)
        axes.append(ax)
    axes[0].set_ylim(0, 1.05)
    axes[1].axhline(study.max_entropy, color=INK, lw=0.8, ls=":")
    axes[1].text(
        study.d_k[-1],
        study.max_entropy,
        "uniform",
        ha="right",
        va="bottom",
        fontsize=SMALL,
        color=INK,
    )
    axes[1].set_ylim(0, 1.15 * study.max_entropy)
    axes[2].set_yscale("log")
    low = np.floor(
        np.log10(min(study.unscaled.gradient.min(), study.scaled.gradient.min()))
    )
    levels = 10.0 ** np.arange(low, 1)
    axes[2].set_yticks(levels, [f"{v:g}" for v in levels])  # 1e-05, not 0.0000099…
    axes[2].minorticks_off()
    axes[0].legend(loc="center right", frameon=False, labelcolor=INK)
    return figures
