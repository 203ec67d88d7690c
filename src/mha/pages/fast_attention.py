"""Fast attention, the online softmax: what ``docs/fast-attention.md`` prints.

``page()`` hands the page a worked example of the rescaling step (one query's keys
read in blocks), the peak memory of ``attend`` and ``tiled_attention`` measured with
tracemalloc (n = 256 to 2,048 in the build, cached; to 8,192 in ``make bench``), the
multiply-adds of both paths, and the figure of the memory.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mha.attention import attend, causal_mask, softmax, tiled_attention
from mha.data import dao2022
from mha.support import measured
from mha.support.cache import cached
from mha.support.page import Fact, Figure, Page

# The worked example: one query's scores over six keys and the keys' values (one
# number each, so that every step is a number), read two keys at a time.
SCORES = np.array([1.0, 0.5, 3.0, 2.0, 2.5, -1.0])
VALUES = np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])
BLOCK = 2

_SIZES = (256, 512, 1024, 2048)  # n measured by the build; make bench goes further
_D_K = 64  # every head of the memory study: d_k = d_v = 64, float64
_TILE = 128  # tiled_attention's default block
_ITEMSIZE = np.dtype(np.float64).itemsize
_DENSE_ARRAYS = 3  # attend holds the scores, the masked scores and the weights


@dataclass(frozen=True)
class _Step:
    """The running state after one block of keys (``_online_steps``)."""

    keys: tuple[int, ...]  # the block's key positions
    block_max: float
    m: float  # running maximum after the block
    rescale: float  # exp(m_before - m): what the old sum and output are multiplied by
    s: float  # running sum of exp(score - m)
    o: float  # running output: sum of exp(score - m) * value

    @property
    def so_far(self) -> float:
        """``o / s``: the softmax-weighted mean of the values seen so far."""
        return self.o / self.s


def _online_steps(
    scores: np.ndarray, values: np.ndarray, block: int
) -> tuple[_Step, ...]:
    """The online softmax of one query, a block of keys at a time: each step's state."""
    m, s, o, steps = -math.inf, 0.0, 0.0, []
    for j in range(0, len(scores), block):
        x, v = scores[j : j + block], values[j : j + block]
        m_new = max(m, float(x.max()))
        rescale = math.exp(m - m_new)  # 0 before the first block
        p = np.exp(x - m_new)
        s = s * rescale + float(p.sum())
        o = o * rescale + float(p @ v)
        steps.append(
            _Step(tuple(range(j, j + len(x))), float(x.max()), m_new, rescale, s, o)
        )
        m = m_new
    return tuple(steps)


def _peak_bytes(fn: Callable[[], object]) -> int:
    """The largest allocation total (bytes) while ``fn()`` runs, from tracemalloc,
    which sees NumPy's array buffers.

    ``fn()`` runs once untraced first: what a first call allocates and keeps (a lazy
    import, a cache filled) varies with what the process did before, by a few hundred
    bytes, and a build that measured it would not be byte-identical to the next.
    """
    fn()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _memory(sizes: tuple[int, ...]) -> list[dict]:
    """Peak bytes of causal attention over ``n`` tokens, one head of d_k = 64 in
    float64, through ``attend`` (the whole n×n) and ``tiled_attention`` (blocks of 128).

    Measured in a fresh Python process: tracemalloc counts every allocation of the
    process while ``fn()`` runs, another thread's too (a build's progress lines, a
    server's), and which small objects the traced code allocates depends on what the
    process did before; in the build's process the peaks came out some hundred bytes
    apart from one process to the next, and two builds, or a build and a test, printed
    different values. A fresh process runs nothing else, with the same history.
    """
    code = (
        "import json, sys\n"
        "from mha.pages.fast_attention import _peaks\n"
        "print(json.dumps([_peaks(n) for n in json.loads(sys.argv[1])]))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, json.dumps(list(sizes))],
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONHASHSEED": "0"},
    )
    if run.returncode:
        raise RuntimeError(f"the memory study's process failed:\n{run.stderr}")
    return json.loads(run.stdout.splitlines()[-1])


def _peaks(n: int) -> dict:
    """Both paths' peak bytes at ``n`` tokens, beside the three n×n arrays and the
    output."""
    rng = np.random.default_rng(n)
    q, k, v = (rng.normal(size=(n, _D_K)) for _ in range(3))
    return {
        "n": n,
        "naive": _peak_bytes(lambda: attend(q, k, v, causal_mask(n))),
        "tiled": _peak_bytes(
            lambda: tiled_attention(q, k, v, causal=True, block=_TILE)
        ),
        "dense": _DENSE_ARRAYS * n * n * _ITEMSIZE,  # scores, masked scores, weights
        "output": n * _D_K * _ITEMSIZE,  # what both return
    }


def _multiply_adds(n: int, d_k: int, block: int, causal: bool) -> dict[str, int]:
    """Multiply-adds of the two matrix products (q kᵀ, then weights × v) through
    ``attend`` and through ``tiled_attention``, and the tiled path's extra multiplies
    that rescale its running sum and output (d_v = d_k).

    ``attend`` computes every score, masked or not; the tiled path with ``causal``
    skips the key blocks wholly after its query block.
    """
    tiled = rescale = 0
    for i0 in range(0, n, block):
        i1 = min(i0 + block, n)
        keys = i1 if causal else n  # the key blocks the loop visits, clipped at n
        tiled += (i1 - i0) * keys * (d_k + d_k)
        rescale += (i1 - i0) * (d_k + 1) * math.ceil(keys / block)
    return {"naive": n * n * (d_k + d_k), "tiled": tiled, "rescale": rescale}


def _visited(n: int, block: int, causal: bool) -> np.ndarray:
    """Which (query block, key block) tiles ``tiled_attention``'s loop computes: its
    two loops, with nothing inside (``True``: computed)."""
    blocks = math.ceil(n / block)
    visited = np.zeros((blocks, blocks), dtype=bool)
    for i0 in range(0, n, block):
        i1 = min(i0 + block, n)
        for j0 in range(0, i1 if causal else n, block):
            visited[i0 // block, j0 // block] = True
    return visited


@functools.cache
def page() -> Page:
    """What the page prints: the example, the memory, the counts, the bench's rows."""
    steps = _online_steps(SCORES, VALUES, BLOCK)
    direct = float(softmax(SCORES) @ VALUES)
    rows = cached(_memory, _SIZES)
    bench = measured.load("fast_attention")
    n = _SIZES[-1]
    counts = {
        "n": n,
        "d_k": _D_K,
        "block": _TILE,
        "full": _multiply_adds(n, _D_K, _TILE, causal=False),
        "causal": _multiply_adds(n, _D_K, _TILE, causal=True),
    }
    counts["rescale_share"] = counts["full"]["rescale"] / counts["full"]["tiled"]
    counts["causal_share"] = counts["causal"]["tiled"] / counts["causal"]["naive"]
    counts["flops"] = 2 * counts["full"]["naive"]  # a multiply and an add each
    counts["visited"] = _visited(n, _TILE, causal=True)
    counts["tiles"] = int(counts["visited"].sum())
    counts["skipped"] = int(counts["visited"].size - counts["tiles"])
    return Page(
        scores=SCORES,
        n_keys=len(SCORES),
        values=VALUES,
        block=BLOCK,
        steps=steps,
        direct=direct,
        weights=softmax(SCORES),
        memory=[_readable(row) for row in rows],
        bench=bench,
        seal=measured.Seal.of(bench),
        bench_rows=[_readable(row) for row in bench["rows"]],
        counts=counts,
        d_k=_D_K,
        tile=_TILE,
        itemsize=_ITEMSIZE,
        dense_arrays=_DENSE_ARRAYS,
        sources={
            "dao": dao2022.SHORT,
            "dao_citation": dao2022.CITATION,
            "dao_url": dao2022.URL,
            "online": dao2022.ONLINE_SOFTMAX_SHORT,
            "online_url": dao2022.ONLINE_SOFTMAX_URL,
        },
        facts=_facts(steps, direct, rows, bench["rows"], counts),
        figures=_figures(rows, bench["rows"]) | _tiling(counts),
    )


def _readable(row: dict) -> dict:
    """A memory row with its sizes in MB and the naive path's multiple of the tiled."""
    sizes = {
        f"{key}_mb": row[key] / 1e6 for key in ("naive", "tiled", "dense", "output")
    }
    return {**row, **sizes, "times": row["naive"] / row["tiled"]}


def _growth(rows: list[dict], key: str) -> list[float]:
    """How much ``key`` grows from each n to the next (the sizes double)."""
    return [b[key] / a[key] for a, b in itertools.pairwise(rows)]


def _facts(
    steps: tuple[_Step, ...],
    direct: float,
    rows: list[dict],
    bench_rows: list[dict],
    counts: dict,
) -> dict[str, Fact]:
    """The facts the page states about the example, the memory and the counts."""
    moved = [s for s in steps[1:] if s.rescale < 1]
    kept = [s for s in steps[1:] if s.rescale == 1]
    naive_growth, tiled_growth = _growth(rows, "naive"), _growth(rows, "tiled")
    everything = rows + [r for r in bench_rows if r["n"] > rows[-1]["n"]]
    last = rows[-1]
    full, causal = counts["full"], counts["causal"]
    n_tiles = int(counts["visited"].sum())
    tile_madds = counts["block"] ** 2 * (counts["d_k"] + counts["d_k"])
    return {
        "max_moves": Fact(
            len(moved) >= 1 and len(kept) >= 1,
            f"rescale factors {[round(s.rescale, 3) for s in steps]}",
            says="some later block rescales what was summed so far (factor below one) and some leaves it (factor one)",
        ),
        "same_output": Fact(
            math.isclose(steps[-1].so_far, direct, rel_tol=0, abs_tol=1e-12),
            f"online {steps[-1].so_far!r}, direct {direct!r}",
            says="the online softmax's output equals the direct softmax's, within 1e-12",
        ),
        "dense_floor": Fact(
            all(r["dense"] <= r["naive"] < 1.2 * r["dense"] for r in everything),
            f"naive/(3·n²·8): {[round(r['naive'] / r['dense'], 3) for r in everything]}",
            says="at every n, the naive peak is at least and under 1.2 times the three n x n float64 arrays",
        ),
        "quadratic": Fact(
            all(3.5 < g < 4.5 for g in naive_growth),
            f"naive growth per doubling {np.round(naive_growth, 2).tolist()}",
            says="the naive peak grows by between 3.5 and 4.5 times at every doubling of n",
            qualitative="a ratio between rows of the table above, which prints the peaks in MB",
        ),
        "linear": Fact(
            all(g <= 2.0 for g in tiled_growth),
            f"tiled growth per doubling {np.round(tiled_growth, 2).tolist()}",
            says="the tiled peak grows by at most two times at every doubling of n",
            qualitative="a ratio between rows of the table above, which prints the peaks in MB",
        ),
        "eighth": Fact(
            last["tiled"] * 8 <= last["naive"],
            f"n = {last['n']}: tiled {last['tiled']}, naive {last['naive']}",
            says="at the largest n measured in the build, the tiled peak is at most an eighth of the naive peak",
        ),
        "same_products": Fact(
            full["naive"] == full["tiled"] and causal["tiled"] < causal["naive"],
            f"full {full}, causal {causal}",
            says="without a mask both paths count the same products; with the causal mask the tiled path counts fewer",
        ),
        "tiles_count": Fact(
            n_tiles * tile_madds == causal["tiled"]
            and counts["visited"].size * tile_madds == full["naive"],
            f"{n_tiles} of {counts['visited'].size} tiles × {tile_madds} multiply-adds "
            f"a tile; causal {causal['tiled']}, full {full['naive']}",
            "the tiles the figure colours as computed, times one tile's multiply-adds, "
            "give the tiled path's causal count, and all the tiles the full count",
        ),
        "rescale_small": Fact(
            full["rescale"] < 0.01 * full["tiled"],
            f"rescale {full['rescale']} of {full['tiled']}",
            says="the online softmax's rescaling multiplies are under one percent of the tiled path's products",
        ),
    }


def _tiling(counts: dict) -> dict[str, Figure]:
    """The tiles of the causal pass at the page's n: computed and skipped."""
    n, block, tiles, skipped = (counts[k] for k in ("n", "block", "tiles", "skipped"))
    blocks = counts["visited"].shape[0]
    return {
        "tiling": Figure(
            "fast_attention.tiling",
            (counts["visited"], block),
            alt=f"A grid of {blocks} query blocks (rows) by {blocks} key blocks "
            f"(columns) of {block} tokens each, n = {n:,}. Under the causal mask the "
            f"{tiles} tiles on and below the diagonal are computed, the diagonal "
            f"ones masked inside; the {skipped} tiles above it are skipped.",
            caption=f"Each square is a tile of {block} × {block} scores, one query "
            "block against one key block; tiled_attention's loop computes the filled "
            "ones and never visits the empty ones above the diagonal. Count the filled "
            "squares: times one tile's multiply-adds, they are the causal count above.",
        )
    }


def _figures(rows: list[dict], bench_rows: list[dict]) -> dict[str, Figure]:
    """The memory figure: both paths' peaks against n, the build's and the bench's."""
    return {
        "memory": Figure(
            "fast_attention.memory",
            (rows, bench_rows),
            alt="Peak memory against the number of tokens n, both axes logarithmic. "
            "The naive path, which holds three n×n arrays, climbs with slope two: "
            "four times the memory for twice the tokens. The tiled path climbs with "
            "slope one at most, from a floor of a few blocks of scores.",
            caption="Peak memory of one head's causal attention (d_k = "
            f"{_D_K}, float64): attend against tiled_attention in blocks of {_TILE}. "
            "Look at the slopes: n² against n.",
        ),
    }
