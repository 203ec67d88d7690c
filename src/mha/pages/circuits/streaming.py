"""The StreamingLLM experiment of Xiao et al. (2023) on SmolLM2, one masked pass each.

Each query t reads either every earlier key (``full``), the last ``band`` keys only
(``band``: a sliding window), or the last ``band`` keys and the first ``sinks`` tokens
(``band + sinks``). Run as one whole-sequence pass per setting under its mask
(``SmolLM2.resume``): the tokens keep their positions, all inside SmolLM2's context,
so no position is re-assigned as a cache that evicts tokens would have to. The
settings differ only for queries t >= band; the perplexity is measured on those, and
the head runs on those rows only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha.attention import causal_mask
from mha.pretrained import smollm2


def _window_mask(n: int, band: int, sinks: int = 0, first: int = 0) -> np.ndarray:
    """``(n, n)`` boolean: query t may read keys t - band + 1 .. t and the ``sinks``
    tokens from ``first`` on (never a later one).
    """
    if not 0 < band <= n or sinks < 0 or not 0 <= first <= n - sinks:
        raise ValueError(
            f"band, sinks, first: expected 0 < band <= n={n}, 0 <= sinks and "
            f"0 <= first <= n - sinks, got band={band}, sinks={sinks}, first={first}"
        )
    t = np.arange(n)
    recent = t[:, None] - t[None, :] < band
    kept = (first <= t[None, :]) & (t[None, :] < first + sinks)
    return causal_mask(n) & (recent | kept)


@dataclass(frozen=True)
class _Streaming:
    """Perplexities on the same tokens (queries t >= band) under the three masks."""

    n: int
    band: int
    sinks: int
    full: float
    band_only: float
    band_sinks: float


def _perplexity(model: smollm2.SmolLM2, ids: np.ndarray, band: int, mask) -> float:
    """Perplexity on ``ids`` of the queries t >= ``band``, one pass under ``mask``."""
    n = len(ids) - 1
    if n <= band:
        raise ValueError(
            f"ids: expected more than band + 1 = {band + 1} tokens, got {len(ids)}"
        )
    rows = np.arange(band, n)  # the queries whose settings differ
    final = model.resume(model.embed(ids[:-1]), 0, mask)[0]
    return smollm2.perplexity_of(model.head(final[rows]), ids[rows + 1])


def _streaming(ids: tuple[int, ...], band: int, sinks: int) -> _Streaming:
    """Perplexity of SmolLM2 on ``ids`` under each setting (three passes)."""
    model, ids, n = smollm2.load(), np.asarray(ids), len(ids) - 1

    def perplexity(mask: np.ndarray) -> float:
        return _perplexity(model, ids, band, mask)

    return _Streaming(
        n=n,
        band=band,
        sinks=sinks,
        full=perplexity(causal_mask(n)),
        band_only=perplexity(_window_mask(n, band)),
        band_sinks=perplexity(_window_mask(n, band, sinks)),
    )


@dataclass(frozen=True)
class _Variants:
    """Perplexities on the same tokens as ``Streaming``: which tokens beside the
    window matter."""

    later_kept: float  # the window and tokens sinks .. 2 sinks - 1, not the first
    wide: float  # a window of band + sinks, no sinks


def _variants(ids: tuple[int, ...], band: int, sinks: int) -> _Variants:
    """Two other settings (two passes): tokens ``sinks`` .. ``2 sinks - 1`` kept
    beside the window instead of the first ``sinks``, and a window of
    ``band + sinks`` alone (as many keys as the window and the sinks).
    """
    model, ids, n = smollm2.load(), np.asarray(ids), len(ids) - 1
    if not 0 < 2 * sinks <= n:
        raise ValueError(f"sinks: expected 0 < 2 sinks <= {n}, got {sinks}")
    return _Variants(
        later_kept=_perplexity(model, ids, band, _window_mask(n, band, sinks, sinks)),
        wide=_perplexity(model, ids, band, _window_mask(n, band + sinks)),
    )
