"""A bench result resealed with a planted provenance, and the line a page prints of
it: when (if the result says), at which commit and under which load it was sealed.

``plant`` copies every committed result into a temporary folder, rewrites the
provenance of one (its commit, its date or none, its load, uncommitted changes) and
seals it again as ``make bench`` does; the library then reads that folder. A page
built after it (``page.__wrapped__()``, past its cache) prints the planted seal.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from mha.support import formatting, measured
from mha_site.bench import seal

# (sealed_at, uncommitted changes): a result of today's benchmarks, and one written
# before they recorded the date, from a tree with changes
PLANTS = [("2031-05-17T08:09:10+00:00", False), (None, True)]


def plant(
    name: str,
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    sealed_at: str | None,
    uncommitted: bool,
    commit: str,
    load: float,
) -> measured.Seal:
    """Reseal result ``name`` in ``folder`` with the planted provenance; the library
    reads ``folder`` from now on. The seal a page should print."""
    if not any(folder.glob("*.json")):
        for path in measured.DATA_DIR.glob("*.json"):
            shutil.copy(path, folder / path.name)
    monkeypatch.setattr(measured, "DATA_DIR", folder)
    data = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
    origin = {
        key: value for key, value in data["provenance"].items() if key != "sealed_at"
    }
    origin |= {"commit": commit, "uncommitted_changes": uncommitted}
    origin["machine"] = {**origin["machine"], "load_average_1min": load}
    if sealed_at:
        origin["sealed_at"] = sealed_at
    body = {k: v for k, v in data.items() if k != "checksum"}
    text = json.dumps(seal({**body, "provenance": origin}), indent=2, sort_keys=True)
    (folder / f"{name}.json").write_text(text + "\n", encoding="utf-8")
    return measured.Seal.of(measured.load(name))


def assert_printed(text: str, sealed: measured.Seal, times: int = 1) -> None:
    """``text`` (a rendered page) names ``sealed``'s commit ``times`` times, each
    with its date if it has one and never an invented one, and its load."""
    at = f"at commit <code>{sealed.short}</code>"
    assert text.count(at) == times, (at, text.count(at))
    dated = re.findall(rf"\bon (\S+) {re.escape(at)}", text)
    assert dated == ([sealed.date] * times if sealed.date else []), dated
    load = formatting.decimals(sealed.load, 1)
    assert f"load average {load}" in text
    assert (f"{at} (with uncommitted changes)" in text) is bool(sealed.uncommitted)
