"""Results that ``make bench`` measured, read back from committed JSON files.

A build never times anything (two builds must be byte-identical). ``make bench``
runs each benchmark module of ``tests/bench/`` and writes what its ``run()`` returns
to ``mha/data/bench/<name>.json``; pages render those files through functions of the
core, like every other number.

Each file carries its provenance (the command, commit and machine that produced it)
and a checksum that the benchmark writes (``mha_site.bench.seal``, the site's tooling). ``load`` refuses a file whose
checksum does not match its content: a hand edit, a bad merge (and so does every
build that renders it); ``load_sealed`` also refuses a file without one. That detects
accidents, not intent: the checksum is a plain SHA-256 that anyone can recompute.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

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
    data = json.loads(path.read_text(encoding="utf-8"))
    if "checksum" in data and data["checksum"] != checksum(data):
        raise ValueError(
            f"name: the result in {path.name} does not match its checksum (edited by "
            f"hand?); rerun `python -m tests.bench {name}` instead of editing it"
        )
    return data


def load_sealed(name: str) -> dict:
    """``load(name)``, refusing also a result written without a checksum.

    Results written before benchmarks sealed them carry none; ``load`` reads them,
    and the tests list each one until its benchmark runs again.

    ```python
    from mha.support.measured import load_sealed

    assert load_sealed("layer")["provenance"]["command"] == "python -m tests.bench layer"
    ```
    """
    data = load(name)
    if "checksum" not in data:
        raise ValueError(
            f"name: the result of {name!r} carries no checksum (written before results "
            f"were sealed); rerun `python -m tests.bench {name}`"
        )
    return data


def checksum(result: dict) -> str:
    """SHA-256 of a result's canonical JSON, its ``checksum`` entry left out.

    ```python
    from mha.support.measured import checksum

    assert checksum({"a": 1, "checksum": "x"}) == checksum({"a": 1})
    assert checksum({"a": 1}) != checksum({"a": 2})
    ```
    """
    if not isinstance(result, dict):
        raise TypeError(f"result: expected a dict, got {type(result).__name__}")
    body = {key: value for key, value in result.items() if key != "checksum"}
    body = json.loads(json.dumps(body))  # as read back: tuples are lists, keys str
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
