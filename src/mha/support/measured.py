"""Results that ``make bench`` measured, read back from committed JSON files.

A build never times anything (two builds must be byte-identical). ``make bench``
runs each benchmark module of ``tests/bench/`` and writes what its ``run()`` returns
to ``mha/data/bench/<name>.json``; pages render those files through functions of the
core, like every other number. ``machine()`` describes where a benchmark ran, so that
its result can say so.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import numpy as np

DATA_DIR = Path(__file__).parent.parent / "data" / "bench"


def available() -> tuple[str, ...]:
    """Names of the benchmarks with a committed result.

    ```python
    from mha.support.measured import available

    assert "heads" in available()
    ```
    """
    return tuple(sorted(p.stem for p in DATA_DIR.glob("*.json")))


def load(name: str) -> dict:
    """The committed result of benchmark ``name``, as its ``run()`` returned it.

    ```python
    from mha.support.measured import load

    assert load("heads")["machine"]["cpu_count"] >= 1
    ```
    """
    path = DATA_DIR / f"{name}.json"
    if not path.is_file():
        raise ValueError(
            f"name: expected a benchmark with a committed result "
            f"(one of {list(available())}), got {name!r}; run `make bench`"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def machine() -> dict:
    """What a benchmark runs on: CPU, cores, NumPy and its BLAS, and the current load.

    A shared machine is noisy; the 1-minute load average at the start is kept so a
    reader can judge.

    ```python
    from mha.support.measured import machine

    info = machine()
    assert info["cpu_count"] >= 1 and info["numpy"]
    ```
    """
    blas = np.show_config(mode="dicts")["Build Dependencies"].get("blas", {})
    return {
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": f"{blas.get('name', '?')} {blas.get('version', '')}".strip(),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
