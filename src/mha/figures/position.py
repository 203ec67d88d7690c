"""Figures of the position page: absolute encodings compared, RoPE's frequencies and
long-range decay, and two real previous-token heads by offset."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Arc

from mha.figures.style import CMAP, INK, PALETTE, SMALL, new_figure


def similarity(sinusoidal: np.ndarray, learned: np.ndarray) -> list[Figure]:
    """Two panels: the cosine similarity ``(n, n)`` of every two positions' vectors,
    sinusoidal and learned, on one colour scale from 0 to 1.
    """
    panels = []
    titles = ("sinusoidal (fixed)", "MiniLM (learned)")
    for title, matrix in zip(titles, (sinusoidal, learned), strict=True):
        fig, ax = new_figure(3.2, 3.0)
        image = ax.imshow(matrix, cmap=CMAP, vmin=0, vmax=1)
        ax.set_title(title)
        ax.set_xlabel("position")
        ax.set_ylabel("position")
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="cosine")
        fig.tight_layout()
        panels.append(fig)
    return panels


def frequencies(wavelengths: np.ndarray, context: int) -> Figure:
    """Tokens per full turn of each rotation pair (log scale), against the
    ``context`` length.
    """
    fig, ax = new_figure(5.0, 2.8)
    pairs = np.arange(len(wavelengths))
    ax.plot(pairs, wavelengths, "o", color=PALETTE[0], ms=4, label="one turn of pair j")
    ax.axhline(context, color=INK, linestyle="--", linewidth=1, label="trained context")
    ax.set_yscale("log")
    ax.set_xlabel("pair j")
    ax.set_ylabel("tokens per turn (log)")
    ax.legend(loc="upper left")
    fig.tight_layout()
    return fig


def decay(
    distances: np.ndarray, bound: np.ndarray, ones: np.ndarray, random_mean: np.ndarray
) -> Figure:
    """Three curves over the query-key distance, each divided by its value at 0:
    Su et al.'s bound, the score of q = k = all ones, the mean |score| of random q, k.
    """
    fig, ax = new_figure(5.0, 3.4)
    curves = (
        (bound, "-", "Su et al.'s bound"),
        (ones, "--", "q = k = all ones"),
        (random_mean, ":", "random q, k (mean |score|)"),
    )
    for i, (values, style, label) in enumerate(curves):
        ax.plot(distances, values / values[0], style, color=PALETTE[i], label=label)
    ax.axhline(0, color=INK, linewidth=0.5)
    ax.set_xlabel("distance between query and key (tokens)")
    ax.set_ylabel("relative to distance 0")
    ax.set_xlim(distances[0], distances[-1])
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2)
    fig.tight_layout()
    return fig


def previous_token(
    minilm: np.ndarray, smollm2: np.ndarray, offsets: int
) -> list[Figure]:
    """Two panels of bars: a head's mean weight on the key at each offset from its
    query. ``minilm`` runs from ``offsets - 1`` tokens back to as many ahead,
    ``smollm2`` from 0 to ``offsets - 1`` back (it cannot look ahead).
    """
    panels = []
    runs = (
        ("MiniLM (learned positions)", np.arange(1 - offsets, offsets), minilm),
        ("SmolLM2 (RoPE)", -np.arange(offsets), smollm2),
    )
    for i, (title, keys, weights) in enumerate(runs):
        fig, ax = new_figure(0.8 + 0.27 * len(keys), 2.6)  # about a bar per 0.27 in
        ax.bar(keys, weights, 0.7, color=PALETTE[i])
        ax.set_xticks(keys)
        ax.set_ylim(0, 1)
        ax.set_title(title)
        ax.set_xlabel("key position − query position")
        ax.set_ylabel("mean weight")
        fig.tight_layout()
        panels.append(fig)
    return panels


def pair(q: np.ndarray, k: np.ndarray, theta: float, placed: tuple) -> list[Figure]:
    """One RoPE pair in the plane, one panel a placement (``m``, ``n``, turned ``q``
    and ``k``, their ``dot``): the unrotated pair dashed, the turned one solid, an
    arc for each angle turned, the dot product in the title.
    """
    reach = 1.25 * max(np.linalg.norm(q), np.linalg.norm(k))
    panels = []
    for p in placed:
        fig, ax = new_figure(3.3, 3.5)
        for vector, turned, position, colour, name in (
            (q, p.q, p.m, PALETTE[0], "q"),
            (k, p.k, p.n, PALETTE[1], "k"),
        ):
            style = {"color": colour, "lw": 1.8}
            ax.annotate("", turned, (0, 0), arrowprops={"arrowstyle": "-|>", **style})
            ax.annotate(
                "",
                vector,
                (0, 0),
                arrowprops={"arrowstyle": "-|>", "ls": "--", "alpha": 0.6, **style},
            )
            start = np.degrees(np.arctan2(vector[1], vector[0]))
            radius = (0.4 if name == "q" else 0.65) * np.linalg.norm(vector)
            ax.add_patch(
                Arc(
                    (0, 0),
                    2 * radius,
                    2 * radius,
                    theta1=start,
                    theta2=start + np.degrees(position * theta),
                    color=colour,
                    lw=1,
                )
            )
            ax.text(
                *(1.08 * turned),
                f"{name} at {position}",
                color=colour,
                ha="center",
                va="center",
                fontsize=SMALL,
            )
        ax.set_title(
            f"m = {p.m}, n = {p.n}: angles {p.m}θ and {p.n}θ\npair's q · k = {p.dot:.3f}",
            fontsize=SMALL,
        )
        ax.set_xlim(-reach, reach)
        ax.set_ylim(-reach, reach)
        ax.set_aspect("equal")
        ax.axhline(0, color=INK, lw=0.4, alpha=0.4)
        ax.axvline(0, color=INK, lw=0.4, alpha=0.4)
        ax.set_xticks([])
        ax.set_yticks([])
        for spine in ax.spines.values():
            spine.set_visible(False)
        panels.append(fig)
    return panels
