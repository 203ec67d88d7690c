"""SmolLM2-135M in NumPy: load time, prefill and decode speed beside the memory bound.

Decoding one token reads every weight once (the tied head reads the whole embedding),
so its speed is bounded by the machine's read bandwidth: weight bytes per token over
bytes per second. The bandwidth is measured here by streaming a 1 GiB float32 array
four ways NumPy can (``sum``, a dot product, a matrix-vector product in each of the
two layouts), each with NumPy's default BLAS threads and with one; the fastest median
of ``RUNS`` runs is taken, so the bound is the strictest of the eight. Decoding and
the kernels take turns, so that their medians cover the same minutes of the machine.

Budgets: load, dequantisation included, <= 10 s (a content-hash cache of the
dequantised arrays is allowed: ``load_cold_s`` is without it, ``load_s`` with it);
decode >= 60% of the bound. ``experiments_cold_s`` is what the page's study costs a
build whose cache is cold (the model already loaded).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

from mha.pages import real_gqa_model as gqa_smollm2
from mha.pretrained import smollm2
from mha.support.threads import one_blas_thread
from mha_site.bench import machine, quartiles

RUNS = 5
GIB = 1 << 30
DECODE_TOKENS = 32
LOAD = (
    "import time, json; t = time.perf_counter(); from mha.pretrained import smollm2; "
    "smollm2.load(); print(json.dumps(time.perf_counter() - t))"
)


def read_kernels(data: np.ndarray) -> dict[str, Callable[[], object]]:
    """Four ways NumPy can stream ``data`` (float32), each with the default BLAS
    threads and with one: eight kernels, each reading every byte once."""
    matrix = data.reshape(-1, 4096)  # C-ordered (rows, 4096)
    wide = data.reshape(4096, -1)  # C-ordered (4096, columns)
    ways = {
        "sum": data.sum,
        "dot": lambda: data.dot(data),
        "matrix @ vector": lambda: matrix @ np.ones(4096, np.float32),
        "vector @ matrix": lambda: np.ones(4096, np.float32) @ wide,
    }
    kernels = {}
    for threads, context in (
        ("default threads", contextlib.nullcontext),
        ("one thread", one_blas_thread),
    ):
        for name, way in ways.items():
            kernels[f"{name}, {threads}"] = functools.partial(_within, context, way)
    return kernels


def _within(
    context: Callable[[], contextlib.AbstractContextManager], fn: Callable[[], object]
) -> float:
    """Seconds ``fn()`` takes inside ``context()`` (entering it is not timed)."""
    with context():
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start


def load_seconds(cache_dir: str) -> float:
    """Seconds ``smollm2.load()`` takes in a fresh process with this cache folder."""
    env = {**os.environ, "MHA_CACHE_DIR": cache_dir}
    out = subprocess.run(
        [sys.executable, "-c", LOAD],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def decode_seconds(model: smollm2.SmolLM2, ids: list[int]) -> list[float]:
    """Seconds per greedy decode step (one token: all blocks, then the head)."""
    caches = model.new_caches(len(ids) + DECODE_TOKENS + 1)
    hidden = model.hidden(ids, caches)[0, -1]
    times = []
    for _ in range(DECODE_TOKENS):
        start = time.perf_counter()
        next_id = int(np.argmax(model.head(hidden)))
        hidden = model.hidden([next_id], caches)[0, -1]
        times.append(time.perf_counter() - start)
    return times


def products_seconds(model: smollm2.SmolLM2) -> list[float]:
    """Seconds of a decode step's weight products alone, for DECODE_TOKENS steps.

    The same 121 matrices in the same layouts and order (per layer Q/K/V, W_O,
    gate/up, down; then the head), with nothing in between: the part of a step that
    the bandwidth bound describes.
    """
    x = np.ones((1, 1, model.config.d_model), np.float32)
    hidden = np.ones((1, 1, model.config.d_ff), np.float32)
    products = []
    for block in model.blocks:
        a = block.attention
        products += [(x, a.w_qkv), (x, a.w_o)]
        products += [(x, block.w_gate_up), (hidden, block.w_down.T)]
    products.append((x, model.embedding))
    times = []
    for _ in range(DECODE_TOKENS):
        start = time.perf_counter()
        for vector, matrix in products:
            vector @ matrix
        times.append(time.perf_counter() - start)
    return times


def study_seconds() -> float:
    """Seconds the page's study takes with an empty result cache (model loaded)."""
    previous = os.environ.get("MHA_CACHE_DIR")
    with tempfile.TemporaryDirectory() as cache_dir:
        os.environ["MHA_CACHE_DIR"] = cache_dir
        try:
            start = time.perf_counter()
            gqa_smollm2._results()
            return time.perf_counter() - start
        finally:
            if previous is None:
                del os.environ["MHA_CACHE_DIR"]
            else:
                os.environ["MHA_CACHE_DIR"] = previous


def run() -> dict:
    """Load, prefill and decode speed of SmolLM2-135M, and the bandwidth bound."""
    info = machine()
    with tempfile.TemporaryDirectory() as cache_dir:
        load_cold = load_seconds(cache_dir)  # reads and dequantises the GGUF file
        loads = [load_seconds(cache_dir) for _ in range(RUNS)]
    model = smollm2.load()
    prompt = model.encode(gqa_smollm2._PARAGRAPH)
    prefill = []
    for _ in range(RUNS):
        start = time.perf_counter()
        model.hidden(prompt, model.new_caches(len(prompt)))
        prefill.append(time.perf_counter() - start)
    # Decoding and the read kernels take turns, RUNS rounds, so that both medians
    # cover the same minutes: on a shared machine the bandwidth moves by a third
    # from one minute to the next.
    data = np.ones(GIB // 4, np.float32)
    kernels = read_kernels(data)
    for kernel in kernels.values():
        kernel()  # warm-up: pages touched, threads started
    decode, products, reads = [], [], {name: [] for name in kernels}
    for _ in range(RUNS):
        decode.append(float(np.median(decode_seconds(model, prompt))))
        products.append(float(np.median(products_seconds(model))))
        for name, kernel in kernels.items():
            reads[name].append(kernel())
    rates = {name: GIB / float(np.median(times)) for name, times in reads.items()}
    kernel = max(rates, key=rates.get)  # the fastest: the strictest bound
    decode_s, products_s = float(np.median(decode)), float(np.median(products))
    bound_seconds = model.weight_nbytes / rates[kernel]
    experiments = study_seconds()
    return {
        "machine": info,
        "runs": RUNS,
        **quartiles([load_cold], {"load_cold_s": "first"}, digits=2),
        **quartiles(loads, {"load_s": "median"}, digits=2),
        "prefill_tokens": len(prompt),
        "prefill_tokens_per_s": round(len(prompt) / float(np.median(prefill)), 1),
        "decode_tokens_per_s": round(1 / decode_s, 2),
        "weight_bytes_per_token": model.weight_nbytes,
        "read_bytes": GIB,
        "read_bandwidth_gb_per_s": round(rates[kernel] / 1e9, 2),
        "read_bandwidth_kernel": kernel,
        "read_bandwidth_one_thread_gb_per_s": round(
            max(v for k, v in rates.items() if "one thread" in k) / 1e9, 2
        ),
        "read_bandwidth_gb_per_s_by_kernel": {
            k: round(v / 1e9, 2) for k, v in rates.items()
        },
        "bound_tokens_per_s": round(1 / bound_seconds, 2),
        "decode_bound_ratio": round(bound_seconds / decode_s, 3),
        **quartiles(products, {"products_ms_per_token": "median"}, scale=1e3, digits=2),
        "products_gb_per_s": round(model.weight_nbytes / products_s / 1e9, 2),
        **quartiles(decode, {"decode_ms_per_token": "median"}, scale=1e3, digits=2),
        "experiments_cold_s": round(experiments, 1),
        "budget_load_s": 10,
        "budget_decode_bound_ratio": 0.6,
    }
