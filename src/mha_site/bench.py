"""Sealing what ``make bench`` measured: the checksum and the machine it ran on.

Reading a result back (``mha.support.measured.load``) is the library's; writing one
is the site's.

What the seal protects against: accidents, and a summary edited by hand. A hand edit
that forgot the checksum, a bad merge or a truncated file no longer matches its
checksum, and every build that renders the result refuses it. A result keeps the raw
samples of each summary it states (``quartiles``), so a median or quartile moved by
hand, even inside the tolerance of the fact a page states from it, and resealed no
longer matches its samples, and the build and ``make test`` refuse it
(``mha.support.measured.mismatches``). What it does not protect against: a deliberate
edit of the samples themselves. The checksum is a plain SHA-256 of the content, with
no secret, so whoever rewrites the samples and their summaries consistently can
recompute it and the build publishes the edited number. A result is trusted because
it changes only in a commit made by ``make bench`` (command, commit, the time it was
sealed, machine and load recorded) that a reviewer can rerun: see CONTRIBUTING.md,
"What the bench seal protects against".

```python
from mha.support.measured import checksum
from mha_site.bench import seal

sealed = seal({"median_ms": 1.5})
assert sealed["checksum"] == checksum({"median_ms": 1.5})
```
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

import numpy as np

from mha.support.measured import checksum, summary


def seal(result: dict) -> dict:
    """The result with its ``checksum``, as ``python -m tests.bench`` writes it.

    ```python
    from mha_site.bench import seal

    assert seal({"a": 1})["checksum"].startswith("sha256:")
    ```
    """
    return {**result, "checksum": checksum(result)}


def quartiles(
    values: list[float], fields: dict[str, str], *, scale: float = 1.0, digits: int = 3
) -> dict:
    """The summary ``fields`` of ``values`` (each field named with its statistic:
    ``median``, ``q1``, ``q3``, ``min``, ``max`` or ``first``), times ``scale`` and
    rounded to ``digits`` decimals, with the raw samples they came from, under
    ``samples_<the first field>``: merge it into the result, and ``load`` recomputes
    each field from its samples.

    ```python
    from mha.support.measured import mismatches
    from mha_site.bench import quartiles

    row = quartiles([0.003, 0.001, 0.002], {"ms": "median", "ms_q1": "q1"}, scale=1e3)
    assert row["ms"] == 2.0 and row["samples_ms"]["values"] == [0.003, 0.001, 0.002]
    assert mismatches(row) == []
    ```
    """
    stated = {
        field: summary(values, statistic, scale, digits)
        for field, statistic in fields.items()
    }
    raw = [float(value) for value in values]
    samples = {"values": raw, "scale": scale, "digits": digits, "fields": fields}
    return {**stated, f"samples_{next(iter(fields))}": samples}


def machine() -> dict:
    """What a benchmark runs on: CPU, cores, NumPy and its BLAS, and the current load.

    A shared machine is noisy; the 1-minute load average at the start is kept so a
    reader can judge.

    ```python
    from mha_site.bench import machine

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
