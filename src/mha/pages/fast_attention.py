"""Fast attention, the online softmax: what ``docs/fast-attention.md`` prints.

``page()`` hands the page a worked example of the rescaling step (one query's keys
read in blocks), the peak memory of ``attend`` and ``tiled_attention`` measured with
tracemalloc (n = 256 to 2,048 in the build, cached; to 8,192 in ``make bench``), the
multiply-adds of both paths, and the figure of the memory.
"""

from __future__ import annotations

import functools
import itertools
import math
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

SIZES = (256, 512, 1024, 2048)  # n measured by the build; make bench goes further
D_K = 64  # every head of the memory study: d_k = d_v = 64, float64
TILE = 128  # tiled_attention's default block
ITEMSIZE = np.dtype(np.float64).itemsize
DENSE_ARRAYS = 3  # attend holds the scores, the masked scores and the weights


@dataclass(frozen=True)
class Step:
    """The running state after one block of keys (``online_steps``)."""

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


def online_steps(
    scores: np.ndarray, values: np.ndarray, block: int
) -> tuple[Step, ...]:
    """The online softmax of one query, a block of keys at a time: each step's state.

    ```python
    import numpy as np
    from mha.attention import softmax
    from mha.pages.fast_attention import online_steps

    scores, values = np.array([1.0, 3.0, 2.0]), np.array([1.0, 2.0, 3.0])
    last = online_steps(scores, values, 2)[-1]
    assert np.isclose(last.so_far, softmax(scores) @ values)
    ```
    """
    m, s, o, steps = -math.inf, 0.0, 0.0, []
    for j in range(0, len(scores), block):
        x, v = scores[j : j + block], values[j : j + block]
        m_new = max(m, float(x.max()))
        rescale = math.exp(m - m_new)  # 0 before the first block
        p = np.exp(x - m_new)
        s = s * rescale + float(p.sum())
        o = o * rescale + float(p @ v)
        steps.append(
            Step(tuple(range(j, j + len(x))), float(x.max()), m_new, rescale, s, o)
        )
        m = m_new
    return tuple(steps)


def peak_bytes(fn: Callable[[], object]) -> int:
    """The largest allocation total (bytes) while ``fn()`` runs, from tracemalloc,
    which sees NumPy's array buffers.

    ``fn()`` runs once untraced first: what a first call allocates and keeps (a lazy
    import, a cache filled) varies with what the process did before, by a few hundred
    bytes, and a build that measured it would not be byte-identical to the next.

    ```python
    import numpy as np
    from mha.pages.fast_attention import peak_bytes

    assert peak_bytes(lambda: np.ones(1000)) >= 8000
    ```
    """
    fn()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def memory(sizes: tuple[int, ...]) -> list[dict]:
    """Peak bytes of causal attention over ``n`` tokens, one head of d_k = 64 in
    float64, through ``attend`` (the whole n×n) and ``tiled_attention`` (blocks of 128).

    ```python
    from mha.pages.fast_attention import memory

    row = memory((256,))[0]
    assert row["tiled"] < row["naive"] and row["naive"] >= 3 * 256 * 256 * 8
    ```
    """
    return [_peaks(n) for n in sizes]


def _peaks(n: int) -> dict:
    """Both paths' peak bytes at ``n`` tokens, beside the three n×n arrays and the
    output."""
    rng = np.random.default_rng(n)
    q, k, v = (rng.normal(size=(n, D_K)) for _ in range(3))
    return {
        "n": n,
        "naive": peak_bytes(lambda: attend(q, k, v, causal_mask(n))),
        "tiled": peak_bytes(lambda: tiled_attention(q, k, v, causal=True, block=TILE)),
        "dense": DENSE_ARRAYS * n * n * ITEMSIZE,  # scores, masked scores, weights
        "output": n * D_K * ITEMSIZE,  # what both return
    }


def multiply_adds(n: int, d_k: int, block: int, causal: bool) -> dict[str, int]:
    """Multiply-adds of the two matrix products (q kᵀ, then weights × v) through
    ``attend`` and through ``tiled_attention``, and the tiled path's extra multiplies
    that rescale its running sum and output (d_v = d_k).

    ``attend`` computes every score, masked or not; the tiled path with ``causal``
    skips the key blocks wholly after its query block.

    ```python
    from mha.pages.fast_attention import multiply_adds

    count = multiply_adds(256, 64, 128, causal=False)
    assert count["naive"] == count["tiled"] == 256 * 256 * (64 + 64)
    ```
    """
    tiled = rescale = 0
    for i0 in range(0, n, block):
        i1 = min(i0 + block, n)
        keys = i1 if causal else n  # the key blocks the loop visits, clipped at n
        tiled += (i1 - i0) * keys * (d_k + d_k)
        rescale += (i1 - i0) * (d_k + 1) * math.ceil(keys / block)
    return {"naive": n * n * (d_k + d_k), "tiled": tiled, "rescale": rescale}


@functools.cache
def page() -> Page:
    """What the page prints: the example, the memory, the counts, the bench's rows.

    ```python
    from mha.pages.fast_attention import page

    p = page()
    assert all(fact.holds for fact in p.facts.values())
    assert [row["n"] for row in p.memory] == [256, 512, 1024, 2048]
    ```
    """
    steps = online_steps(SCORES, VALUES, BLOCK)
    direct = float(softmax(SCORES) @ VALUES)
    rows = cached(memory, SIZES)
    bench = measured.load("fast_attention")
    n = SIZES[-1]
    counts = {
        "n": n,
        "d_k": D_K,
        "block": TILE,
        "full": multiply_adds(n, D_K, TILE, causal=False),
        "causal": multiply_adds(n, D_K, TILE, causal=True),
    }
    counts["rescale_share"] = counts["full"]["rescale"] / counts["full"]["tiled"]
    counts["causal_share"] = counts["causal"]["tiled"] / counts["causal"]["naive"]
    counts["flops"] = 2 * counts["full"]["naive"]  # a multiply and an add each
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
        bench_rows=[_readable(row) for row in bench["rows"]],
        counts=counts,
        d_k=D_K,
        tile=TILE,
        itemsize=ITEMSIZE,
        dense_arrays=DENSE_ARRAYS,
        sources={
            "dao": dao2022.SHORT,
            "dao_citation": dao2022.CITATION,
            "dao_url": dao2022.URL,
            "online": dao2022.ONLINE_SOFTMAX_SHORT,
            "online_url": dao2022.ONLINE_SOFTMAX_URL,
        },
        facts=facts(steps, direct, rows, bench["rows"], counts),
        figures=figures(rows, bench["rows"]),
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


def facts(
    steps: tuple[Step, ...],
    direct: float,
    rows: list[dict],
    bench_rows: list[dict],
    counts: dict,
) -> dict[str, Fact]:
    """The facts the page states about the example, the memory and the counts.

    ```python
    from mha.pages.fast_attention import facts, page

    p = page()
    flat = [dict(row, naive=row["tiled"]) for row in p.memory]  # no n² any more
    found = facts(p.steps, p.direct, flat, p.bench["rows"], p.counts)
    assert not found["quadratic"].holds and found["same_output"].holds
    ```
    """
    moved = [s for s in steps[1:] if s.rescale < 1]
    kept = [s for s in steps[1:] if s.rescale == 1]
    naive_growth, tiled_growth = _growth(rows, "naive"), _growth(rows, "tiled")
    everything = rows + [r for r in bench_rows if r["n"] > rows[-1]["n"]]
    last = rows[-1]
    full, causal = counts["full"], counts["causal"]
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
        "rescale_small": Fact(
            full["rescale"] < 0.01 * full["tiled"],
            f"rescale {full['rescale']} of {full['tiled']}",
            says="the online softmax's rescaling multiplies are under one percent of the tiled path's products",
        ),
    }


def figures(rows: list[dict], bench_rows: list[dict]) -> dict[str, Figure]:
    """The memory figure: both paths' peaks against n, the build's and the bench's.

    ```python
    from mha.pages.fast_attention import figures, memory

    rows = memory((256, 512))
    assert "tiled" in figures(rows, rows)["memory"].alt
    ```
    """
    return {
        "memory": Figure(
            "fast_attention.memory",
            (rows, bench_rows),
            alt="Peak memory against the number of tokens n, both axes logarithmic. "
            "The naive path, which holds three n×n arrays, climbs with slope two: "
            "four times the memory for twice the tokens. The tiled path climbs with "
            "slope one at most, from a floor of a few blocks of scores.",
            caption="Peak memory of one head's causal attention (d_k = "
            f"{D_K}, float64): attend against tiled_attention in blocks of {TILE}. "
            "Look at the slopes: n² against n.",
        ),
    }
