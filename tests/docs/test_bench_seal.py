"""The bench seal's docs say what it protects against: accidents, not intent.

The seal is a plain SHA-256 (``mha_site.bench.seal``). These tests hold the two halves
of that sentence: an edit that forgets the checksum is refused, an edit that
recomputes it is not; as long as the second is true, the docs must say so.
"""

from __future__ import annotations

from pathlib import Path

import mha_site.bench
from mha.support.measured import checksum
from mha_site.bench import seal

ROOT = Path(__file__).resolve().parents[2]


def test_an_accidental_edit_breaks_the_seal():
    sealed = seal({"median_ms": 1.5})
    edited = {**sealed, "median_ms": 0.5}
    assert checksum(edited) != edited["checksum"]


def test_a_deliberate_edit_reseals_and_the_docs_say_so():
    edited = seal({"median_ms": 0.5})  # whoever edits can recompute the seal
    assert checksum(edited) == edited["checksum"]
    doc = " ".join(mha_site.bench.__doc__.split())
    assert "does not protect against: a deliberate edit" in doc
    contributing = " ".join((ROOT / "CONTRIBUTING.md").read_text().split())
    assert "It does **not** catch a deliberate edit" in contributing
