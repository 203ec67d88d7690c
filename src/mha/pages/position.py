"""Position: why attention needs it, and how RoPE gives it: ``docs/position.md``.

Attention alone is blind to order. The page computes, with the core: absolute
encodings added to the tokens (the base Transformer's sinusoids, ``mha.positions``,
and MiniLM's learned vectors); RoPE (``mha.rope``): scores that depend only on the
distance, the frequencies, the long-range decay, the two pairings; position in two
real models' previous-token heads, and SmolLM2 run on a sentence shifted by
``SHIFT`` positions; and ALiBi, NoPE and a scaled base in a few numbers each.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass

import numpy as np

from mha import positions
from mha.attention import causal_mask, scaled_dot_product_attention, softmax
from mha.experiments import minilm_corpus, repeated_tokens
from mha.experiments.corpus import sentences
from mha.experiments.head_atlas import atlas
from mha.pages import real_gqa_model
from mha.positions import sinusoidal
from mha.pretrained import minilm, smollm2
from mha.rope import RotaryEmbedding
from mha.support.cache import cached
from mha.support.page import Fact, Figure, Page
from mha.worked.base_layer import whole_layer

_SEED = 25
_N_POSITIONS = 64  # positions drawn in the similarity maps
# RoPE's shift test: a query at M, a key at N, both moved by each shift
_M, _N = 3, 10
_SHIFTS = (0, 1, 100, 1_000)
_RANDOM_PAIRS = 1_024  # random q, k per distance for the mean |score|
_MAX_DISTANCE = 1_024  # the decay is drawn from distance 0 to this
_DISTANCE_STEP = 16
_TEXT = (
    "The quick brown fox jumps over the lazy dog, and then it runs back home to sleep."
)
SHIFT = 100  # positions SmolLM2's second pass starts at
TOLERANCE = 1e-5  # weights of the two passes agree within this (float32 eps ~1.2e-7)
_OFFSETS = 6  # a previous-token head's weight on the tokens 0 .. OFFSETS - 1 back
_ALIBI_HEADS = 8  # Press et al.'s slopes for 8 heads: 2**-1 ... 2**-8
_ALIBI_KEYS = 16
_NOPE_TOKENS = 8
_EXTENSION = 4  # context extension: this many times the trained context
_PAIR = (
    3  # the pair drawn turning (about a third of a radian a token at SmolLM2's base)
)
_PAIR_SHIFT = 3  # ... at positions M, N and both moved by this


# --- 1. absolute positions ------------------------------------------------------------


def _cosine_similarity(vectors: np.ndarray) -> np.ndarray:
    """``(n, n)``: the cosine of the angle between every two rows of ``vectors``."""
    unit = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    return unit @ unit.T


def _largest_spread(matrix: np.ndarray) -> float:
    """The largest range of values along one diagonal of a square ``matrix``."""
    return max(np.ptp(np.diagonal(matrix, d)) for d in range(len(matrix)))


def _diagonal_means(matrix: np.ndarray, offsets: range) -> np.ndarray:
    """The mean of each diagonal ``matrix[t, t - d]`` for d in ``offsets`` (d > 0:
    d tokens back; d < 0: ahead).
    """
    return np.array([np.diagonal(matrix, -d).mean() for d in offsets])


@dataclass(frozen=True)
class _Absolute:
    """Absolute encodings: their similarity maps, and the cat sentence's two "the"."""

    sinusoidal: np.ndarray  # (N_POSITIONS, N_POSITIONS) cosine similarity
    learned: np.ndarray  # (N_POSITIONS, N_POSITIONS) ... of MiniLM's learned vectors
    d_model: int  # MiniLM's width, used for both
    n_learned: int  # how many positions MiniLM learned
    sinusoidal_spread: float  # largest spread of one diagonal of the sinusoidal map
    learned_near: np.ndarray  # (OFFSETS,) mean cosine of positions d apart, learned
    learned_spread: float  # largest spread of one diagonal of the learned map
    tokens: tuple[str, ...]  # the cat sentence
    the: tuple[int, int]  # the positions of its two "the"
    query: int  # the query that looks at them
    without: np.ndarray  # (h, 2) that query's weights on the two "the", no positions
    with_positions: np.ndarray  # (h, 2) ... with the sinusoidal encodings added


def _absolute() -> _Absolute:
    """The sinusoidal and learned encodings compared; the multi-head page's layer on
    the cat sentence with and without its position encodings.
    """
    learned_vectors = minilm.load().position_embeddings  # (512, d_model)
    d_model = learned_vectors.shape[1]
    sin = _cosine_similarity(sinusoidal(_N_POSITIONS, d_model))
    learned = _cosine_similarity(learned_vectors[:_N_POSITIONS].astype(np.float64))
    whole = whole_layer()
    layer, tokens = whole.layer, whole.tokens
    x = whole.x  # words + positions
    words = x - sinusoidal(len(tokens), x.shape[1])
    # the same word, the same vector (the subtraction leaves rounding differences)
    words = words[[tokens.index(t) for t in tokens]]
    the = tuple(i for i, t in enumerate(tokens) if t == "the")
    query = tokens.index("mat")

    def weights(inputs: np.ndarray) -> np.ndarray:
        return layer(inputs[None])[1][0, :, query][:, list(the)]  # (h, 2)

    return _Absolute(
        sinusoidal=sin,
        learned=learned,
        d_model=d_model,
        n_learned=len(learned_vectors),
        sinusoidal_spread=float(_largest_spread(sin)),
        learned_near=_diagonal_means(learned, range(_OFFSETS)),
        learned_spread=float(_largest_spread(learned)),
        tokens=tokens,
        the=the,
        query=query,
        without=weights(words),
        with_positions=weights(x),
    )


# --- 2. RoPE --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rope:
    """RoPE at SmolLM2's head width and base."""

    d_k: int
    base: float
    context: int  # SmolLM2's trained context length
    shifts: tuple[int, ...]
    rope_scores: np.ndarray  # (len(SHIFTS),) q at M + s against k at N + s, rotated
    added_scores: np.ndarray  # (len(SHIFTS),) ... with sinusoidal vectors added instead
    wavelengths: np.ndarray  # (d_k/2,) tokens per full turn of each pair
    slowest_turns: float  # turns of the slowest pair over the trained context
    distances: np.ndarray  # (G,) the distances of the decay figure
    bound: np.ndarray  # (G,) Su et al.'s relative upper bound, mean_i |S_i|
    ones: np.ndarray  # (G,) the score of q = k = all ones
    random_mean: np.ndarray  # (G,) mean |q·k| of random q, k
    pairing_equal: float  # max |half-split(x[perm]) - interleaved(x)[perm]|
    pairing_scores: tuple[float, float]  # one q·k under each pairing
    perplexity: float  # SmolLM2 on the real-model page's paragraph, as published
    swapped_perplexity: float  # ... with the other pairing


def _rope() -> _Rope:
    """RoPE's properties, computed with ``mha.rope.RotaryEmbedding`` at SmolLM2's
    shape, and the real-model page's perplexity with the wrong pairing.
    """
    config = smollm2.load().config
    d_k, base = config.d_k, config.rope_base
    rotate = RotaryEmbedding(d_k, base, interleaved=True)
    rng = np.random.default_rng(_SEED)
    q, k = rng.standard_normal((2, d_k))
    shifts = np.array(_SHIFTS)
    qs = rotate(np.broadcast_to(q, (len(shifts), d_k)), _M + shifts)
    ks = rotate(np.broadcast_to(k, (len(shifts), d_k)), _N + shifts)
    p = sinusoidal(_N + shifts.max() + 1, d_k)
    added = [(q + p[_M + s]) @ (k + p[_N + s]) for s in shifts]

    distances = np.arange(0, _MAX_DISTANCE + 1, _DISTANCE_STEP)
    angles = distances[:, None] * rotate.inv_freq  # (G, d_k/2)
    partial_sums = np.cumsum(np.exp(1j * angles), axis=-1)  # S_1 .. S_{d_k/2}
    bound = np.abs(partial_sums).mean(axis=-1)
    ones = rotate(np.ones((len(distances), d_k)), distances) @ np.ones(d_k)
    qr, kr = rng.standard_normal((2, _RANDOM_PAIRS, 1, d_k))
    kr_far = rotate(
        np.broadcast_to(kr, (_RANDOM_PAIRS, len(distances), d_k)), distances
    )
    random_mean = np.abs((qr * kr_far).sum(-1)).mean(axis=0)  # q at 0, k at distance

    half = RotaryEmbedding(d_k, base, interleaved=False)
    perm = np.concatenate([np.arange(0, d_k, 2), np.arange(1, d_k, 2)])
    x = rng.standard_normal((_N + 1, d_k))
    positions = np.arange(_N + 1)
    pairing_equal = np.abs(half(x[:, perm], positions) - rotate(x, positions)[:, perm])
    scores = []
    for r in (half, rotate):  # q at M, k at N under each pairing
        q_m, k_n = r(np.stack([q, k]), np.array([_M, _N]))
        scores.append(float(q_m @ k_n))
    study = real_gqa_model.page().study  # the perplexities that page publishes
    return _Rope(
        d_k=d_k,
        base=base,
        context=config.context_length,
        shifts=_SHIFTS,
        rope_scores=(qs * ks).sum(-1),
        added_scores=np.array(added),
        wavelengths=2 * np.pi / rotate.inv_freq,
        slowest_turns=float(config.context_length * rotate.inv_freq[-1] / (2 * np.pi)),
        distances=distances,
        bound=bound,
        ones=ones,
        random_mean=random_mean,
        pairing_equal=float(pairing_equal.max()),
        pairing_scores=(scores[0], scores[1]),
        perplexity=study.perplexity,
        swapped_perplexity=study.swapped_rope_perplexity,
    )


@dataclass(frozen=True)
class _Placed:
    """Pair ``_PAIR`` of the query at ``m`` and the key at ``n``, rotated."""

    m: int
    n: int
    q: np.ndarray  # (2,) the query's pair, turned by m θ
    k: np.ndarray  # (2,) the key's pair, turned by n θ
    dot: float  # q · k of the pair


@dataclass(frozen=True)
class _Pair:
    """One RoPE pair of the shift test's query and key, at two placements."""

    index: int
    theta: float  # radians a token
    q: np.ndarray  # (2,) unrotated (position 0)
    k: np.ndarray
    placed: tuple[_Placed, _Placed]  # at (M, N), and both moved by _PAIR_SHIFT


def _pair(d_k: int, base: float) -> _Pair:
    """Pair ``_PAIR`` of the shift test's random query and key (the same draw), turned
    by ``mha.rope.RotaryEmbedding`` at (M, N) and at (M, N) + _PAIR_SHIFT."""
    rotate = RotaryEmbedding(d_k, base, interleaved=True)
    q, k = np.random.default_rng(_SEED).standard_normal((2, d_k))
    pair = slice(2 * _PAIR, 2 * _PAIR + 2)  # interleaved: coordinates 2j and 2j + 1
    placed = []
    for m, n in ((_M, _N), (_M + _PAIR_SHIFT, _N + _PAIR_SHIFT)):
        q_m = rotate(q[None], np.array([m]))[0, pair]
        k_n = rotate(k[None], np.array([n]))[0, pair]
        placed.append(_Placed(m, n, q_m, k_n, float(q_m @ k_n)))
    theta = float(rotate.inv_freq[_PAIR])
    return _Pair(_PAIR, theta, q[pair], k[pair], (placed[0], placed[1]))


# --- 3. position in real heads -------------------------------------------------------


@dataclass(frozen=True)
class _RealHeads:
    """Each model's previous-token head, its weights by offset, and SmolLM2 shifted."""

    minilm_head: tuple[
        int, int
    ]  # (layer, head), the atlas's typical previous-token head
    minilm_offsets: np.ndarray  # (2 OFFSETS - 1,) mean weight on the token d back
    minilm_sentences: int
    smollm2_head: tuple[int, int]  # the depth page's strongest previous-token head
    smollm2_offsets: np.ndarray  # (OFFSETS,) mean weight on the token d back, on TEXT
    # (queries t >= 1: query 0 can read only itself)
    smollm2_no_rope: np.ndarray  # (OFFSETS,) ... with the rotation removed in its layer
    n_tokens: int  # tokens of TEXT
    max_difference: float  # max |weights at 0.. - weights at SHIFT..|, every head
    n_weights: int  # attention weights compared


def _minilm_offsets(
    texts: tuple[str, ...], layer: int, head: int, offsets: range
) -> np.ndarray:
    """MiniLM head ``(layer, head)``'s mean weight on the token d back, for d in
    ``offsets``, over the word tokens of ``texts``, from the real-heads atlas's pass
    (``minilm_corpus.runs``)."""
    sums = np.zeros(len(offsets))
    for run in minilm_corpus.runs(texts):
        w = run.weights[layer, head, 1:-1, 1:-1].astype(np.float64)  # words only
        sums += _diagonal_means(w, offsets)
    return sums / len(texts)


def _after_query_0(weights: np.ndarray, offsets: int) -> np.ndarray:
    """A causal head's mean weight on the token d back, d = 0 .. offsets - 1, over
    the queries t >= 1 (query 0 can read only itself: its weight there is 1)."""
    w = weights.astype(np.float64)
    return np.array([np.diagonal(w, -d)[int(d == 0) :].mean() for d in range(offsets)])


def _real(digest: str) -> _RealHeads:
    """The study behind ``real()`` (``digest`` names SmolLM2's model file)."""
    if smollm2.gguf_digest() != digest:
        raise ValueError(f"digest: expected {smollm2.gguf_digest()}, got {digest}")
    m_layer, m_head = atlas().typical("previous token")
    texts = sentences()
    back = range(_OFFSETS - 1, -_OFFSETS, -1)  # d tokens back, then ahead
    previous = repeated_tokens.scan().previous
    s_layer, s_head = (
        int(i) for i in np.unravel_index(previous.argmax(), previous.shape)
    )
    model = smollm2.load()
    ids = model.encode(_TEXT)
    trace = model.trace(ids)
    at_0, shifted = trace.weights, model.attentions(ids, start=SHIFT)
    block = model.blocks[s_layer]
    unrotated = copy.copy(block.attention)  # the same weights, no rotation
    unrotated.rope = None
    normed = smollm2.rms_norm(trace.stream[s_layer], block.attention_norm, block.eps)
    _, no_rope = unrotated(normed[None], mask=causal_mask(len(ids)))
    return _RealHeads(
        minilm_head=(int(m_layer), int(m_head)),
        minilm_offsets=_minilm_offsets(texts, m_layer, m_head, back),
        minilm_sentences=len(texts),
        smollm2_head=(s_layer, s_head),
        smollm2_offsets=_after_query_0(at_0[s_layer, s_head], _OFFSETS),
        smollm2_no_rope=_after_query_0(no_rope[0, s_head], _OFFSETS),
        n_tokens=len(ids),
        max_difference=float(np.abs(at_0 - shifted).max()),
        n_weights=int(at_0.size),
    )


def real() -> _RealHeads:
    """The two previous-token heads by offset, and SmolLM2's whole forward pass
    shifted by ``SHIFT`` positions (computed once per code and model: cached).
    """
    return cached(_real, smollm2.gguf_digest())


# --- 4. alternatives -----------------------------------------------------------------


@dataclass(frozen=True)
class _Alternatives:
    """ALiBi's slopes and weights, NoPE's recovered positions, a scaled RoPE base."""

    slopes: np.ndarray  # (ALIBI_HEADS,)
    alibi_weights: np.ndarray  # (ALIBI_HEADS, ALIBI_KEYS) equal scores, last query
    nope_weights: np.ndarray  # (NOPE_TOKENS,) each query's weight on the marker
    nope_positions: np.ndarray  # (NOPE_TOKENS,) 1 / weight - 1
    context: int
    extended: int  # EXTENSION x context
    slowest_angle: float  # radians, slowest pair at the last trained position
    slowest_extended: float  # ... at EXTENSION x further
    fastest_angle: float  # radians per token of the fastest pair, any base
    scaled_base: float  # the base that brings the slowest pair back
    scaled_angle: float  # slowest pair's angle at the extended context, scaled base


def _alternatives() -> _Alternatives:
    """ALiBi, NoPE and context extension, each in a few computed numbers."""
    slopes = 2.0 ** (-8 * np.arange(1, _ALIBI_HEADS + 1) / _ALIBI_HEADS)
    distance = np.arange(_ALIBI_KEYS)[
        ::-1
    ]  # the last query: keys ALIBI_KEYS-1 .. 0 back
    alibi = softmax(-slopes[:, None] * distance)  # content scores all equal (zero)

    zeros = np.zeros((_NOPE_TOKENS, 1))
    marker = np.zeros((_NOPE_TOKENS, 1))
    marker[0] = 1.0  # token 0 is the marker (a BOS token, say)
    out, _ = scaled_dot_product_attention(
        zeros, zeros, marker, mask=causal_mask(_NOPE_TOKENS)
    )
    nope = out[:, 0]

    config = smollm2.load().config
    d_k, base, context = config.d_k, config.rope_base, config.context_length
    slowest = RotaryEmbedding(d_k, base).inv_freq[-1]
    scaled_base = base * _EXTENSION ** (d_k / (d_k - 2))  # base' ** (-(d_k-2)/d_k)
    scaled = RotaryEmbedding(d_k, scaled_base).inv_freq
    return _Alternatives(
        slopes=slopes,
        alibi_weights=alibi,
        nope_weights=nope,
        nope_positions=1 / nope - 1,
        context=context,
        extended=_EXTENSION * context,
        slowest_angle=float(context * slowest),
        slowest_extended=float(_EXTENSION * context * slowest),
        fastest_angle=float(scaled[0]),
        scaled_base=float(scaled_base),
        scaled_angle=float(_EXTENSION * context * scaled[-1]),
    )


# --- the page -------------------------------------------------------------------------


@functools.cache
def page() -> Page:
    """What the page prints: the four studies, their facts and figures."""
    a, r, h, alt = _absolute(), _rope(), real(), _alternatives()
    pair = _pair(r.d_k, r.base)
    random = r.random_mean / r.random_mean[0]
    return Page(
        absolute=a,
        rope=r,
        real=h,
        alt=alt,
        m=_M,
        n=_N,
        shift=SHIFT,
        shift_next=SHIFT + 1,
        sin_base=positions.BASE,
        sin_spread=_e(a.sinusoidal_spread),
        rope_spread=_e(np.ptp(r.rope_scores)),
        bound_share=r.bound[-1] / r.bound[0],
        ones_share=r.ones[-1] / r.ones[0],
        random_range=(float(random.min()), float(random.max())),
        minilm_previous=float(h.minilm_offsets[_OFFSETS - 2]),  # d = 1 back
        slowest_wavelength=round(r.wavelengths[-1]),  # tokens, to the nearest
        scaled_base=round(alt.scaled_base),
        tolerance=_e(TOLERANCE),
        max_difference=_e(h.max_difference),
        float32_eps=_e(np.finfo(np.float32).eps),
        n_layers=smollm2.load().config.n_layers,
        nope_last=_NOPE_TOKENS - 1,
        alibi_heads=_ALIBI_HEADS,
        alibi_keys=_ALIBI_KEYS,
        text=_TEXT,
        offsets=_OFFSETS,
        n_positions=_N_POSITIONS,
        random_pairs=_RANDOM_PAIRS,
        extension=_EXTENSION,
        pair=pair,
        facts=_facts(a, r, h, alt) | _pair_facts(pair),
        figures=_figures(a, r, h) | _pair_figure(pair),
    )


def _angle(v: np.ndarray) -> float:
    return float(np.arctan2(v[1], v[0]))


def _pair_facts(pair: _Pair) -> dict[str, Fact]:
    """The drawn pair: each vector turned by its position times θ, and the pair's
    dot product unchanged when both move."""
    turned = all(
        np.isclose(
            np.angle(np.exp(1j * (_angle(p.q) - _angle(pair.q) - p.m * pair.theta))), 0
        )
        and np.isclose(
            np.angle(np.exp(1j * (_angle(p.k) - _angle(pair.k) - p.n * pair.theta))), 0
        )
        for p in pair.placed
    )
    before, after = pair.placed
    return {
        "pair_turns": Fact(
            turned,
            f"θ = {pair.theta}; angles {[(_angle(p.q), _angle(p.k)) for p in pair.placed]}",
            says="each drawn vector is its unrotated pair turned by its position times θ",
        ),
        "pair_dot_kept": Fact(
            abs(before.dot - after.dot) < 1e-12,
            f"q·k {before.dot!r} at ({before.m}, {before.n}), {after.dot!r} at "
            f"({after.m}, {after.n})",
            says="the pair's dot product is the same, within 1e-12, after both move",
        ),
    }


def _pair_figure(pair: _Pair) -> dict[str, Figure]:
    """The pair drawn at its two placements."""
    (a, b), j = pair.placed, pair.index
    return {
        "pair": Figure(
            "position.pair",
            (pair.q, pair.k, pair.theta, pair.placed),
            alt=f"Two panels of one rotation pair (pair {j}) in the plane. Left: the "
            f"query's pair turned by {a.m} θ and the key's by {a.n} θ, with θ = "
            f"{pair.theta:.3f} radians, dot product {a.dot:.3f}. Right: both moved "
            f"by {_PAIR_SHIFT} positions, turned by {b.m} θ and {b.n} θ; the angle "
            f"between them is the same and so is the dot product, {b.dot:.3f}.",
            caption="The dashed arrows are the pair before rotation (position 0), the "
            "solid ones the pair at its position; each arc is the angle it turned. "
            "Compare the two panels: both arrows turn further, the angle between them "
            "does not change, and neither does their dot product.",
        )
    }


def _e(x: float) -> str:
    """``x`` in scientific notation, for the tiny differences the page prints."""
    return f"{float(x):.1e}"


def _r(values: np.ndarray) -> list[float]:
    return np.round(values, 3).tolist()


def _facts(
    a: _Absolute, r: _Rope, h: _RealHeads, alt: _Alternatives
) -> dict[str, Fact]:
    """The facts the page states."""
    gap = np.abs(a.with_positions[:, 0] - a.with_positions[:, 1])
    decay = r.bound / r.bound[0]
    ones = np.abs(r.ones) / r.ones[0]
    spread = r.random_mean / r.random_mean[0]
    m_back = h.minilm_offsets  # d = OFFSETS-1 .. 1 back, 0, then 1 .. ahead
    previous = _OFFSETS - 2  # index of d = 1 back
    return {
        "tie": Fact(
            np.array_equal(a.without[:, 0], a.without[:, 1]),
            f"weights on the two 'the', no positions: {_r(a.without)}",
            says='without positions, every head gives the two copies of "the" exactly equal weights',
        ),
        "tie_broken": Fact(
            gap.min() > 0,
            f"weights with positions: {_r(a.with_positions)}",
            says='with positions, every head gives the two copies of "the" different weights',
        ),
        "sin_relative": Fact(
            a.sinusoidal_spread < 1e-9,
            f"largest spread on a diagonal {a.sinusoidal_spread}",
            says="the sinusoidal similarity map's largest spread along a diagonal is under 1e-9",
        ),
        "learned_near": Fact(
            a.learned_near[1] == a.learned_near[1:].max() and a.learned_spread > 0.1,
            f"mean cosine by distance: {_r(a.learned_near)}, largest spread on a "
            f"diagonal {a.learned_spread:.3f}",
            says="in the learned map, positions one apart are the most alike, and a diagonal spreads by more than 0.1",
        ),
        "rope_relative": Fact(
            np.ptp(r.rope_scores) < 1e-12,
            f"RoPE scores {r.rope_scores.tolist()}",
            says="the rotated score moves by under 1e-12 when both positions move by each shift",
        ),
        "added_moves": Fact(
            np.ptp(r.added_scores) > 0.1,
            f"added scores {_r(r.added_scores)}",
            says="the score with added position vectors moves by more than 0.1 over the shifts",
        ),
        "slowest_short": Fact(
            r.slowest_turns < 1,
            f"slowest pair: {r.slowest_turns} turns over context",
            says="the slowest RoPE pair turns by less than one full turn over the trained context",
        ),
        "bound_decays": Fact(
            decay[-1] < 0.5 and ones[-1] < 0.5,
            f"bound {decay[-1]:.3f}, all-ones {ones[-1]:.3f} of their value at 0",
            says="at the longest distance, the bound and the all-ones score are both under half their value at distance 0",
        ),
        "random_flat": Fact(
            np.abs(spread - 1).max() < 0.1,
            f"random mean |score| relative to distance 0: {spread.min():.3f} "
            f"to {spread.max():.3f}",
            says="the random pairs' mean |score| stays within 10% of its value at distance 0",
        ),
        "pairing_permutation": Fact(
            r.pairing_equal == 0,
            f"max difference {r.pairing_equal}",
            says="rotating with one pairing equals the reordered rotation with the other, difference exactly zero",
        ),
        "pairing_differs": Fact(
            abs(r.pairing_scores[0] - r.pairing_scores[1]) > 0.1,
            f"scores {r.pairing_scores}",
            says="the same q and k score more than 0.1 apart under the two pairings",
        ),
        "wrong_pairing_worse": Fact(
            r.swapped_perplexity > 2 * r.perplexity,
            f"perplexity {r.perplexity:.1f} vs {r.swapped_perplexity:.1f}",
            says="SmolLM2 with the wrong pairing reads its paragraph at over twice the perplexity",
        ),
        "minilm_previous": Fact(
            m_back.argmax() == previous and m_back[previous] > 0.5,
            f"MiniLM by offset (back to ahead): {_r(m_back)}",
            says="MiniLM's head puts its largest weight, and over half, on the previous token",
        ),
        "smollm2_previous": Fact(
            h.smollm2_offsets.argmax() == 1 and h.smollm2_offsets[1] > 0.5,
            f"SmolLM2 by offset: {_r(h.smollm2_offsets)}",
            says="SmolLM2's head puts its largest weight, and over half, on the token one back",
        ),
        "rope_removed": Fact(
            h.smollm2_no_rope[1] < h.smollm2_offsets[1] / 4,
            f"previous token: {h.smollm2_offsets[1]:.3f} with the rotation, "
            f"{h.smollm2_no_rope[1]:.3f} without it",
            says="with the rotation removed in its layer, SmolLM2's previous-token head "
            "puts under a quarter of its weight on the previous token",
        ),
        "shift_invariant": Fact(
            h.max_difference < TOLERANCE,
            f"max difference {h.max_difference} (tolerance {TOLERANCE})",
            says="every SmolLM2 attention weight moves by less than TOLERANCE (1e-5) when the positions start at SHIFT",
        ),
        "alibi_local": Fact(
            alt.alibi_weights[0].argmax() == _ALIBI_KEYS - 1
            and alt.alibi_weights[0, -1] > 5 * alt.alibi_weights[-1, -1],
            f"weight on the query itself: {_r(alt.alibi_weights[:, -1])}",
            says="ALiBi's steepest head puts its largest weight on the query itself, over five times the gentlest head's",
        ),
        "alibi_even": Fact(
            np.ptp(alt.alibi_weights[-1]) < 0.1 * alt.alibi_weights[-1].mean(),
            f"gentlest head: {_r(alt.alibi_weights[-1])}",
            says="ALiBi's gentlest head's weights vary by under a tenth of their mean",
        ),
        "nope_recovers": Fact(
            np.allclose(alt.nope_positions, np.arange(len(alt.nope_positions))),
            f"recovered positions {alt.nope_positions.tolist()}",
            says="1 / output - 1 gives back every position 0, 1, 2, ... (np.allclose)",
        ),
        "unseen_angle": Fact(
            alt.slowest_angle < 2 * np.pi and alt.slowest_extended > alt.slowest_angle,
            f"slowest angle {alt.slowest_angle} -> {alt.slowest_extended}",
            says="the slowest pair stays short of a full turn over the context, and extending it reaches a larger angle",
        ),
        "scaled_back": Fact(
            np.isclose(alt.scaled_angle, alt.slowest_angle),
            f"{alt.scaled_angle} vs {alt.slowest_angle}",
            says="with the raised base, the slowest pair's angle at the extended context equals its angle at the trained one",
        ),
    }


def _figures(a: _Absolute, r: _Rope, h: _RealHeads) -> dict[str, Figure]:
    """The page's four figures."""
    m_layer, m_head = h.minilm_head
    s_layer, s_head = h.smollm2_head
    return {
        "similarity": Figure(
            "position.similarity",
            (a.sinusoidal, a.learned),
            alt=f"Two maps of positions 0 to {_N_POSITIONS - 1} against themselves, "
            "coloured by the cosine similarity of their position vectors. Left, the "
            "sinusoidal encoding: bright on the diagonal, fading smoothly away from "
            "it, every diagonal one colour. Right, MiniLM's learned vectors: bright "
            "on the diagonal, with uneven stripes parallel to it.",
            caption="How alike two positions' vectors are (cosine). Look along a "
            "diagonal: for the sinusoids it is constant (only the distance counts); "
            "the learned vectors came out similar for near positions too, unevenly.",
        ),
        "frequencies": Figure(
            "position.frequencies",
            (r.wavelengths, r.context),
            alt=f"The wavelength of each of the {r.d_k // 2} rotation pairs on a log "
            "scale, from a few tokens for pair 0 to more than the trained context "
            "for the last pairs; a horizontal line marks the context length.",
            caption="Tokens per full turn of each pair of SmolLM2's heads. The first "
            "pairs turn within a few tokens, the last ones less than once over the "
            "whole context.",
        ),
        "decay": Figure(
            "position.decay",
            (r.distances, r.bound, r.ones, r.random_mean),
            alt="Three curves over the distance between query and key, each divided "
            "by its value at distance 0: Su et al.'s bound and the score of q = k = "
            "all ones fall with distance; the mean absolute score of random q and k "
            "stays flat near 1.",
            caption="RoPE's long-range decay. The bound and the all-ones score fall "
            "with distance; random q and k show no decay: the decay is a property of "
            "a query and key that agree, not of every pair.",
        ),
        "heads": Figure(
            "position.previous_token",
            (h.minilm_offsets, h.smollm2_offsets, _OFFSETS),
            alt=f"Bars of mean attention weight by offset. MiniLM's L{m_layer}H{m_head} "
            "puts nearly all its weight on the token one back; SmolLM2's "
            f"L{s_layer}H{s_head} too, with a little on the token itself and two back.",
            caption=f"Two previous-token heads: MiniLM's L{m_layer}H{m_head} (learned "
            f"absolute positions) and SmolLM2's L{s_layer}H{s_head} (RoPE). Both find "
            "the token one back, with different machinery.",
        ),
    }
