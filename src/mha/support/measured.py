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

A result also keeps the raw samples of each summary it states (a median, quartiles,
a minimum: ``samples_<name>`` entries beside the fields they summarise, written by
``mha_site.bench.quartiles``), and ``load`` recomputes every such field from its
samples: a summary edited by hand, even inside the tolerance of the fact a page
states from it and resealed, no longer matches its samples and is refused. An edit
that rewrites the samples consistently is still possible: that is review's to catch.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
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
    data = json.loads(path.read_text(encoding="utf-8"))
    if "checksum" in data and data["checksum"] != checksum(data):
        raise ValueError(
            f"name: the result in {path.name} does not match its checksum (edited by "
            f"hand?); rerun `python -m tests.bench {name}` instead of editing it"
        )
    unmatched = mismatches(data)
    if unmatched:
        raise ValueError(
            f"name: the result in {path.name} states {unmatched[0]} (edited by hand?); "
            f"rerun `python -m tests.bench {name}` instead of editing it"
        )
    return data


STATISTICS = {"q1": 25.0, "median": 50.0, "q3": 75.0, "min": 0.0, "max": 100.0}


def summary(values: list[float], statistic: str, scale: float, digits: int) -> float:
    """One statistic of ``values`` times ``scale``, rounded to ``digits`` decimals: how
    a benchmark states a summary of its raw samples, and how ``load`` checks it.

    ```python
    from mha.support.measured import summary

    assert summary([0.003, 0.001, 0.002], "median", 1e3, 1) == 2.0
    assert summary([0.003, 0.001, 0.002], "first", 1e3, 1) == 3.0
    ```
    """
    if statistic == "first":
        value = values[0] * scale
    elif statistic in STATISTICS:
        value = float(np.percentile(np.asarray(values) * scale, STATISTICS[statistic]))
    else:
        raise ValueError(
            f"statistic: expected first or one of {sorted(STATISTICS)}, got "
            f"{statistic!r}"
        )
    return round(float(value), digits)


def mismatches(result: object, at: str = "") -> list[str]:
    """Each field of ``result`` that its raw samples do not give: every dict holding
    ``samples_<name>`` entries (``values``, ``scale``, ``digits`` and ``fields``,
    which maps a sibling field to its statistic) is recomputed.

    ```python
    from mha.support.measured import mismatches

    row = {"ms": 2.0, "samples_t": {"values": [0.001, 0.002, 0.003], "scale": 1e3,
                                    "digits": 1, "fields": {"ms": "median"}}}
    assert mismatches({"rows": [row]}) == []
    row["ms"] = 2.1
    expected = "rows[0].ms = 2.1, not the median of its 3 samples (2.0)"
    assert mismatches({"rows": [row]}) == [expected]
    ```
    """
    found: list[str] = []
    if isinstance(result, list):
        for i, item in enumerate(result):
            found += mismatches(item, f"{at}[{i}]")
    elif isinstance(result, dict):
        for key, value in result.items():
            if key.startswith("samples_") and isinstance(value, dict):
                found += _sampled(result, value, at)
            else:
                found += mismatches(value, f"{at}.{key}" if at else str(key))
    return found


def _sampled(owner: dict, samples: dict, at: str) -> list[str]:
    """The fields of ``owner`` that ``samples`` summarises but does not give."""
    values = samples["values"]
    found = []
    for field, statistic in samples["fields"].items():
        expected = summary(values, statistic, samples["scale"], samples["digits"])
        stated = owner.get(field)
        if stated != expected:
            where = f"{at}.{field}" if at else field
            found.append(
                f"{where} = {stated}, not the {statistic} of its {len(values)} samples "
                f"({expected})"
            )
    return found


def sampled(result: object) -> bool:
    """Whether ``result`` keeps raw samples anywhere (``samples_<name>`` entries).

    ```python
    from mha.support.measured import sampled

    assert not sampled({"rows": [{"ms": 2.0}]})
    ```
    """
    if isinstance(result, list):
        return any(sampled(item) for item in result)
    if isinstance(result, dict):
        return any(
            key.startswith("samples_") or sampled(value)
            for key, value in result.items()
        )
    return False


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


@dataclass(frozen=True)
class Seal:
    """When, at which commit and under which load ``make bench`` sealed a result:
    what a page prints beside each measured figure, read from the result's
    ``provenance``.

    ``date`` is the day it was sealed (UTC, ``YYYY-MM-DD``), or None for a result
    written before benchmarks recorded it: a page then says only the commit and the
    load. ``uncommitted`` says the tree had changes beyond ``commit`` (None: unknown).

    ```python
    from mha.support.measured import Seal, load

    seal = Seal.of(load("heads"))
    assert len(seal.commit) == 40 and seal.short == seal.commit[:7]
    assert seal.load >= 0 and seal.cores >= 1
    provenance = {"commit": "0123456789abcdef", "sealed_at": "2026-12-07T11:22:11+00:00",
                  "machine": {"load_average_1min": 1.5, "cpu_count": 2}}
    assert Seal.of({"provenance": provenance}).date == "2026-12-07"
    ```
    """

    commit: str
    date: str | None
    load: float  # the 1-minute load average when the benchmark started
    cores: int
    uncommitted: bool | None = None

    @property
    def short(self) -> str:
        """The commit's first seven hex digits, as git prints it."""
        return self.commit[:7]

    @classmethod
    def of(cls, result: dict) -> Seal:
        """The seal of ``result`` (as ``load`` returns it), from its provenance."""
        origin = result.get("provenance") if isinstance(result, dict) else None
        if not isinstance(origin, dict) or "commit" not in origin:
            raise ValueError(
                "result: expected a benchmark result with a provenance naming its "
                "commit (written by `python -m tests.bench`)"
            )
        machine = origin.get("machine", {})
        stamp = origin.get("sealed_at")
        return cls(
            commit=str(origin["commit"]),
            date=str(stamp)[:10] if stamp else None,
            load=float(machine["load_average_1min"]),
            cores=int(machine["cpu_count"]),
            uncommitted=origin.get("uncommitted_changes"),
        )
