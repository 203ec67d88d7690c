"""Published data checks itself: every model's parts add up to the total its source states.

The check (mha.data.totals.contradictions) runs at the start of every build (a hook)
and here. These tests plant the faults it exists
for: GPT-2 small given a thirteenth layer, in-process and in a real `mkdocs build`.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mha.data import published, totals, voita2019

ROOT = Path(__file__).resolve().parent.parent
NAMES = [row.name for row in (*published.MODELS, *published.DECODERS)]


@pytest.mark.parametrize("name", NAMES)
def test_every_published_model_carries_its_parts_with_a_source(name):
    arch = totals.ARCHITECTURES[name]
    assert arch.vocab > 0 and arch.d_ff > 0
    assert arch.source.url.startswith("https://") and arch.source.where.strip()
    assert arch.positions in {"learned", "sinusoidal", "rotary"}
    assert (arch.learned_positions > 0) == (arch.positions == "learned")
    b = totals.breakdown(name)
    assert b.total == b.embeddings + b.attention + b.ffn + b.norms + b.other
    assert b.stated_source.url.startswith("https://")


def test_no_published_total_contradicts_its_source():
    assert totals.contradictions() == []


def test_counts_known_from_the_released_checkpoints():
    """Totals of released weights, as transformers' num_parameters() reports them."""
    assert totals.breakdown("GPT-2 small").total == 124_439_808
    assert totals.breakdown("BERT-base").total == 109_482_240
    assert totals.breakdown("SmolLM2-135M").total == 134_515_008
    assert totals.breakdown("Llama-2 7B").total == 6_738_415_616
    assert totals.breakdown("Llama-3 70B").total == 141_107_412_992 // 2  # bf16 bytes
    # Gemma's paper counts every part exactly; the non-embedding part matches to the unit
    gemma = totals.breakdown("Gemma 2B")
    assert gemma.attention + gemma.ffn + gemma.norms == 1_981_884_416


def test_a_known_mismatch_is_listed_not_hidden_by_the_tolerance():
    base = totals.breakdown("Transformer base")
    assert abs(base.total - base.stated) > totals.tolerance(base.stated)
    assert 62_500_000 < base.total < 63_500_000  # "about 63M" with "about 37000" tokens


@pytest.mark.parametrize(
    "stated, low, high",
    [
        (7_000_000_000, 6_500_000_000, 7_500_000_000),  # "7B"
        (70_000_000_000, 65_000_000_000, 75_000_000_000),  # "70B"
        (7_300_000_000, 7_250_000_000, 7_350_000_000),  # "7.3B"
        (124_000_000, 123_500_000, 124_500_000),  # "124M"
    ],
)
def test_a_nominal_size_means_its_rounding(stated, low, high):
    assert totals.tolerance(stated) == (high - low) / 2 == stated - low


def _with_gpt2_layers(monkeypatch, layers: int) -> None:
    models = tuple(
        dataclasses.replace(m, n_layers=layers) if m.name == "GPT-2 small" else m
        for m in published.MODELS
    )
    monkeypatch.setattr(totals, "MODELS", models)


def test_gpt2_small_with_13_layers_is_refused(monkeypatch):
    _with_gpt2_layers(monkeypatch, 13)
    found = totals.contradictions()
    row = next(
        i
        for i, line in enumerate(Path(published.__file__).read_text().splitlines(), 1)
        if '"GPT-2 small"' in line
    )
    assert len(found) == 1
    assert found[0].startswith(f"GPT-2 small (src/mha/data/published.py:{row}): ")
    assert "131,527,680" in found[0] and "124,000,000" in found[0]


@pytest.mark.parametrize("layers", [79, 81, 82])
def test_llama3_70b_with_another_layer_count_is_refused(monkeypatch, layers):
    decoders = tuple(
        dataclasses.replace(m, n_layers=layers) if m.name == "Llama-3 70B" else m
        for m in published.DECODERS
    )
    monkeypatch.setattr(totals, "DECODERS", decoders)
    found = totals.contradictions()
    assert len(found) == 1 and found[0].startswith("Llama-3 70B (src/mha/data/")
    assert "the released checkpoint holds 70,553,706,496" in found[0]


def test_cited_numbers_quote_their_source():
    """Each number cited from Voita et al. is written as in the stored words of the
    abstract: changing one (0.15 BLEU to 0.25) without its source fails."""
    for number in (
        voita2019.ENCODER_HEADS,
        voita2019.PRUNED_HEADS,
        voita2019.BLEU_COST,
    ):
        assert re.search(
            rf"(?<![\d.]){re.escape(str(number))}(?![\d.])", voita2019.QUOTE
        )
    assert published.VOITA_2019.bleu_drop == voita2019.BLEU_COST


def test_a_listed_mismatch_that_matches_is_refused(monkeypatch):
    monkeypatch.setitem(totals.KNOWN_MISMATCHES, "GPT-2 small", "no longer true")
    assert totals.contradictions() == [
        "GPT-2 small: listed in KNOWN_MISMATCHES but its count matches"
    ]


def test_a_model_without_its_parts_is_refused(monkeypatch):
    parts = {k: v for k, v in totals.ARCHITECTURES.items() if k != "Falcon-7B"}
    monkeypatch.setattr(totals, "ARCHITECTURES", parts)
    assert totals.contradictions() == ["Falcon-7B: no Architecture in mha.data.totals"]


def test_the_build_refuses_gpt2_small_with_13_layers(tmp_path):
    """End to end: a copy of src/ with the fault planted, a one-page strict build."""
    src = tmp_path / "src"
    shutil.copytree(
        ROOT / "src" / "mha", src / "mha", ignore=shutil.ignore_patterns("__pycache__")
    )
    data = src / "mha" / "data" / "published.py"
    text = data.read_text()
    planted = text.replace(
        '"GPT-2 small",\n        768,\n        12,\n        12,',
        '"GPT-2 small",\n        768,\n        12,\n        13,',
    )
    assert planted != text, (
        "the GPT-2 small row changed shape: update the planted fault"
    )
    data.write_text(planted)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "planted.md").write_text("# Planted\n")
    config = {
        "site_name": "planted",
        "docs_dir": str(docs),
        "site_dir": str(tmp_path / "site"),
        "hooks": [str(ROOT / "docs" / "_glue" / "published.py")],
    }
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(tmp_path / "mkdocs.yml"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(src), "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "GPT-2 small (src/mha/data/published.py:" in output
    assert "the shape and architecture in mha.data count 131,527,680" in output


def test_gpt3s_total_is_read_with_the_precision_the_paper_prints(monkeypatch):
    """Brown et al. print 175.0B: four significant digits, so the counted 174.6B is a
    mismatch (listed with its reason), not a match within "175B"'s half a billion."""
    b = totals.breakdown("GPT-3 175B")
    assert b.stated_digits == 4 and totals.tolerance(b.stated, 4) == 50_000_000
    assert abs(b.total - b.stated) > 50_000_000
    monkeypatch.delitem(totals.KNOWN_MISMATCHES, "GPT-3 175B")
    assert [f for f in totals.contradictions() if f.startswith("GPT-3 175B")]
