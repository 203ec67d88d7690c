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
# Results without raw samples behind a summary: each states single measurements, with
# nothing to summarise (a list that only shrinks: the test below fails when one of
# them keeps samples, until it leaves the list).
# fast_attention: peak bytes of each form, counted once (the same every run);
# site: one run of each whole command (cold build, make test, serve) in fresh clones;
# studies: each study's CPU seconds in one cold build (the progress estimates).
UNSAMPLED = {"fast_attention", "site", "studies"}


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
