"""Each study's CPU time in a cold build, for the estimates a build prints.

A cold build from a fresh clone (no result cache) keeps each study's CPU time in its
cache (``timings-cpu.json``, ``mha.support.progress``): its time in all and its own,
without the studies it asked for. Sealed in ``src/mha/data/bench/studies.json``, they
give a fresh clone an estimate for every study and the time left in all, scaled by
how fast its machine runs the first ones. The site benchmark's quiet cold build is
read when it ran in this process (``make bench`` runs ``site`` first); otherwise this
module runs one of its own.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from tests.bench import site
from tests.cpu_time import become_subreaper


def from_cache(folder: Path) -> dict[str, dict[str, float]]:
    """The studies' CPU seconds a build kept in the result cache ``folder``."""
    return json.loads((folder / "timings-cpu.json").read_text())


def run() -> dict:
    build = site.COLD
    if build is None:
        become_subreaper()
        with tempfile.TemporaryDirectory() as tmp:
            clone = site._clone(Path(tmp) / "a")
            wall, cpu = site._timed(site.BUILD, clone)
            build = {
                "wall_s": round(wall, 1),
                "cpu_s": round(cpu, 1),
                "studies": from_cache(clone / ".cache" / "results"),
            }
    studies = build["studies"]
    return {
        "studies": dict(sorted(studies.items())),
        "cold_build": {"wall_s": build["wall_s"], "cpu_s": build["cpu_s"]},
        "studies_own_cpu_s": round(sum(s["own"] for s in studies.values()), 1),
        "method": "one cold build (mkdocs build --strict) of a fresh clone, two "
        "processes (the build and mha_site.prefetch's); each study's CPU seconds as "
        "its process measured them (time.process_time), in all and its own (without "
        "the studies it asked for)",
    }
