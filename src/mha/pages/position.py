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
from mha.experiments.corpus import sentences
from mha.pages import multi_head, real_gqa_model, real_heads
from mha.pages.depth import repeated_tokens
from mha.positions import sinusoidal
from mha.pretrained import minilm, smollm2
from mha.rope import RotaryEmbedding
from mha.support.cache import cached
from mha.support.page import Fact, Figure, Page

SEED = 25
N_POSITIONS = 64  # positions drawn in the similarity maps
# RoPE's shift test: a query at M, a key at N, both moved by each shift
M, N = 3, 10
SHIFTS = (0, 1, 100, 1_000)
RANDOM_PAIRS = 1_024  # random q, k per distance for the mean |score|
MAX_DISTANCE = 1_024  # the decay is drawn from distance 0 to this
DISTANCE_STEP = 16
TEXT = (
    "The quick brown fox jumps over the lazy dog, and then it runs back home to sleep."
)
SHIFT = 100  # positions SmolLM2's second pass starts at
TOLERANCE = 1e-5  # weights of the two passes agree within this (float32 eps ~1.2e-7)
OFFSETS = 6  # a previous-token head's weight on the tokens 0 .. OFFSETS - 1 back
ALIBI_HEADS = 8  # Press et al.'s slopes for 8 heads: 2**-1 ... 2**-8
ALIBI_KEYS = 16
NOPE_TOKENS = 8
EXTENSION = 4  # context extension: this many times the trained context


# --- 1. absolute positions ------------------------------------------------------------


def cosine_similarity(vectors: np.ndarray) -> np.ndarray:
    """``(n, n)``: the cosine of the angle between every two rows of ``vectors``.

    ```python
    import numpy as np
    from mha.pages.position import cosine_similarity

    s = cosine_similarity(np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]]))
    assert np.allclose(np.diag(s), 1) and np.isclose(s[0, 1], 0)
    ```
    """
    unit = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    return unit @ unit.T


def _largest_spread(matrix: np.ndarray) -> float:
    """The largest range of values along one diagonal of a square ``matrix``."""
    return max(np.ptp(np.diagonal(matrix, d)) for d in range(len(matrix)))


def diagonal_means(matrix: np.ndarray, offsets: range) -> np.ndarray:
    """The mean of each diagonal ``matrix[t, t - d]`` for d in ``offsets`` (d > 0:
    d tokens back; d < 0: ahead).

    ```python
    import numpy as np
    from mha.pages.position import diagonal_means

    assert diagonal_means(np.eye(4, k=-1), range(3)).tolist() == [0.0, 1.0, 0.0]
    ```
    """
    return np.array([np.diagonal(matrix, -d).mean() for d in offsets])


@dataclass(frozen=True)
class Absolute:
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


def absolute() -> Absolute:
    """The sinusoidal and learned encodings compared; the multi-head page's layer on
    the cat sentence with and without its position encodings.

    ```python
    from mha.pages.position import absolute

    a = absolute()
    assert (a.without[:, 0] == a.without[:, 1]).all()  # identical rows: a tie
    ```
    """
    learned_vectors = minilm.load().position_embeddings  # (512, d_model)
    d_model = learned_vectors.shape[1]
    sin = cosine_similarity(sinusoidal(N_POSITIONS, d_model))
    learned = cosine_similarity(learned_vectors[:N_POSITIONS].astype(np.float64))
    whole = multi_head.whole_layer()
    layer, tokens = whole.layer, whole.tokens
    x = whole.x  # words + positions
    words = x - sinusoidal(len(tokens), x.shape[1])
    # the same word, the same vector (the subtraction leaves rounding differences)
    words = words[[tokens.index(t) for t in tokens]]
    the = tuple(i for i, t in enumerate(tokens) if t == "the")
    query = tokens.index("mat")

    def weights(inputs: np.ndarray) -> np.ndarray:
        return layer(inputs[None])[1][0, :, query][:, list(the)]  # (h, 2)

    return Absolute(
        sinusoidal=sin,
        learned=learned,
        d_model=d_model,
        n_learned=len(learned_vectors),
        sinusoidal_spread=float(_largest_spread(sin)),
        learned_near=diagonal_means(learned, range(OFFSETS)),
        learned_spread=float(_largest_spread(learned)),
        tokens=tokens,
        the=the,
        query=query,
        without=weights(words),
        with_positions=weights(x),
    )


# --- 2. RoPE --------------------------------------------------------------------------


@dataclass(frozen=True)
class Rope:
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


def rope() -> Rope:
    """RoPE's properties, computed with ``mha.rope.RotaryEmbedding`` at SmolLM2's
    shape, and the real-model page's perplexity with the wrong pairing.

    ```python
    import numpy as np
    from mha.pages.position import rope

    r = rope()
    assert np.ptp(r.rope_scores) < 1e-12 < np.ptp(r.added_scores)
    ```
    """
    config = smollm2.load().config
    d_k, base = config.d_k, config.rope_base
    rotate = RotaryEmbedding(d_k, base, interleaved=True)
    rng = np.random.default_rng(SEED)
    q, k = rng.standard_normal((2, d_k))
    shifts = np.array(SHIFTS)
    qs = rotate(np.broadcast_to(q, (len(shifts), d_k)), M + shifts)
    ks = rotate(np.broadcast_to(k, (len(shifts), d_k)), N + shifts)
    p = sinusoidal(N + shifts.max() + 1, d_k)
    added = [(q + p[M + s]) @ (k + p[N + s]) for s in shifts]

    distances = np.arange(0, MAX_DISTANCE + 1, DISTANCE_STEP)
    angles = distances[:, None] * rotate.inv_freq  # (G, d_k/2)
    partial_sums = np.cumsum(np.exp(1j * angles), axis=-1)  # S_1 .. S_{d_k/2}
    bound = np.abs(partial_sums).mean(axis=-1)
    ones = rotate(np.ones((len(distances), d_k)), distances) @ np.ones(d_k)
    qr, kr = rng.standard_normal((2, RANDOM_PAIRS, 1, d_k))
    kr_far = rotate(np.broadcast_to(kr, (RANDOM_PAIRS, len(distances), d_k)), distances)
    random_mean = np.abs((qr * kr_far).sum(-1)).mean(axis=0)  # q at 0, k at distance

    half = RotaryEmbedding(d_k, base, interleaved=False)
    perm = np.concatenate([np.arange(0, d_k, 2), np.arange(1, d_k, 2)])
    x = rng.standard_normal((N + 1, d_k))
    positions = np.arange(N + 1)
    pairing_equal = np.abs(half(x[:, perm], positions) - rotate(x, positions)[:, perm])
    scores = []
    for r in (half, rotate):  # q at M, k at N under each pairing
        q_m, k_n = r(np.stack([q, k]), np.array([M, N]))
        scores.append(float(q_m @ k_n))
    study = real_gqa_model.results()
    return Rope(
        d_k=d_k,
        base=base,
        context=config.context_length,
        shifts=SHIFTS,
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


# --- 3. position in real heads -------------------------------------------------------


@dataclass(frozen=True)
class RealHeads:
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
    ``offsets``, over the word tokens of ``texts``. The encoder runs up to ``layer``
    only: the layers above it do not change its weights."""
    model, sums = minilm.load(), np.zeros(len(offsets))
    for text in texts:
        batch = model.batch([text])
        x = model.embed_tokens(batch)
        for block in model.layers[: layer + 1]:
            x, weights = block(x, batch.valid, None)
        w = weights[0, head, 1:-1, 1:-1].astype(np.float64)  # words only
        sums += diagonal_means(w, offsets)
    return sums / len(texts)


def _after_query_0(weights: np.ndarray, offsets: int) -> np.ndarray:
    """A causal head's mean weight on the token d back, d = 0 .. offsets - 1, over
    the queries t >= 1 (query 0 can read only itself: its weight there is 1)."""
    w = weights.astype(np.float64)
    return np.array([np.diagonal(w, -d)[int(d == 0) :].mean() for d in range(offsets)])


def _real(digest: str) -> RealHeads:
    """The study behind ``real()`` (``digest`` names SmolLM2's model file)."""
    if smollm2.gguf_digest() != digest:
        raise ValueError(f"digest: expected {smollm2.gguf_digest()}, got {digest}")
    m_layer, m_head = real_heads.atlas().typical("previous token")
    texts = sentences()
    back = range(OFFSETS - 1, -OFFSETS, -1)  # d tokens back, then ahead
    previous = repeated_tokens.scan().previous
    s_layer, s_head = (
        int(i) for i in np.unravel_index(previous.argmax(), previous.shape)
    )
    model = smollm2.load()
    ids = model.encode(TEXT)
    trace = model.trace(ids)
    at_0, shifted = trace.weights, model.attentions(ids, start=SHIFT)
    block = model.blocks[s_layer]
    unrotated = copy.copy(block.attention)  # the same weights, no rotation
    unrotated.rope = None
    normed = smollm2.rms_norm(trace.stream[s_layer], block.attention_norm, block.eps)
    _, no_rope = unrotated(normed[None], mask=causal_mask(len(ids)))
    return RealHeads(
        minilm_head=(int(m_layer), int(m_head)),
        minilm_offsets=_minilm_offsets(texts, m_layer, m_head, back),
        minilm_sentences=len(texts),
        smollm2_head=(s_layer, s_head),
        smollm2_offsets=_after_query_0(at_0[s_layer, s_head], OFFSETS),
        smollm2_no_rope=_after_query_0(no_rope[0, s_head], OFFSETS),
        n_tokens=len(ids),
        max_difference=float(np.abs(at_0 - shifted).max()),
        n_weights=int(at_0.size),
    )


def real() -> RealHeads:
    """The two previous-token heads by offset, and SmolLM2's whole forward pass
    shifted by ``SHIFT`` positions (computed once per code and model: cached).

    ```python
    from mha.pages.position import TOLERANCE, real

    r = real()
    assert r.max_difference < TOLERANCE and r.smollm2_offsets.argmax() == 1
    ```
    """
    return cached(_real, smollm2.gguf_digest())


# --- 4. alternatives -----------------------------------------------------------------


@dataclass(frozen=True)
class Alternatives:
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


def alternatives() -> Alternatives:
    """ALiBi, NoPE and context extension, each in a few computed numbers.

    ```python
    import numpy as np
    from mha.pages.position import alternatives

    a = alternatives()
    assert np.allclose(a.nope_positions, np.arange(len(a.nope_positions)))
    ```
    """
    slopes = 2.0 ** (-8 * np.arange(1, ALIBI_HEADS + 1) / ALIBI_HEADS)
    distance = np.arange(ALIBI_KEYS)[
        ::-1
    ]  # the last query: keys ALIBI_KEYS-1 .. 0 back
    alibi = softmax(-slopes[:, None] * distance)  # content scores all equal (zero)

    zeros = np.zeros((NOPE_TOKENS, 1))
    marker = np.zeros((NOPE_TOKENS, 1))
    marker[0] = 1.0  # token 0 is the marker (a BOS token, say)
    out, _ = scaled_dot_product_attention(
        zeros, zeros, marker, mask=causal_mask(NOPE_TOKENS)
    )
    nope = out[:, 0]

    config = smollm2.load().config
    d_k, base, context = config.d_k, config.rope_base, config.context_length
    slowest = RotaryEmbedding(d_k, base).inv_freq[-1]
    scaled_base = base * EXTENSION ** (d_k / (d_k - 2))  # base' ** (-(d_k-2)/d_k)
    scaled = RotaryEmbedding(d_k, scaled_base).inv_freq
    return Alternatives(
        slopes=slopes,
        alibi_weights=alibi,
        nope_weights=nope,
        nope_positions=1 / nope - 1,
        context=context,
        extended=EXTENSION * context,
        slowest_angle=float(context * slowest),
        slowest_extended=float(EXTENSION * context * slowest),
        fastest_angle=float(scaled[0]),
        scaled_base=float(scaled_base),
        scaled_angle=float(EXTENSION * context * scaled[-1]),
    )


# --- the page -------------------------------------------------------------------------


@functools.cache
def page() -> Page:
    """What the page prints: the four studies, their facts and figures.

    ```python
    from mha.pages.position import page

    p = page()
    assert all(fact.holds for fact in p.facts.values()) and len(p.figures) == 4
    ```
    """
    a, r, h, alt = absolute(), rope(), real(), alternatives()
    random = r.random_mean / r.random_mean[0]
    return Page(
        absolute=a,
        rope=r,
        real=h,
        alt=alt,
        m=M,
        n=N,
        shift=SHIFT,
        shift_next=SHIFT + 1,
        sin_base=positions.BASE,
        sin_spread=_e(a.sinusoidal_spread),
        rope_spread=_e(np.ptp(r.rope_scores)),
        bound_share=r.bound[-1] / r.bound[0],
        ones_share=r.ones[-1] / r.ones[0],
        random_range=(float(random.min()), float(random.max())),
        minilm_previous=float(h.minilm_offsets[OFFSETS - 2]),  # d = 1 back
        slowest_wavelength=round(r.wavelengths[-1]),  # tokens, to the nearest
        scaled_base=round(alt.scaled_base),
        tolerance=_e(TOLERANCE),
        max_difference=_e(h.max_difference),
        float32_eps=_e(np.finfo(np.float32).eps),
        n_layers=smollm2.load().config.n_layers,
        nope_last=NOPE_TOKENS - 1,
        alibi_heads=ALIBI_HEADS,
        alibi_keys=ALIBI_KEYS,
        text=TEXT,
        offsets=OFFSETS,
        n_positions=N_POSITIONS,
        random_pairs=RANDOM_PAIRS,
        extension=EXTENSION,
        facts=facts(a, r, h, alt),
        figures=figures(a, r, h),
    )


def _e(x: float) -> str:
    """``x`` in scientific notation, for the tiny differences the page prints."""
    return f"{float(x):.1e}"


def _r(values: np.ndarray) -> list[float]:
    return np.round(values, 3).tolist()


def facts(a: Absolute, r: Rope, h: RealHeads, alt: Alternatives) -> dict[str, Fact]:
    """The facts the page states.

    ```python
    import dataclasses
    import numpy as np
    from mha.pages.position import facts, page

    p = page()
    worse = dataclasses.replace(p.real, max_difference=1.0)  # the shift moved weights
    assert not facts(p.absolute, p.rope, worse, p.alt)["shift_invariant"].holds
    ```
    """
    gap = np.abs(a.with_positions[:, 0] - a.with_positions[:, 1])
    decay = r.bound / r.bound[0]
    ones = np.abs(r.ones) / r.ones[0]
    spread = r.random_mean / r.random_mean[0]
    m_back = h.minilm_offsets  # d = OFFSETS-1 .. 1 back, 0, then 1 .. ahead
    previous = OFFSETS - 2  # index of d = 1 back
    return {
        "tie": Fact(
            np.array_equal(a.without[:, 0], a.without[:, 1]),
            f"weights on the two 'the', no positions: {_r(a.without)}",
        ),
        "tie_broken": Fact(
            gap.min() > 0, f"weights with positions: {_r(a.with_positions)}"
        ),
        "sin_relative": Fact(
            a.sinusoidal_spread < 1e-9,
            f"largest spread on a diagonal {a.sinusoidal_spread}",
        ),
        "learned_near": Fact(
            a.learned_near[1] == a.learned_near[1:].max() and a.learned_spread > 0.1,
            f"mean cosine by distance: {_r(a.learned_near)}, largest spread on a "
            f"diagonal {a.learned_spread:.3f}",
        ),
        "rope_relative": Fact(
            np.ptp(r.rope_scores) < 1e-12, f"RoPE scores {r.rope_scores.tolist()}"
        ),
        "added_moves": Fact(
            np.ptp(r.added_scores) > 0.1, f"added scores {_r(r.added_scores)}"
        ),
        "slowest_short": Fact(
            r.slowest_turns < 1, f"slowest pair: {r.slowest_turns} turns over context"
        ),
        "bound_decays": Fact(
            decay[-1] < 0.5 and ones[-1] < 0.5,
            f"bound {decay[-1]:.3f}, all-ones {ones[-1]:.3f} of their value at 0",
        ),
        "random_flat": Fact(
            np.abs(spread - 1).max() < 0.1,
            f"random mean |score| relative to distance 0: {spread.min():.3f} "
            f"to {spread.max():.3f}",
        ),
        "pairing_permutation": Fact(
            r.pairing_equal == 0, f"max difference {r.pairing_equal}"
        ),
        "pairing_differs": Fact(
            abs(r.pairing_scores[0] - r.pairing_scores[1]) > 0.1,
            f"scores {r.pairing_scores}",
        ),
        "wrong_pairing_worse": Fact(
            r.swapped_perplexity > 2 * r.perplexity,
            f"perplexity {r.perplexity:.1f} vs {r.swapped_perplexity:.1f}",
        ),
        "minilm_previous": Fact(
            m_back.argmax() == previous and m_back[previous] > 0.5,
            f"MiniLM by offset (back to ahead): {_r(m_back)}",
        ),
        "smollm2_previous": Fact(
            h.smollm2_offsets.argmax() == 1 and h.smollm2_offsets[1] > 0.5,
            f"SmolLM2 by offset: {_r(h.smollm2_offsets)}",
        ),
        "rope_removed": Fact(
            h.smollm2_no_rope[1] < h.smollm2_offsets[1] / 4,
            f"previous token: {h.smollm2_offsets[1]:.3f} with the rotation, "
            f"{h.smollm2_no_rope[1]:.3f} without it",
            "with the rotation removed in its layer, SmolLM2's previous-token head "
            "puts under a quarter of its weight on the previous token",
        ),
        "shift_invariant": Fact(
            h.max_difference < TOLERANCE,
            f"max difference {h.max_difference} (tolerance {TOLERANCE})",
        ),
        "alibi_local": Fact(
            alt.alibi_weights[0].argmax() == ALIBI_KEYS - 1
            and alt.alibi_weights[0, -1] > 5 * alt.alibi_weights[-1, -1],
            f"weight on the query itself: {_r(alt.alibi_weights[:, -1])}",
        ),
        "alibi_even": Fact(
            np.ptp(alt.alibi_weights[-1]) < 0.1 * alt.alibi_weights[-1].mean(),
            f"gentlest head: {_r(alt.alibi_weights[-1])}",
        ),
        "nope_recovers": Fact(
            np.allclose(alt.nope_positions, np.arange(len(alt.nope_positions))),
            f"recovered positions {alt.nope_positions.tolist()}",
        ),
        "unseen_angle": Fact(
            alt.slowest_angle < 2 * np.pi and alt.slowest_extended > alt.slowest_angle,
            f"slowest angle {alt.slowest_angle} -> {alt.slowest_extended}",
        ),
        "scaled_back": Fact(
            np.isclose(alt.scaled_angle, alt.slowest_angle),
            f"{alt.scaled_angle} vs {alt.slowest_angle}",
        ),
    }


def figures(a: Absolute, r: Rope, h: RealHeads) -> dict[str, Figure]:
    """The page's four figures.

    ```python
    from mha.pages.position import figures, page

    p = page()
    assert "MiniLM" in figures(p.absolute, p.rope, p.real)["similarity"].alt
    ```
    """
    m_layer, m_head = h.minilm_head
    s_layer, s_head = h.smollm2_head
    return {
        "similarity": Figure(
            "position.similarity",
            (a.sinusoidal, a.learned),
            alt=f"Two maps of positions 0 to {N_POSITIONS - 1} against themselves, "
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
            (h.minilm_offsets, h.smollm2_offsets, OFFSETS),
            alt=f"Bars of mean attention weight by offset. MiniLM's L{m_layer}H{m_head} "
            "puts nearly all its weight on the token one back; SmolLM2's "
            f"L{s_layer}H{s_head} too, with a little on the token itself and two back.",
            caption=f"Two previous-token heads: MiniLM's L{m_layer}H{m_head} (learned "
            f"absolute positions) and SmolLM2's L{s_layer}H{s_head} (RoPE). Both find "
            "the token one back, with different machinery.",
        ),
    }
