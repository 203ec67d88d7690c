"""Published decoder configurations and their KV-cache accounting.

The per-token figures are checked against hand-computed values for each attention
kind, against a real `KVCache` filled by a layer of the same shape, and against the
traps the page names (Falcon-7B's one K/V head, head width not d_model / h).
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

from mha import KVCache, MultiHeadAttention
from mha.accounting import kv_cache_bytes
from mha.data.kv_designs import KV_DESIGNS
from mha.data.published import DECODERS, GQA_TABLE_1, decoder
from mha.figures import to_svg
from mha.figures.kv_cache import cache_vs_context, fit_in_memory, head_sharing
from mha.figures.plotted import plotted
from mha.pages.kv_cache import (
    _BYTES_PER_VALUE,
    _CONTEXT_MODEL,
    _CONTEXTS,
    _EXAMPLE_CONTEXT,
    _EXAMPLE_MEMORY,
    _FIT_MODELS,
    _GIB,
    _attention_kind,
    _cache_bytes,
    _calculator_json,
    _calculator_view,
    _facts,
    _figures,
    _Shape,
    _size_text,
    _tradeoffs,
    _what_fits,
    page,
)
from mha.support.page import WIDGET_BYTES
from tests.pages.drawn import draw

REQUIRED = [
    "Llama-2 7B",
    "Llama-2 13B",
    "Llama-2 70B",
    "Llama-3 8B",
    "Llama-3 70B",
    "Mistral 7B v0.1",
    "Falcon-7B",
    "PaLM 540B",
    "Gemma 2B",
    "Qwen2.5 7B",
    "GPT-3 175B",
    "SmolLM2-135M",
]


def test_every_required_model_is_there_once_with_a_source():
    names = [c.name for c in DECODERS]
    assert len(names) == len(set(names))
    assert set(REQUIRED) <= set(names)
    for c in DECODERS:
        for source in (c.source, c.params_source):
            assert source.url.startswith("https://") and source.title and source.where
        assert c.n_heads % c.n_kv_heads == 0, c.name


@pytest.mark.parametrize(
    ("name", "layers", "heads", "kv_heads", "head_dim"),
    [  # read again from the sources, so that a typo in the data module fails here
        ("Llama-2 70B", 80, 64, 8, 128),
        ("Llama-3 8B", 32, 32, 8, 128),
        ("Mistral 7B v0.1", 32, 32, 8, 128),
        ("Falcon-7B", 32, 71, 1, 64),
        ("PaLM 540B", 118, 48, 1, 256),
        ("Gemma 2B", 18, 8, 1, 256),
        ("Qwen2.5 7B", 28, 28, 4, 128),
        ("GPT-3 175B", 96, 96, 96, 128),
        ("SmolLM2-135M", 30, 9, 3, 64),
    ],
)
def test_configuration_and_its_per_token_bytes(name, layers, heads, kv_heads, head_dim):
    c = decoder(name)
    assert (c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim) == (
        layers,
        heads,
        kv_heads,
        head_dim,
    )
    assert _cache_bytes(c, 1) == 2 * layers * kv_heads * head_dim * 2
    assert _cache_bytes(c, 1, n_kv_heads=heads) == 2 * layers * heads * head_dim * 2
    assert _cache_bytes(c, 1, itemsize=4) == 2 * _cache_bytes(c, 1)


def test_per_token_bytes_equal_a_filled_cache_of_the_same_shape():
    """The formula agrees with `KVCache.nbytes` of a layer shaped like SmolLM2."""
    c = decoder("SmolLM2-135M")
    layer = MultiHeadAttention(c.d_model, c.n_heads, c.n_kv_heads, dtype=np.float32)
    assert layer.d_k == c.head_dim
    x = np.random.default_rng(0).normal(size=(2, 5, c.d_model)).astype(np.float32)
    caches = [KVCache(2, c.n_kv_heads, c.head_dim, 8, np.float32) for _ in range(3)]
    for cache in caches:  # three layers, one cache each
        layer.step(x, cache)
    measured = sum(cache.nbytes for cache in caches)
    per_layer = kv_cache_bytes(2, c.n_kv_heads, c.head_dim, 5, 4)
    assert measured == 3 * per_layer
    assert per_layer * c.n_layers == _cache_bytes(c, 5, batch=2, itemsize=4)


def test_falcon_has_one_kv_head_whatever_its_config_counts():
    falcon = decoder("Falcon-7B")
    assert falcon.n_kv_heads == 1 and _attention_kind(falcon.n_heads, 1) == "MQA"
    assert "multi_query" in falcon.source.where
    row = next(r for r in page().rows if r.config is falcon)
    assert row.saving == falcon.n_heads == 71


def test_head_width_is_read_not_derived_from_d_model():
    palm, gemma7 = decoder("PaLM 540B"), decoder("Gemma 7B")
    assert palm.n_heads * palm.head_dim != palm.d_model
    assert gemma7.n_heads * gemma7.head_dim != gemma7.d_model
    assert page().naive == {"PaLM 540B": (384, 1.5), "Gemma 7B": (192, 0.75)}
    assert _cache_bytes(palm, 1) == 2 * 118 * 1 * 256 * 2  # not 384


def test_attention_kinds_at_the_ends_of_gqa():
    assert _attention_kind(8, 8) == "MHA"  # GQA-h
    assert _attention_kind(8, 1) == "MQA"  # GQA-1
    assert _attention_kind(8, 2) == "GQA-2"
    with pytest.raises(ValueError, match="n_kv_heads: expected a divisor of n_heads=8"):
        _attention_kind(8, 3)
    kinds = {r.config.name: r.kind for r in page().rows}
    assert kinds["Llama-2 7B"] == kinds["GPT-3 175B"] == "MHA"
    assert kinds["Llama-2 70B"] == "GQA-8" and kinds["Gemma 2B"] == "MQA"


def test_sliding_window_caps_the_tokens_held():
    mistral = decoder("Mistral 7B v0.1")
    assert _cache_bytes(mistral, 100) == 100 * _cache_bytes(mistral, 1)
    assert mistral.sliding_window == 4096
    assert _cache_bytes(mistral, 10**6) == _cache_bytes(mistral, 4096)
    assert _cache_bytes(mistral, 4097) == 4096 * _cache_bytes(mistral, 1)
    with pytest.raises(ValueError, match="context: expected a positive integer"):
        _cache_bytes(mistral, 0)


def test_the_sequences_that_fit_are_the_largest_count_that_fits():
    fits = page().fits
    assert list(fits) == list(_FIT_MODELS)
    for name in _FIT_MODELS:
        c = decoder(name)
        for n, h_kv in zip(fits[name], (c.n_kv_heads, c.n_heads), strict=True):
            per_sequence = _cache_bytes(c, _EXAMPLE_CONTEXT, n_kv_heads=h_kv)
            used = page().counted[name] * 2 + n * per_sequence
            assert used <= _EXAMPLE_MEMORY < used + per_sequence, name
    assert fits["Llama-2 7B"] == (33, 33)  # MHA: 512 KiB a token, 2 GiB a sequence
    assert fits["Llama-3 8B"][0] > 3 * fits["Llama-2 7B"][0]


def test_weights_bytes_come_from_the_counted_parameters_not_the_nominal_size():
    assert decoder("Gemma 2B").params == 524_550_144 + 1_981_884_416  # as stated
    assert decoder("PaLM 540B").params == 540_350_000_000
    assert decoder("GPT-3 175B").params * 2 == 350 * 10**9
    assert decoder("Llama-2 70B").params == 70 * 10**9  # nominal: "70B"
    assert page().counted["Llama-2 70B"] == 68_976_648_192  # the cost page's count
    assert round(page().gib["weights"], 2) == 128.48  # not 130.39 GiB
    gemma = decoder("Gemma 2B")  # the weights come first: 16-bit, params × 2 bytes
    free = _EXAMPLE_MEMORY - page().counted["Gemma 2B"] * 2
    per_sequence = _cache_bytes(gemma, _EXAMPLE_CONTEXT)
    assert page().fits["Gemma 2B"][0] == free // per_sequence


def test_every_published_decoder_has_its_context_with_a_source():
    for c in DECODERS:
        assert isinstance(c.max_context, int) and c.max_context >= 2048, c.name
        assert c.context_source.url.startswith("https://"), c.name
        assert f"{c.max_context}" in c.context_source.where.replace(",", "") or (
            c.max_context == 4096 and "4k" in c.context_source.where
        ), c.name
    assert decoder("Llama-2 70B").max_context == 4096
    assert decoder("GPT-3 175B").max_context == 2048


def test_what_fits_is_the_largest_context_and_batch_that_fit():
    rng = np.random.default_rng(0)
    for _ in range(200):
        layers, h_kv, d = (int(x) for x in rng.integers(1, 100, size=3))
        n, b, s = int(rng.integers(1, 10**5)), int(rng.integers(1, 64)), 2
        params, memory = int(rng.integers(1, 10**10)), int(rng.integers(1, 2**36))
        fit = _what_fits(layers, h_kv, d, n, b, s, params, memory)
        assert fit.cache == layers * kv_cache_bytes(b, h_kv, d, n, s)
        assert fit.weights == params * s and fit.free == max(memory - params * s, 0)
        per_token = layers * kv_cache_bytes(b, h_kv, d, 1, s)
        per_sequence = layers * kv_cache_bytes(1, h_kv, d, n, s)
        used = fit.weights + fit.longest_context * per_token
        assert fit.longest_context == 0 or used <= memory
        assert fit.weights + (fit.longest_context + 1) * per_token > memory
        assert fit.weights + (fit.largest_batch + 1) * per_sequence > memory
    with pytest.raises(ValueError, match="layers: expected a positive integer"):
        _what_fits(0, 1, 1, 1, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="n_kv_heads: expected a positive integer"):
        _what_fits(1, 0, 1, 1, 1, 1, 1, 1)


def test_sizes_are_written_to_three_figures_in_a_scaling_unit():
    assert _size_text(1_342_177_280) == "1.25 GiB"
    assert _size_text(10 * _GIB) == "10 GiB" and _size_text(160 * 2**20) == "160 MiB"
    assert _size_text(999) == "999 bytes" and _size_text(1000) == "0.977 KiB"
    assert _size_text(9 * 2**27) == "1.13 GiB"  # 1.125 exactly: the half goes up
    assert _size_text(1023 * 2**20 + 2**19) == "1 GiB"  # 1,023.5 MiB rounds up a unit
    assert _size_text(3 * 2**60) == "3 EiB"


def test_the_calculator_reads_llama_2_70b_as_the_page_says():
    view = _calculator_view(_Shape.of("Llama-2 70B"))
    assert view["kv-cache-given"] == "1.25 GiB"
    assert view["kv-cache-mha"] == "10 GiB" and view["kv-cache-mqa"] == "160 MiB"
    assert view["kv-kind"] == "GQA-8" and view["kv-heads-mha"] == "64"
    assert (
        "alone exceed" in view["kv-weights"] and view["kv-batch-given"] == "0 sequences"
    )
    bigger = _calculator_view(_Shape(80, 64, 8, 128, 4096, 1, 2, 70 * 10**9, 160))
    assert bigger["kv-batch-given"] == "23 sequences"  # (160 GiB - 140 GB) / 1.25 GiB
    assert bigger["kv-warning"] == ""  # no model chosen: nothing to warn against
    past = _calculator_view(_Shape.of("Llama-2 70B", context=4097))
    assert past["kv-warning"].startswith("4,097 tokens is past the 4,096 tokens")
    assert _calculator_view(_Shape.of("Llama-2 70B", context=4096))["kv-warning"] == ""


def test_the_calculator_data_is_embedded_small_and_complete():
    data = json.loads(_calculator_json())
    designs = [d.name for d in KV_DESIGNS if d.name not in {c.name for c in DECODERS}]
    assert [m["name"] for m in data["models"]] == [c.name for c in DECODERS] + designs
    for m, c in zip(data["models"], DECODERS, strict=False):
        assert (m["layers"], m["kv_heads"], m["head_dim"], m["params"]) == (
            c.n_layers,
            c.n_kv_heads,
            c.head_dim,
            page().counted[c.name],
        )
        assert m["max_context"] == c.max_context
    assert len(_calculator_json().encode()) <= WIDGET_BYTES


def test_which_kv_head_each_query_head_reads_comes_from_repeat_kv():
    n_heads, panels, latent = page().figures["head_sharing"].data
    assert n_heads == 8 and [kv for _, kv, _ in panels] == [8, 2, 1]
    reads = [reads for _, _, reads in panels]
    assert reads == [list(range(8)), [0] * 4 + [1] * 4, [0] * 8]
    assert [kind for kind, _, _ in panels] == ["MHA", "GQA-2", "MQA"]
    fig = head_sharing(n_heads, panels, latent)
    for ax, h_kv in zip(fig.axes[:-1], [8, 2, 1], strict=True):
        ends = {tuple(line.get_xdata()) for line in ax.lines}
        assert len(ax.lines) == 8 and len({end[1] for end in ends}) == h_kv
    assert len(fig.axes[-1].lines) == 2 * n_heads  # each head: its query, the latent


def test_the_pages_facts_hold_and_follow_the_values():
    p = page()
    assert all(f.holds for f in p.facts.values()), {
        k: f.values for k, f in p.facts.items() if not f.holds
    }
    assert (
        p.models["Falcon-7B"].saving == 71 and p.models["Falcon-7B"].per_token == 8192
    )
    assert p.gib["longest"] > p.gib["weights"]  # "more than" the weights
    assert (round(p.gib["longest"], 2), round(p.gib["weights"], 2)) == (320.0, 128.48)
    assert p.fits["Llama-2 7B"] == (33, 33) and p.fits["Falcon-7B"] == (2147, 30)
    assert p.fits["Llama-3 8B"] == (130, 32)
    assert (round(p.speed_share, 2), round(p.recovered, 2)) == (0.86, 0.83)
    swapped = {**p.naive, "PaLM 540B": (192, 0.75), "Gemma 7B": (384, 1.5)}
    found = _facts(p.models, swapped, p.fits, p.tradeoff, p.counted, p.designs)
    assert not found["palm_too_large"].holds and not found["gemma_too_small"].holds
    assert found["palm_trap"].holds  # still a trap, the other way: the Markdown's else
    same = {**p.naive, "Gemma 7B": (256, 1.0)}
    assert not _facts(p.models, same, p.fits, p.tradeoff, p.counted, p.designs)[
        "gemma_trap"
    ].holds
    fewer = {**p.fits, "Llama-3 8B": (1, 1)}
    assert not _facts(p.models, p.naive, fewer, p.tradeoff, p.counted, p.designs)[
        "fit_llama"
    ].holds
    texts = p.figures
    assert "8 times the published grouped-query model" in texts["cache_vs_context"].alt
    assert "Falcon-7B fits the most, 2,147" in texts["fit_in_memory"].alt
    assert "Q0 to Q3 read KV0" in texts["head_sharing"].alt
    assert _figures(p.models, p.fits, p.mla.latent) == texts
    assert [o for o in p.options if o[2]] == [("Llama-3 8B", "GQA-8", True)]


def test_the_traps_and_the_weights_facts_turn_false_on_other_values():
    """Each sentence made wrong by changing the value it is about, from the page's."""
    p = page()

    def stated(models=p.models, naive=p.naive, counted=p.counted) -> dict:
        return _facts(models, naive, p.fits, p.tradeoff, counted, p.designs)

    falcon = p.models["Falcon-7B"]  # the table reading the config's 71 K/V heads
    read = dataclasses.replace(falcon, per_token=falcon.per_token_mha, saving=1.0)
    assert not stated(models={**p.models, "Falcon-7B": read})["falcon_trap"].holds
    palm = p.models["PaLM 540B"].config  # as if its d_model were h * d_head
    honest = {**p.naive, "PaLM 540B": (palm.head_dim, 1.0)}
    assert not stated(naive=honest)["palm_trap"].holds
    llama = p.models["Llama-2 70B"].config  # weights as large as its longest MHA cache
    cache = _cache_bytes(llama, p.longest, n_kv_heads=llama.n_heads)
    heavy = {**p.counted, llama.name: cache // _BYTES_PER_VALUE}
    assert not stated(counted=heavy)["mha_beyond_weights"].holds
    filling = {**p.counted, llama.name: _EXAMPLE_MEMORY // _BYTES_PER_VALUE}  # not over
    assert not stated(counted=filling)["llama70_absent"].holds


MHA_XXL, MQA_XXL, GQA_XXL = (
    next(r for r in GQA_TABLE_1 if r.model == m)
    for m in ("MHA-XXL", "MQA-XXL", "GQA-8-XXL")
)


@pytest.mark.parametrize(
    ("name", "model", "changed"),
    [  # GQA-8 as slow as MHA; MHA-Large scoring as GQA-8; GQA-8 half as fast as MQA
        ("tradeoff", "GQA-8-XXL", {"seconds_per_sample": MHA_XXL.seconds_per_sample}),
        ("tradeoff_large", "MHA-Large", {"average_score": GQA_XXL.average_score}),
        (
            "tradeoff_middle",
            "GQA-8-XXL",
            {"seconds_per_sample": 2 * MQA_XXL.seconds_per_sample},
        ),
    ],
)
def test_a_tradeoff_fact_turns_false_on_another_table_1(name, model, changed):
    p = page()
    table = [
        dataclasses.replace(r, **changed) if r.model == model else r
        for r in GQA_TABLE_1
    ]
    assert not _facts(
        p.models, p.naive, p.fits, _tradeoffs(table), p.counted, p.designs
    )[name].holds


def test_gqa_tradeoff_reads_table_1():
    rows = page().tradeoff
    assert _tradeoffs(GQA_TABLE_1) == rows
    assert set(rows) == {r.model for r in GQA_TABLE_1}
    assert rows["MHA-XXL"].speedup == 1.0 and rows["MHA-XXL"].score_drop == 0.0
    assert rows["MQA-XXL"].speedup == pytest.approx(1.51 / 0.24)
    assert rows["GQA-8-XXL"].score_drop == pytest.approx(0.1)
    # the paper's point: GQA is nearly as fast as MQA and nearly as good as MHA
    assert rows["GQA-8-XXL"].speedup > 0.8 * rows["MQA-XXL"].speedup
    assert rows["GQA-8-XXL"].score_drop < rows["MQA-XXL"].score_drop / 5


def test_figures_draw_the_core_values_deterministically():
    llama70 = decoder("Llama-2 70B")
    spec = page().figures["cache_vs_context"]
    name, layers, contexts, lines = spec.data
    assert (name, layers, contexts[0], contexts[-1]) == (
        "Llama-2 70B",
        80,
        512,
        131_072,
    )
    assert [label for label, _ in lines] == [
        "MHA (h_kv = 64)",
        "GQA-8 (h_kv = 8), as published",
        "MQA (h_kv = 1)",
    ]
    fig = cache_vs_context(*spec.data)
    at = contexts.index(4096)
    assert [line.get_ydata()[at] for line in fig.axes[0].lines] == [
        _cache_bytes(llama70, 4096, n_kv_heads=h) / _GIB for h in (64, 8, 1)
    ]
    assert to_svg(fig, "alt") == to_svg(cache_vs_context(*spec.data), "alt")
    bars, context = page().figures["fit_in_memory"].data
    assert context == _EXAMPLE_CONTEXT and [b[0] for b in bars][-2:] == [
        "Falcon-7B (MQA)",
        "Gemma 2B (MQA)",
    ]
    fig = fit_in_memory(bars, context)
    widths = [bar.get_width() for bar in fig.axes[0].patches]
    assert widths == [b[1] for b in bars] + [b[2] for b in bars]
    assert bars[4][1:] == page().fits["Falcon-7B"] == (2147, 30)


def test_every_text_of_the_figures_follows_the_page_colour():
    """No text is left to SVG's default black, unreadable in the dark scheme."""
    specs = page().figures
    figures_drawn = (
        cache_vs_context(*specs["cache_vs_context"].data),
        fit_in_memory(*specs["fit_in_memory"].data),
    )
    for fig in figures_drawn:
        styles = re.findall(r'<text style="([^"]*)"', to_svg(fig, "alt"))
        assert styles and all("fill: currentColor" in s for s in styles)


def test_deepseek_v2_caches_a_latent_and_a_position_key_per_token_per_layer():
    formula = (512 + 64) * 60 * 2  # (d_c + d_h^R) · layers · 16-bit
    assert page().designs[0]["per_token"] == formula
    shape = _Shape.of("DeepSeek-V2", context=1)
    assert (shape.latent, shape.layers, shape.window) == (512 + 64, 60, 0)
    fit = shape.fits()
    assert fit.cache == formula
    view = _calculator_view(shape)
    assert view["kv-kind"] == "MLA" and view["kv-cache-given"] == _size_text(formula)
    assert view["kv-cache-mha"] == _size_text(
        2 * 128 * 128 * 60 * 2
    )  # 128 heads of 128


def test_a_window_caps_its_layers_and_only_theirs():
    gemma = _Shape.of("Gemma 2 9B", context=10**6)
    assert (gemma.window, gemma.windowed_layers, gemma.layers) == (4096, 21, 42)
    per_layer_token = 2 * 8 * 256 * 2
    expected = per_layer_token * (21 * 10**6 + 21 * 4096)
    assert gemma.fits().cache == expected
    gemma_2 = next(r for r in page().designs if r["design"].name == "Gemma 2 9B")
    assert gemma_2["per_token"] == per_layer_token * 42  # no window caps one token
    mistral = _Shape.of("Mistral 7B v0.1", context=10**6)  # every layer windowed
    assert mistral.fits().cache == _cache_bytes(decoder("Mistral 7B v0.1"), 4096)
    assert mistral.fits().longest_context is None
    assert _calculator_view(mistral)["kv-context-given"].startswith("no limit")


@pytest.mark.parametrize("seed", range(40))
def test_the_longest_context_is_the_last_that_fits(seed):
    rng = np.random.default_rng(seed)
    layers = int(rng.integers(2, 80))
    args = dict(
        layers=layers,
        kv_heads=int(rng.integers(1, 9)),
        head_dim=int(rng.choice([64, 128, 256])),
        batch=int(rng.integers(1, 9)),
        itemsize=2,
        params=int(rng.integers(10**8, 10**10)),
        memory=int(rng.integers(2**33, 2**37)),
        latent=int(rng.choice([0, 576])),
        window=int(rng.choice([0, 1024, 4096])),
        windowed_layers=int(rng.integers(0, layers)),  # at least one global layer
    )
    longest = _what_fits(context=1, **args).longest_context
    free = _what_fits(context=1, **args).free
    if longest:
        assert _what_fits(context=longest, **args).cache <= free
    assert _what_fits(context=longest + 1, **args).cache > free


def test_the_design_facts_turn_false_on_other_values():
    p = page()

    def fails(name: str, rows: list[dict]) -> bool:
        found = _facts(p.models, p.naive, p.fits, p.tradeoff, p.counted, rows)
        return not found[name].holds

    rows = p.designs
    assert not fails("mla_small", rows) and not fails("half_local", rows)
    mla = next(i for i, r in enumerate(rows) if r["design"].name == "DeepSeek-V2")
    wide = [dict(r, share=0.5) if i == mla else r for i, r in enumerate(rows)]
    assert fails("mla_small", wide)
    gemma = next(i for i, r in enumerate(rows) if r["design"].name == "Gemma 2 9B")
    fewer = dict(rows[gemma], local_layers=rows[gemma]["local_layers"] - 1)
    other = [fewer if i == gemma else r for i, r in enumerate(rows)]
    assert fails("half_local", other)


# --- its figures --------------------------------------------------------------
# The KV-cache page's figures draw the page's values: the K/V head each query head
# reads, each line's cache sizes under its own label, each model's two bar counts.


def test_head_sharing_joins_each_query_head_to_the_kv_head_it_reads():
    n_heads, panels, _ = page().figures["head_sharing"].data  # MLA's panel: below
    drawn = plotted(draw(page(), "head_sharing"))
    assert len(drawn) == len(panels) + 1
    for panel, (kind, h_kv, reads) in zip(drawn, panels, strict=False):
        assert panel.title.startswith(f"{kind}:")
        queries, kv = panel.points.values()  # circles, then squares
        assert queries[:, 0].tolist() == list(range(n_heads))
        assert len(kv) == h_kv
        ends = [line[0].tolist() for line in panel.lines.values()]  # x at Q, at KV
        assert ends == [[i, kv[j, 0]] for i, j in enumerate(reads)]
        names = [f"Q{i}" for i in range(n_heads)]
        assert panel.texts == names + [f"KV{j}" for j in range(h_kv)]


def test_cache_vs_context_draws_each_sizes_line_under_its_own_label():
    p = page()
    (panel,) = plotted(draw(p, "cache_vs_context"))
    assert panel.title.startswith(_CONTEXT_MODEL)
    at = _CONTEXTS.index(p.context)
    by_kind = {label.split()[0]: line for label, line in panel.lines.items()}
    assert set(by_kind) == {"MHA", "MQA", p.models[_CONTEXT_MODEL].kind}
    assert all(line[0].tolist() == list(_CONTEXTS) for line in by_kind.values())
    assert np.isclose(by_kind["MHA"][1, at], p.gib["mha"])
    assert np.isclose(by_kind["MHA"][1, -1], p.gib["longest"])
    assert np.isclose(by_kind["MQA"][1, at], p.gib["mqa"])
    (published,) = (v for k, v in panel.lines.items() if k.endswith("as published"))
    assert np.isclose(published[1, at], p.gib["published"])


def test_fit_in_memory_draws_each_models_counts_as_published_and_with_full_mha():
    p = page()
    (panel,) = plotted(draw(p, "fit_in_memory"))
    published, full = (np.array([p.fits[n][k] for n in _FIT_MODELS]) for k in (0, 1))
    assert panel.bars["as published"].tolist() == published.tolist()
    assert panel.bars["with full MHA"].tolist() == full.tolist()
    assert [label.split(" (")[0] for label in panel.yticks] == list(_FIT_MODELS)
    assert panel.texts == [f"{n:,}" for n in [*published, *full]]


def test_mla_is_counted_at_deepseek_v2s_sizes_beside_mha_gqa_and_mqa():
    p = page()
    table = p.latent
    assert [k for k in table] == ["MHA", "GQA-8", "MQA", "MLA"]
    assert [r["per_token"] for r in table.values()] == [32_768, 2_048, 256, 512 + 64]
    assert (table["MLA"]["cache"], table["MQA"]["cache"]) == ("270 MiB", "120 MiB")
    assert p.latent_groups == 2.25  # MLA caches as much as GQA with 2.25 K/V heads
    assert p.facts["mla_over_twice_mqa"].holds and p.facts["mla_under_gqa8"].holds


def test_the_latent_facts_turn_false_when_mla_caches_less():
    from mha.pages.kv_cache import _latent_facts

    small = {k: dict(v) for k, v in page().latent.items()}
    small["MLA"]["per_token"] = 2 * small["MQA"]["per_token"]  # only twice: not more
    small["GQA-8"]["per_token"] = small["MLA"]["per_token"]
    found = _latent_facts(small)
    assert not found["mla_over_twice_mqa"].holds and not found["mla_under_gqa8"].holds


def test_the_mla_panel_draws_the_latent_not_a_kv_head():
    """The MLA panel is no copy of MQA's: a bar as wide as the latent, a small
    position key beside it, and one hollow (projected, uncached) K/V a query head."""
    spec = page().figures["head_sharing"]
    n_heads, panels, latent = spec.data
    assert latent == (512, 64) and "MLA" not in [kind for kind, *_ in panels]
    fig = head_sharing(*spec.data)
    mla = fig.axes[-1]
    bar, key = mla.patches
    assert bar.get_width() / key.get_width() > 3  # the latent is far wider
    hollow = mla.collections[0]
    assert len(hollow.get_offsets()) == n_heads  # one own K/V a query head
    assert "512" in " ".join(t.get_text() for t in mla.texts)


def test_every_calculator_entry_has_counted_parameters_or_says_why_not():
    from mha.data.totals import breakdown
    from mha.pages.kv_cache import _calculator_models

    stated = []
    for d in _calculator_models().values():
        if d.params_stated_why:
            stated.append(d.name)
        else:
            assert d.params == breakdown(d.name).total, d.name
    assert stated == ["DeepSeek-V2", "Gemma 2 9B"]
    assert [d.name for d in page().stated] == stated
