"""The bench seal's docs say what it protects against: accidents and a summary edited
by hand, not a rewrite of the samples themselves.

The seal is a plain SHA-256 (``mha_site.bench.seal``) of a result that keeps the raw
samples of each summary it states (``mha_site.bench.quartiles``). These tests hold
the three halves of that sentence: an edit that forgets the checksum is refused, a
summary moved and resealed is refused by its samples, and an edit of the samples
that recomputes everything is not; as long as the last is true, the docs must say so.
A resealed summary planted in a result is in ``tests/docs/test_planted_faults.py``.
"""

from __future__ import annotations

from pathlib import Path

import mha_site.bench
from mha.support import measured
from mha.support.measured import checksum, mismatches, sampled
from mha_site.bench import quartiles, seal

ROOT = Path(__file__).resolve().parents[2]
# Results written before `make bench` kept the raw samples of its summaries: their
# summaries cannot be checked. Each leaves this list when its benchmark runs again
# (and the test below fails until it does: a list that only shrinks).
# studies: each study's sealed CPU seconds from one cold build (progress estimates), a
# table of single timings with no samples behind it
UNSAMPLED = {
    "decode",
    "fast_attention",
    "heads",
    "layer",
    "minilm",
    "site",
    "smollm2",
    "studies",
}


def test_an_accidental_edit_breaks_the_seal():
    sealed = seal({"median_ms": 1.5})
    edited = {**sealed, "median_ms": 0.5}
    assert checksum(edited) != edited["checksum"]


def test_a_deliberate_edit_of_the_samples_reseals_and_the_docs_say_so():
    fields = {"ms": "median"}
    honest = seal(quartiles([0.001, 0.002, 0.004], fields, scale=1e3))
    rewritten = seal(quartiles([0.001, 0.0015, 0.004], fields, scale=1e3))
    assert honest["ms"] != rewritten["ms"]  # whoever rewrites the samples too...
    assert checksum(rewritten) == rewritten["checksum"] and not mismatches(rewritten)
    doc = " ".join(mha_site.bench.__doc__.split())
    assert "does not protect against: a deliberate edit of the samples" in doc
    contributing = " ".join((ROOT / "CONTRIBUTING.md").read_text().split())
    assert "It does **not** catch a deliberate edit of the samples" in contributing


def test_every_committed_result_matches_its_samples_or_is_listed():
    unsampled = set()
    for name in measured.available():
        data = measured.load(name)  # refuses a summary its samples do not give
        if not sampled(data):
            unsampled.add(name)
    assert unsampled == UNSAMPLED, (
        "a result without raw samples that is not listed, or a listed one that "
        "has them now (remove it from UNSAMPLED)"
    )
