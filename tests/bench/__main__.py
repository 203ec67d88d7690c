"""``python -m tests.bench [name ...]``: run benchmarks, print and store their results.

Each result is written with its provenance (the command, the commit and whether the
tree had uncommitted changes, when it was sealed, the machine and its load) and
sealed with a checksum (``mha_site.bench.seal``), so that a file edited by hand is
refused when it is read back; each summary keeps its raw samples
(``mha_site.bench.quartiles``), so that a summary edited and resealed no longer
matches them. Neither stops whoever rewrites the samples too: review does.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import tests.bench
from mha_site.bench import machine, seal

ROOT = Path(__file__).resolve().parents[2]
# This repository's data folder, beside the commit the provenance names: not the
# folder of the mha that Python imports, which in a venv shared by two clones is
# the other clone's (a bench of an older commit, run in a clone of it, once wrote
# over the result of main's).
OUT = ROOT / "src" / "mha" / "data" / "bench"


def benchmarks() -> list[str]:
    """The benchmark modules of ``tests.bench`` (this ``__main__`` is not one)."""
    modules = pkgutil.iter_modules(tests.bench.__path__)
    return sorted(m.name for m in modules if not m.name.startswith("_"))


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def provenance(name: str) -> dict:
    """What produced a result: command, commit (and uncommitted changes), machine."""
    # the code's changes: not the results this run has written already (each result
    # written made every later one of the run say "uncommitted changes")
    changed = _git(
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        "src",
        "tests",
        f":(exclude){OUT.relative_to(ROOT)}",
    )
    return {
        "command": f"python -m tests.bench {shlex.quote(name)}",
        "commit": _git("rev-parse", "HEAD"),
        "sealed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "uncommitted_changes": bool(changed) if changed != "unknown" else None,
        "machine": machine(),  # with the load average when the run started
    }


def main(names: list[str]) -> None:
    available = benchmarks()
    for name in names or available:
        if name not in available:
            raise SystemExit(f"unknown benchmark {name!r}; available: {available}")
        print(f"== {name}", flush=True)
        origin = provenance(name)
        result = importlib.import_module(f"tests.bench.{name}").run()
        OUT.mkdir(parents=True, exist_ok=True)
        text = json.dumps(
            seal({**result, "provenance": origin}), indent=2, sort_keys=True
        )
        (OUT / f"{name}.json").write_text(text + "\n")
        print(text, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
