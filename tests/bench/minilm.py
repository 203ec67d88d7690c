"""all-MiniLM-L6-v2 in NumPy: time to load the model, and one forward pass of 32 tokens.

Budgets: load <= 2 s, one 32-token forward pass <= 50 ms. The first load
in the process includes importing ``safetensors`` and ``tokenizers``; later loads
read the files again from the (by then warm) page cache. The forward pass is the
whole encoder on one sentence of 32 tokens ([CLS] and [SEP] included), no caching,
timed with BLAS limited to 1 thread and to 2 threads (on a shared machine, two BLAS
threads can wait on each other for longer than the small matrix products take).
"""

from __future__ import annotations

import time

from threadpoolctl import threadpool_limits

from mha.pretrained import minilm
from mha_site.bench import machine, quartiles

SENTENCE = (
    "Kohli, who anchored the innings after Rohit fell early, finally reached his "
    "century in the 47th over, and the whole crowd stood to cheer."
)
N_TOKENS = 32
LOADS = 5
FORWARDS = 50


def _ms(samples: list[float]) -> dict:
    """Median and quartiles in ms, with the raw samples they come from."""
    return quartiles(
        samples, {"q1": "q1", "median": "median", "q3": "q3"}, scale=1e3, digits=2
    )


def _forward_times(model: minilm.MiniLM, batch: minilm.Batch) -> list[float]:
    model.forward(batch)  # warm up
    times = []
    for _ in range(FORWARDS):
        start = time.perf_counter()
        model.forward(batch)
        times.append(time.perf_counter() - start)
    return times


def run() -> dict:
    """Load time (first, then median of repeats) and 32-token forward time, in ms."""
    loads = []
    for _ in range(LOADS):
        start = time.perf_counter()
        model = minilm.MiniLM(minilm.model_dir())
        loads.append(time.perf_counter() - start)
    batch = model.batch([SENTENCE])
    if len(batch.tokens[0]) != N_TOKENS:
        raise RuntimeError(f"expected {N_TOKENS} tokens, got {len(batch.tokens[0])}")
    forward_ms = {}
    for threads in (1, 2):
        with threadpool_limits(threads):
            forward_ms[threads] = _ms(_forward_times(model, batch))
    return {
        "machine": machine(),
        "n_tokens": N_TOKENS,
        **quartiles(loads[:1], {"load_first_ms": "first"}, scale=1e3, digits=1),
        "load_ms": _ms(loads[1:]),
        "forward_ms": forward_ms[1],
        "forward_ms_2_threads": forward_ms[2],
        "forward_repeats": FORWARDS,
        "budget_load_ms": 2000,
        "budget_forward_ms": 50,
    }
