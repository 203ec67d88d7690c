"""``python -m tests.bench [name ...]``: run benchmarks, print and store their results."""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from pathlib import Path

import tests.bench

OUT = Path(__file__).resolve().parents[2] / "src" / "mha" / "data" / "bench"


def benchmarks() -> list[str]:
    """The benchmark modules of ``tests.bench`` (this ``__main__`` is not one)."""
    modules = pkgutil.iter_modules(tests.bench.__path__)
    return sorted(m.name for m in modules if not m.name.startswith("_"))


def main(names: list[str]) -> None:
    available = benchmarks()
    for name in names or available:
        if name not in available:
            raise SystemExit(f"unknown benchmark {name!r}; available: {available}")
        print(f"== {name}", flush=True)
        result = importlib.import_module(f"tests.bench.{name}").run()
        OUT.mkdir(parents=True, exist_ok=True)
        text = json.dumps(result, indent=2, sort_keys=True) + "\n"
        (OUT / f"{name}.json").write_text(text)
        print(text, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
