"""The heads explorer: the widget's data, and what ``docs/heads-explorer.md`` prints.

The page's script (``docs/assets/js/heads-explorer.js``) only renders the JSON that
``_widget`` embeds; every number is computed here by the core at build time.

Schema of ``_example(name)`` (floats rounded to ``_DECIMALS`` places, positions from 0):
``version`` (2), ``title``, ``queries`` and ``keys`` (``{"token", "position"}``),
``relations`` (what q·k is the sum of, in column blocks), ``sinks`` (the slider's
strengths; ``[]``: no slider), ``default`` (the variant shown first) and ``variants``,
one per sink strength: ``sink``, ``summary`` (what the one-head map does),
``contributions`` (``(n_relations, n_q, n_k)``: each relation's q·k) and ``configs``,
one per head count, ascending: ``n_heads``, ``label``, ``d_k``, ``scale`` (√d_k) and
``heads``, each with its ``name``, ``relations`` (the blocks it holds) and ``rows``, one
per query: ``dots`` (q·k), ``scores`` (q·k / √d_k), ``exps``, ``sum`` (Σ exp) and
``weights`` (the core's softmax).
"""

from __future__ import annotations

import functools
import html
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from mha.attention import scaled_dot_product_attention
from mha.heads import split_heads
from mha.support.cache import cached
from mha.support.page import Fact, Figure, Page
from mha.worked import cat_mat

_SCHEMA_VERSION = 2
_DECIMALS = 4
_EXAMPLES = ("cat_mat",)
# Two maps "look alike" below this mean absolute difference of their weights.
_ALIKE = 0.1


def _numbers(values: np.ndarray) -> list | float:
    """Nested lists of floats rounded to ``_DECIMALS`` places (no ``-0.0``)."""
    return (np.round(np.asarray(values, dtype=np.float64), _DECIMALS) + 0.0).tolist()


def _config(q, k, n_heads: int, names: tuple[str, ...], n_relations: int) -> dict:
    """One head count's arithmetic for projected ``q (n_q, d)`` and ``k (n_k, d)``:
    ``n_heads`` heads run by the core, each holding ``n_relations / n_heads`` blocks."""
    q_h, k_h = split_heads(q, n_heads), split_heads(k, n_heads)  # (h, n, d_k)
    _, weights = scaled_dot_product_attention(q_h, k_h, k_h)  # (h, n_q, n_k)
    d_k = q_h.shape[-1]
    scale = np.sqrt(d_k)
    dots = q_h @ np.swapaxes(k_h, -1, -2)  # (h, n_q, n_k)
    exps = np.exp(dots / scale)
    per_head = n_relations // n_heads
    columns = {"dots": dots, "scores": dots / scale, "exps": exps}
    columns |= {"sum": exps.sum(axis=-1), "weights": weights}
    heads = [
        {
            "name": name,
            "relations": list(range(h * per_head, (h + 1) * per_head)),
            "rows": [
                dict(zip(columns, row, strict=True))
                for row in zip(*(_numbers(c[h]) for c in columns.values()), strict=True)
            ],
        }
        for h, name in enumerate(names)
    ]
    return {
        "n_heads": n_heads,
        "label": f"{n_heads} head" + ("" if n_heads == 1 else "s"),
        "d_k": d_k,
        "scale": _numbers(scale),
        "heads": heads,
    }


def _contributions(q: np.ndarray, k: np.ndarray, n_relations: int) -> np.ndarray:
    """Each relation's share of q·k, ``(n_relations, n_q, n_k)``, summing to q kᵀ:
    relation r owns the r-th of ``n_relations`` equal column blocks of q and k."""
    q_r, k_r = split_heads(q, n_relations), split_heads(k, n_relations)
    return q_r @ np.swapaxes(k_r, -1, -2)


@dataclass(frozen=True)
class _Dominance:
    """How much the one-head map of the cat/mat sentence is taken by "."."""

    sink: float  # the sink's strength
    rows_led: int  # rows whose largest weight is on "."
    rows: int  # rows in all
    mean_weight: float  # mean weight on "." over the rows

    @property
    def dominated(self) -> bool:
        """ "." takes the largest weight in more than half of the rows."""
        return 2 * self.rows_led > self.rows


def _dominance(sink: float | None = None) -> _Dominance:
    """The one-head map's lean towards "." at sink strength ``sink`` (default: the page's)."""
    strength = cat_mat.strengths(sink)
    one = cat_mat.attention_weights(1, strength)[0]  # (8, 8)
    stop = cat_mat.index_of(".")
    return _Dominance(
        sink=strength["sink"],
        rows_led=int((one.argmax(axis=-1) == stop).sum()),
        rows=one.shape[0],
        mean_weight=float(one[:, stop].mean()),
    )


def _variant(sink: float) -> dict:
    """The cat/mat sentence's arithmetic at sink strength ``sink``."""
    strength, d = cat_mat.strengths(sink), _dominance(sink)
    p, x = cat_mat.projections(strength), cat_mat.features()
    q, k = x @ p.w_q, x @ p.w_k  # (8, d_model)
    n_rel = len(cat_mat.HEADS)
    verdict = "dominated by" if d.dominated else "not dominated by"
    return {
        "sink": strength["sink"],
        "summary": f'Sink strength {d.sink:g}: in the one-head map "." takes the '
        f"largest weight in {d.rows_led} of {d.rows} rows, {d.mean_weight:.3f} of each "
        f'row on average: the merged head is {verdict} ".".',
        "contributions": _numbers(_contributions(q, k, n_rel)),
        "configs": [
            _config(q, k, h, cat_mat.head_names(h), n_rel) for h in cat_mat.HEAD_COUNTS
        ],
    }


def _cat_mat() -> dict:
    """The cat/mat example: its tokens, relations and one variant per sink strength."""
    tokens = [{"token": t, "position": p} for p, t in enumerate(cat_mat.TOKENS)]
    sinks = list(cat_mat.SINK_STRENGTHS)
    return {
        "version": _SCHEMA_VERSION,
        "title": " ".join(cat_mat.TOKENS),
        "queries": tokens,
        "keys": tokens,
        "relations": list(cat_mat.HEADS),
        "sinks": sinks,
        "default": sinks.index(cat_mat.STRENGTH["sink"]),
        "variants": [_variant(s) for s in sinks],
    }


def _example(name: str) -> dict:
    """The widget's data for ``name`` (one of ``_EXAMPLES``), cached."""
    if name not in _EXAMPLES:
        raise ValueError(f"name: expected one of {_EXAMPLES}, got {name!r}")
    return cached(_cat_mat)


def _widget(name: str) -> str:
    """The widget's HTML: its container with its data embedded as JSON (no request:
    it works from a file), and a ``noscript`` note.
    """
    data = json.dumps(_example(name), separators=(",", ":"), ensure_ascii=False)
    data = data.replace("</", "<\\/")  # safe inside a <script> element
    note = "The interactive explorer needs JavaScript; the figure on this page shows "
    return (
        f'<div class="mha-explorer" data-example="{name}">'
        f'<script type="application/json" class="mhx-data">{data}</script>'
        f"<noscript><p>{html.escape(note + 'the same weights.')}</p></noscript></div>"
    )


@functools.cache
def page() -> Page:
    """What the page prints: the sentence, its features, the heads' patterns, the widget."""
    s, tokens = cat_mat.STRENGTH, cat_mat.TOKENS
    four, one = cat_mat.attention_weights(4), cat_mat.attention_weights(1)[0]
    levels = tuple(_dominance(v) for v in cat_mat.SINK_STRENGTHS)
    patterns = cat_mat.solve()
    x, w = cat_mat.features(), cat_mat.projections()
    parts = _contributions(x @ w.w_q, x @ w.w_k, len(cat_mat.HEADS))
    parts = parts[:, cat_mat.index_of("cat"), cat_mat.index_of(".")]
    ex, default = _example("cat_mat"), _dominance()
    static = {key: ex[key] for key in ("queries", "keys")}  # the figure's data
    static["configs"] = ex["variants"][ex["default"]]["configs"]
    return Page(
        tokens=tokens,
        d_model=cat_mat.D_MODEL,
        block=cat_mat.BLOCK,
        strength=s,
        n_tags=len(cat_mat.POS_TAGS),
        n_words=len(cat_mat.VOCAB),
        n_tokens=len(tokens),
        features=tuple(  # position, token, tag, delimiter
            (i, t, tag, "yes" if t in cat_mat.DELIMITERS else "no")
            for i, (t, tag) in enumerate(zip(tokens, cat_mat.TAGS, strict=True))
        ),
        patterns=patterns,
        entropy=tuple(
            (h, patterns.entropy_bits[h]) for h in sorted(cat_mat.HEAD_COUNTS)[::-1]
        ),
        dominance=levels,
        default=default,
        exception_sum=s["part of speech"] + s["same word"],
        smallest_difference=_smallest_difference(four),
        first_dominated=min(d.sink for d in levels if d.dominated),
        cat_to_stop=" + ".join(
            f"{r} {v:g}" for r, v in zip(cat_mat.HEADS, parts, strict=True)
        ),
        widget=_widget("cat_mat"),
        facts=_facts(s, four, one, levels, patterns),
        figures=_figures(static, default),
    )


def _smallest_difference(four: np.ndarray) -> float:
    """The least mean absolute difference of two of the four heads' maps."""
    return min(float(np.abs(a - b).mean()) for a, b in itertools.combinations(four, 2))


def _facts(
    s: Mapping[str, float],
    four: np.ndarray,
    one: np.ndarray,
    levels: tuple[_Dominance, ...],
    p: cat_mat.Patterns,
) -> dict[str, Fact]:
    """The facts the page's sentences state, from the strengths ``s``, the four heads'
    and the one head's weights, the slider's ``levels`` and the patterns ``p``.
    """
    stop = cat_mat.index_of(".")
    led = one.argmax(axis=-1) == stop
    exceptions = tuple(t for t, x in zip(cat_mat.TOKENS, led, strict=True) if not x)
    second = sorted(s.values())[-2]
    cat = four[cat_mat.HEADS.index("same word"), cat_mat.index_of("cat")]
    smallest = _smallest_difference(four)
    first = min((d.sink for d in levels if d.dominated), default=np.inf)
    return {
        "sink_strongest": Fact(
            s["sink"] == max(s.values()) and s["neighbour"] == second,
            f"strengths {s}",
            says="the sink's strength is the largest of the four relations and the neighbour band's the second",
        ),
        "same_word_spreads": Fact(
            np.allclose(cat, 1 / len(cat)),
            f"cat's same-word row {cat.round(3).tolist()}",
            says='the same-word head gives each token of "cat"\'s row the same weight',
            qualitative="a tie: every weight of the row is equal, as the map above shows",
        ),
        "heads_differ": Fact(
            smallest >= _ALIKE,
            f"smallest mean |difference| {smallest:.3f}, threshold {_ALIKE}",
            says="every two of the four heads' maps differ by at least 0.1 per cell on average",
        ),
        "one_head_dominated": Fact(
            2 * led.sum() > len(led),
            f"{led.sum()} of {len(led)} rows",
            says='"." takes the largest weight in more than half of the one-head map\'s rows',
        ),
        "the_exception": Fact(
            exceptions == ("the", "the")
            and s["part of speech"] + s["same word"] > s["sink"],
            f"rows not led by '.': {exceptions}; strengths {s}",
            says='the rows not led by "." are the two "the", and part of speech plus same word outweigh the sink',
        ),
        "slider_turns": Fact(  # "." leads most rows from ``first`` up, none below
            all(d.dominated == (d.sink >= first) for d in levels),
            f"dominance by strength {[(d.sink, d.rows_led) for d in levels]}",
            says='at every sink strength tried, "." leads most rows exactly from the first strength where it does',
        ),
        "two_heads_drowned": Fact(
            p.two_heads_the_to_the[1] < p.the_to_the[2],
            f"{p.two_heads_the_to_the[1]:.3f} vs {p.the_to_the[2]:.3f}",
            says='with two heads, the first "the" gives the second less weight than in the same-word head of four',
        ),
        "blur_order": Fact(
            p.entropy_bits[1] > max(p.entropy_bits[2], p.entropy_bits[4]),
            f"entropy {p.entropy_bits}",
            says="the one-head map's mean row entropy is above that of two heads and of four",
        ),
    }


def _figures(static: Mapping, default: _Dominance) -> dict[str, Figure]:
    """Every heatmap of the explorer's ``static`` variant, for print and readers
    without JavaScript; the alt text states the one-head map's ``default`` dominance."""
    return {
        "heatmaps": Figure(
            "heads_explorer.heatmaps",
            (static,),
            alt="Attention heatmaps of the sentence, rows are queries and columns "
            'keys. With four heads: a band beside the diagonal (neighbour), the two "the" '
            "and cat/mat paired with each other and themselves (part of speech), the "
            'two "the" paired and every other row spread evenly (same word), and a '
            'bright column on "." (sink). With one head: the column of "." brightest in '
            f'{default.rows_led} of {default.rows} rows, the two "the" rows pointing at each other.',
            caption="Every heatmap of the explorer at once (rows are queries, columns "
            "keys, brighter is more weight). Compare each of the four heads' single "
            'pattern with the one head, where the column of "." is the brightest in '
            "most rows.",
        )
    }
