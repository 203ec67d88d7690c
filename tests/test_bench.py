"""`make bench` runs every benchmark module; none is run by `make test`."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.bench.__main__ import OUT, benchmarks

FOLDER = Path(__file__).parent / "bench"


def test_make_bench_runs_each_module_with_a_run_function():
    names = benchmarks()
    assert "__main__" not in names and "smollm2" in names
    for name in names:
        tree = ast.parse((FOLDER / f"{name}.py").read_text())
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert "run" in functions, f"tests/bench/{name}.py has no run()"


def test_each_benchmark_has_a_committed_result():
    for name in benchmarks():
        assert (OUT / f"{name}.json").is_file(), f"run: python -m tests.bench {name}"
