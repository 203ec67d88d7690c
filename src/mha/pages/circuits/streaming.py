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


def _window_mask(n: int, band: int, sinks: int = 0) -> np.ndarray:
    """``(n, n)`` boolean: query t may read keys t - band + 1 .. t and 0 .. sinks - 1
    (never a later one).
    """
    if not 0 < band <= n or not 0 <= sinks <= n:
        raise ValueError(
            f"band, sinks: expected 0 < band <= n={n} and 0 <= sinks, "
            f"got band={band}, sinks={sinks}"
        )
    t = np.arange(n)
    recent = t[:, None] - t[None, :] < band
    return causal_mask(n) & (recent | (t[None, :] < sinks))


@dataclass(frozen=True)
class _Streaming:
    """Perplexities on the same tokens (queries t >= band) under the three masks."""

    n: int
    band: int
    sinks: int
    full: float
    band_only: float
    band_sinks: float


def _streaming(ids: tuple[int, ...], band: int, sinks: int) -> _Streaming:
    """Perplexity of SmolLM2 on ``ids`` under each setting (three passes)."""
    n = len(ids) - 1
    if n <= band:
        raise ValueError(
            f"ids: expected more than band + 1 = {band + 1} tokens, got {len(ids)}"
        )
    model = smollm2.load()
    rows = np.arange(band, n)  # the queries whose settings differ
    ids = np.asarray(ids)

    def perplexity(mask: np.ndarray) -> float:
        final = model.resume(model.embed(ids[:-1]), 0, mask)[0]
        return smollm2.perplexity_of(model.head(final[rows]), ids[rows + 1])

    return _Streaming(
        n=n,
        band=band,
        sinks=sinks,
        full=perplexity(causal_mask(n)),
        band_only=perplexity(_window_mask(n, band)),
        band_sinks=perplexity(_window_mask(n, band, sinks)),
    )
