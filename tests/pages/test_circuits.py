"""Circuits: the weight scores against dense products on a toy, the interventions on
SmolLM2 (one sequence), every fact turned false (on values made up to satisfy them all,
so that no test here waits for the page's computations), and (``-m reference``) the
numbers a forward pass gives, recomputed with transformers on one sequence."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from mha import MultiHeadAttention
from mha.attention import causal_mask
from mha.experiments import repeated_tokens
from mha.pages import circuits
from mha.pages.circuits import (
    _facts,
    _Patching,
    _Sequences,
    _Studies,
    _Weights,
    sequences,
)
from mha.pages.circuits import weights as w
from mha.pages.circuits.streaming import (
    _Streaming,
    _streaming,
    _Variants,
    _variants,
    _window_mask,
)
from mha.pretrained import smollm2
from mha.rope import RotaryEmbedding
from tests.pages.drawn import assert_series, drawn
from tests.reference import reference_module


@pytest.fixture(scope="module")
def model() -> smollm2.SmolLM2:
    return smollm2.load()


@pytest.fixture(scope="module")
def toy():
    """Two GQA layers with rotary positions and RMSNorm gains."""
    rng = np.random.default_rng(5)
    layers = [MultiHeadAttention(12, 3, n_kv_heads=1, rng=rng) for _ in range(2)]
    gains = [rng.uniform(0.5, 2, 12) for _ in range(2)]
    return w._fold(layers, gains), layers, gains


def test_composition_equals_the_dense_products_at_every_offset_set(toy):
    folded, layers, gains = toy
    rope = RotaryEmbedding(4, interleaved=True)
    offsets = w._rotations(rope, range(1, 6))
    scores = w._composition_scores(folded, [offsets[:1], offsets])
    g0, g1 = (np.diag(g) for g in gains)
    for receiver in range(3):
        w_q = g1 @ layers[1].w_q[:, 4 * receiver : 4 * receiver + 4]
        w_k = g1 @ layers[1].w_k  # one K/V head for the three query heads
        for sender in range(3):
            w_ov = (g0 @ layers[0].w_v) @ layers[0].w_o[4 * sender : 4 * sender + 4]
            for i, rots in enumerate((offsets[:1], offsets)):
                qk = [w_q @ r @ w_k.T for r in rots]  # (d_model, d_model) each
                num = np.mean([np.linalg.norm(m @ w_ov.T) ** 2 for m in qk])
                den = np.mean([np.linalg.norm(m) ** 2 for m in qk])
                dense = np.sqrt(num / den) / np.linalg.norm(w_ov)
                assert np.isclose(scores[i, 1, receiver, 0, sender], dense, rtol=1e-4)
    assert np.isnan(scores[:, 0]).all() and np.isnan(scores[:, 1, :, 1]).all()


def test_copying_equals_the_full_circuit_on_a_toy_vocabulary(toy):
    folded = toy[0]
    rng = np.random.default_rng(6)
    embed = rng.normal(size=(12, 40))  # (d_model, vocab), tied
    heads = [(0, 1), (1, 2)]
    eig = w._ov_eigenvalues(folded, heads, embed @ embed.T)
    inputs = embed.T[:25]
    ranks = w._own_token_ranks(folded, heads, inputs, embed[:, :25])
    for k, (layer, head) in enumerate(heads):
        full = embed.T @ folded.w_v[layer, 0] @ folded.w_o[layer, head] @ embed
        nonzero = np.linalg.eigvals(full)
        nonzero = nonzero[np.argsort(-np.abs(nonzero))][:4]
        assert np.isclose(w._copying_score(eig[k]), w._copying_score(nonzero))
        written = (
            inputs @ folded.w_v[layer, 0] @ folded.w_o[layer, head] @ embed[:, :25]
        )
        expected = [1 + (row > row[i]).sum() for i, row in enumerate(written)]
        assert ranks[k].tolist() == expected


def test_a_window_mask_keeps_the_band_and_the_sinks():
    mask = _window_mask(10, band=3, sinks=2)
    for t in range(10):
        allowed = {j for j in range(t + 1) if t - j < 3 or j < 2}
        assert set(np.flatnonzero(mask[t])) == allowed
    moved = _window_mask(10, band=3, sinks=2, first=2)  # tokens 2 and 3 kept instead
    assert set(np.flatnonzero(moved[9])) == {2, 3, 7, 8, 9}
    with pytest.raises(ValueError, match="band"):
        _window_mask(4, band=0)
    with pytest.raises(ValueError, match="first"):
        _window_mask(4, band=1, sinks=2, first=3)
    with pytest.raises(ValueError, match="ids"):
        _streaming((1, 2, 3), band=4, sinks=1)
    with pytest.raises(ValueError, match="offset_sets"):
        w._composition_scores(
            w._Folded(*(np.zeros((2, 1, 4, 2)),) * 4), [np.eye(3)[None]]
        )


def test_logits_under_the_causal_mask_equal_plain_logits(model):
    ids = model.encode("The cat sat on the mat, and the dog sat on the rug.")
    plain = model.logits(ids)
    masked = model.logits(ids, mask=causal_mask(len(ids)))
    np.testing.assert_allclose(masked, plain, atol=2e-3)
    with pytest.raises(ValueError, match="mask"):
        model.logits(ids, mask=np.ones((2, 2), bool))


@pytest.fixture(scope="module")
def one_pass(model):
    ids = repeated_tokens.repeated_sequences(model)[:1]
    return sequences._run(model, repeated_tokens._traced(ids))


def test_patching_a_sequence_with_itself_changes_nothing(model, one_pass):
    """With one sequence, "the next sequence" is the same one: the keys are unchanged;
    a sender in the receiver's own layer cannot reach it (NaN)."""
    receivers = [(17, 3), (18, 6)]
    sets = [[], [(16, 0)], [(16, 0), (2, 1)], [(17, 8)]]
    clean, same, both, late = sequences._patched_induction(
        model, one_pass, receivers, sets
    )
    assert clean.shape == (2, 1) and (clean > 0.3).all()
    assert np.allclose(clean, same, atol=1e-5) and np.allclose(clean, both, atol=1e-5)
    assert np.isnan(late[0]).all() and np.allclose(late[1], clean[1], atol=1e-5)


def test_a_prefix_pass_holds_the_trace(model, one_pass):
    """The batched prefix pass keeps the same streams and head outputs as the traced
    passes the page reads."""
    p = sequences._prefix(model, one_pass.ids, 3)
    np.testing.assert_allclose(p.entering, one_pass.entering[:4], atol=2e-4)
    np.testing.assert_allclose(p.outputs, one_pass.outputs[:3], atol=2e-4)
    with pytest.raises(ValueError, match="layers"):
        sequences._prefix(model, one_pass.ids, 0)


def test_path_patching_splits_the_paths(model, one_pass):
    """L29H1 mean-ablated: on the direct path only, the last stream with its own write
    swapped for its mean; through later layers only (here layer 29's feed-forward),
    every path with its own write put back; every path as ``mean_ablated_loss``."""
    p = one_pass
    clean, total, direct, later = sequences._path_patched_losses(model, p, [(29, 1)])
    own = p.outputs[29][:, 1] @ model.blocks[29].attention.w_o[64:128]
    mean = p.mean_writes[29, 1]
    by_hand = sequences._second_copy_losses(model, p.entering[-1] - own + mean, p.ids)
    np.testing.assert_allclose(direct, by_hand, atol=1e-6)
    assert abs(total[0] - sequences._mean_ablated_loss(model, p, [(29, 1)])) < 1e-6
    final = model.resume(
        p.entering[29], 29, causal_mask(p.ids.shape[1]), replace={(29, 1): mean}
    )
    by_hand = sequences._second_copy_losses(model, final + own - mean, p.ids)
    np.testing.assert_allclose(later, by_hand, atol=1e-6)
    assert (
        abs(clean[0] - sequences._second_copy_losses(model, p.entering[-1], p.ids)[0])
        < 1e-9
    )


def test_a_heads_write_rebuilt_from_the_depth_pages_weights_is_its_own(model, one_pass):
    """L29H1's write, from the stored weights and its values, put back in place of
    itself: the loss is the unchanged model's; its mean write instead raises it (the
    last layer: one block to rerun)."""
    p = one_pass
    w_o = model.blocks[29].attention.w_o[64:128]
    own = p.outputs[29][:, 1] @ w_o  # (1, n, d_model)
    causal = causal_mask(p.ids.shape[1])
    final = model.resume(p.entering[29], 29, causal, replace={(29, 1): own})
    (clean,) = sequences._second_copy_losses(model, p.entering[-1], p.ids)
    (mine,) = sequences._second_copy_losses(model, final, p.ids)
    assert abs(mine - clean) < 1e-3
    assert sequences._mean_ablated_loss(model, p, [(29, 1)]) > clean + 0.1


def test_the_first_values_replaced_by_their_mean_over_one_sequence_change_nothing(
    model, one_pass
):
    """One sequence is its own mean: replacing the first token's values by their mean
    leaves the loss unchanged; zeroing them changes it."""
    zero, mean = sequences._first_value_losses(model, one_pass.ids)
    (clean,) = sequences._second_copy_losses(model, one_pass.entering[-1], one_pass.ids)
    assert zero.shape == mean.shape == (1,)
    assert abs(mean[0] - clean) < 1e-3 and abs(zero[0] - clean) > 1e-2


def test_the_other_windows_are_perplexities_of_the_same_queries(model):
    ids = tuple(model.encode("one two three four five six seven eight " * 3))
    v = _variants(ids, band=8, sinks=2)
    assert v.later_kept > 1 and v.wide > 1
    with pytest.raises(ValueError, match="sinks"):
        _variants(ids[:4], band=2, sinks=2)


def test_the_first_tokens_share_of_what_moves_is_a_share(one_pass):
    moved = one_pass.first_token_moved
    assert ((moved > 0) & (moved < 1)).all()
    assert one_pass.mean_writes.shape == (30, 9, 576)


TOP = ((18, 6), (17, 3), (17, 4), (17, 5), (18, 7))
PREVIOUS = (16, 0)


def made_up() -> _Studies:
    """Values chosen so that every fact holds, with the page's heads."""
    n_layers, h = 30, 9
    composition = np.full((2, n_layers, h, n_layers, h), np.nan, np.float32)
    for layer in range(1, n_layers):
        composition[:, layer, :, :layer] = 0.05
    composition[:, 17:, :, 16, 0] = 0.2  # the previous-token head feeds every later one
    dla = np.zeros((n_layers, h))
    dla[29, 1] = 2.0
    for head in TOP:
        dla[head] = 0.1
    text = _Streaming(
        n=128, band=32, sinks=4, full=40.0, band_only=190.0, band_sinks=50.0
    )
    clean = np.linspace(0.9, 0.5, len(TOP))[:, None] + np.array([0.0, 0.01])
    layer_17 = np.array([h[0] == 17 for h in TOP])[:, None]
    second = np.where(layer_17, np.nan, 0.2)  # L17H8 reaches the layer-18 heads only
    patching = _Patching(
        clean=clean,
        single=np.stack([np.full_like(clean, 0.02), second + 0 * clean, clean - 0.01]),
        control=np.stack([clean - 0.01, np.where(layer_17, np.nan, clean - 0.01)]),
        joint=np.full_like(clean, 0.02),
        every=np.full_like(clean, 0.01),
    )
    scan = repeated_tokens.Scan(
        **{
            f.name: np.zeros(1)
            for f in dataclasses.fields(repeated_tokens.Scan)
            if f.name not in ("uniform_first_token", "loss_second", "loss_top")
        }
        | {"loss_random": np.array([3.0, 6.8])},
        uniform_first_token=0.1,
        loss_second=2.8,
        loss_top=11.8,
    )
    return _Studies(
        scan=scan,
        top=TOP,
        previous=PREVIOUS,
        senders=(PREVIOUS, (17, 8), (15, 1)),
        controls=((16, 2), (17, 0)),
        weights=_Weights(
            heads=(*TOP, (0, 0), (1, 1), (2, 2)),
            copying=np.array([0.3, 0.6, 0.3, -0.2, 0.5, 0.5, 0.9, -0.9]),
            median_rank=np.full(8, 300.0),
            first=np.full(8, 0.01),
            composition=composition,
        ),
        sequences=_Sequences(
            first_token=np.full(n_layers, 0.5),
            first_token_moved=np.full(n_layers, 0.3),
            dla=dla,
            mean_top=10.2,
            previous_mean=8.8,
            patching=patching,
            fresh=patching,
            paths=np.array([[2.8, 2.7], [10.2, 10.1], [2.9, 2.8], [10.3, 10.2]]),
            first_values=np.array([[8.5, 8.4], [3.0, 2.9]]),
        ),
        streaming=text,
        variants=_Variants(later_kept=240.0, wide=130.0),
        texts=(text, dataclasses.replace(text, full=20.0, band_sinks=40.0)),
    )


def test_each_fact_turns_false_with_other_values():
    s = made_up()
    assert all(f.holds for f in _facts(s).values())
    q, wt, st, scan = s.sequences, s.weights, s.streaming, s.scan
    n = len(s.top)

    def broken(**changes) -> dict:
        return _facts(dataclasses.replace(s, **changes))

    def seqs(**c):
        return broken(sequences=dataclasses.replace(q, **c))

    def wts(**c):
        return broken(weights=dataclasses.replace(wt, **c))

    copying = wt.copying.copy()
    copying[:n] = 1.0
    assert not wts(first=np.full_like(wt.first, 0.5))["few_first"].holds
    assert not wts(copying=copying)["not_above_random"].holds
    dla = q.dla.copy()
    dla[s.top[0]] = dla.max() * 2
    assert not seqs(dla=dla)["dla_small"].holds
    comp = wt.composition.copy()
    comp[:, :, :, s.previous[0], s.previous[1]] = 0.0
    assert not wts(composition=comp)["previous_top_two"].holds
    flat = np.where(np.isnan(wt.composition), np.nan, 0.1)
    assert not wts(composition=flat.astype(np.float32))["far_above"].holds
    shifted = wt.composition.copy()
    shifted[0] += 0.05
    assert not wts(composition=shifted)["offset_small"].holds
    p = q.patching

    def patched(**c):  # the change on both sets of sequences
        changed = dataclasses.replace(p, **c)
        return seqs(patching=changed, fresh=changed)

    def senders(i: int, values: np.ndarray) -> np.ndarray:
        single = p.single.copy()
        single[i] = np.where(np.isnan(single[i]), np.nan, values)
        return single

    # no effect: the patched scores as high as the clean ones
    assert not patched(single=senders(0, p.clean))["patch_collapses"].holds
    assert not patched(single=senders(1, p.clean))["second_halves"].holds
    assert not patched(single=senders(2, p.clean - 0.2))["others_small"].holds
    assert not patched(control=p.control - 0.3)["controls_below"].holds
    assert not patched(joint=p.clean)["together"].holds
    no_later = q.paths.copy()
    no_later[3] = no_later[0]  # the later layers alone change nothing
    assert not seqs(paths=no_later)["later_layers"].holds
    assert not seqs(mean_top=scan.loss_top + 1)["mean_below_zero"].holds
    assert not seqs(mean_top=scan.loss_second)["mean_still_far"].holds
    assert not seqs(previous_mean=scan.loss_second)["previous_alone"].holds
    assert not seqs(first_token_moved=q.first_token * 2)["moved_below"].holds
    assert not seqs(first_token_moved=q.first_token * 0)["still_moves"].holds
    flat_window = dataclasses.replace(st, band_only=st.full * 1.5)
    assert not broken(texts=(st, flat_window))["band_breaks"].holds
    useless = dataclasses.replace(st, band_sinks=st.band_only)  # no effect
    assert not broken(texts=(useless, st))["sinks_restore"].holds
    # no effect: other tokens kept, or a wider window, as good as the first tokens
    assert not broken(variants=_Variants(st.band_sinks, 240.0))["first_matter"].holds
    assert not broken(variants=_Variants(240.0, st.band_sinks))["first_matter"].holds
    # no effect: zeroing the first token's values costs nothing
    no_cost = np.stack([q.paths[0], q.first_values[1]])
    assert not seqs(first_values=no_cost)["sink_bias"].holds
    no_bias = np.stack([q.first_values[0], q.first_values[0]])  # the mean as costly
    assert not seqs(first_values=no_bias)["sink_bias"].holds


def test_the_page_helpers_name_the_senders_the_pairs_and_the_shared_keys():
    s = made_up()
    c = s.weights.composition[1]
    senders = circuits._senders(c, TOP)
    assert [row[1] for row in senders] == ["L16H0"] * len(TOP)
    assert circuits._strongest_pairs(c, 1)[0][:2] == ("L16H0", "L17H0")
    config = smollm2.load().config
    assert circuits._shared_keys(TOP, config) == [
        "L17H3, L17H4 and L17H5",
        "L18H6 and L18H7",
    ]
    assert int(np.isfinite(c).sum()) == sum(81 * layer for layer in range(30))


# --- the reference: transformers on one sequence ------------------------------------


def _causal_additive(torch, mask: np.ndarray):
    """A boolean (n, n) mask as transformers' 4-D additive mask (1, 1, n, n)."""
    blocked = torch.tensor(~mask)[None, None]
    return torch.zeros(blocked.shape).masked_fill(
        blocked, torch.finfo(torch.float32).min
    )


@pytest.mark.reference
def test_the_interventions_equal_the_reference(model, smollm2_reference, request):
    """On one repeated sequence: the mean-ablated loss of L16H0, the value-norm shares
    of the first token, L18H6's induction score with L16H0 patched into its keys (two
    sequences), and the window perplexities (a 4-D attention mask)."""
    torch = reference_module("torch", request.config)
    grad = torch.is_grad_enabled()
    torch.set_grad_enabled(False)  # every tensor below is a plain number
    request.addfinalizer(lambda: torch.set_grad_enabled(grad))
    ref = smollm2_reference
    layers = ref.model.layers
    ids = repeated_tokens.repeated_sequences(model)[:2]
    p = sequences._run(model, repeated_tokens._traced(ids[:1]))
    d_k, n = 64, ids.shape[1]

    captured = {}

    def capture(layer):
        def hook(module, args):
            captured[layer] = (
                args[0].detach().clone()
            )  # o_proj's input: heads side by side

        return hook

    handles = [
        layers[i].self_attn.o_proj.register_forward_pre_hook(capture(i))
        for i in range(30)
    ]
    with torch.no_grad():
        out = ref(
            torch.tensor(ids.tolist()),
            output_attentions=True,
            output_hidden_states=True,
        )
    for h in handles:
        h.remove()

    # value-norm shares of the first token, sequence 0
    moved = []
    for i, layer in enumerate(layers):
        x = layer.input_layernorm(out.hidden_states[i][:1])
        v = layer.self_attn.v_proj(x).view(1, n, 3, d_k).transpose(1, 2)
        v = v.repeat_interleave(3, dim=1)  # (1, 9, n, d_k)
        w_o = layer.self_attn.o_proj.weight.T.reshape(9, d_k, 576)
        norms = torch.linalg.vector_norm(v @ w_o, dim=-1)  # (1, 9, n)
        a = out.attentions[i][:1]
        share = a * norms[:, :, None, :]
        share = share / share.sum(-1, keepdim=True)
        moved.append(float(share[..., 1:, 0].mean()))
    np.testing.assert_allclose(moved, p.first_token_moved, atol=2e-3)

    # mean ablation of L16H0: its output replaced by its mean over sequence 0's tokens
    mean_out = captured[16][0, :, :d_k].mean(0)

    def replace(module, args):
        x = args[0].clone()
        x[..., :d_k] = mean_out
        return (x,)

    handle = layers[16].self_attn.o_proj.register_forward_pre_hook(replace)
    with torch.no_grad():
        logits = ref(torch.tensor(ids[:1].tolist())).logits[0].double()
    handle.remove()
    queries = np.arange(repeated_tokens.HALF, 2 * repeated_tokens.HALF - 1)
    nll = torch.nn.functional.cross_entropy(
        logits[queries], torch.tensor(ids[0, queries + 1])
    )
    mine = sequences._mean_ablated_loss(model, p, [(16, 0)])
    assert abs(float(nll) - mine) < 2e-3

    # path patching: L18H6's keys from a stream with L16H0's write from the other sequence
    write = captured[16][:, :, :d_k] @ layers[16].self_attn.o_proj.weight[:, :d_k].T
    stream = out.hidden_states[18] - write + write.roll(-1, dims=0)
    attention = layers[18].self_attn
    k = attention.k_proj(layers[18].input_layernorm(stream)).view(2, n, 3, d_k)
    q = attention.q_proj(layers[18].input_layernorm(out.hidden_states[18])).view(
        2, n, 9, d_k
    )
    positions = torch.arange(n)[None]
    cos, sin = ref.model.rotary_emb(stream, positions)
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    q, k = apply_rotary_pos_emb(
        q.transpose(1, 2)[:, 6:7], k.transpose(1, 2)[:, 2:3], cos, sin
    )
    scores = (q @ k.transpose(-1, -2)) / d_k**0.5 + _causal_additive(
        torch, causal_mask(n)
    )
    weights = scores.softmax(-1).double().numpy()[:, 0]
    reference = repeated_tokens.induction_scores(weights).mean()
    both = sequences._run(model, repeated_tokens._traced(ids))
    ((mine,),) = sequences._patched_induction(model, both, [(18, 6)], [[(16, 0)]])
    assert abs(reference - mine.mean()) < 2e-3

    # the windows, on the first 97 tokens of the Markdown: band 32, 4 sinks
    text = circuits._markdown_ids()[:97]
    mine = _streaming(text, 32, 4)
    for setting, mask in (
        (mine.band_only, _window_mask(96, 32)),
        (mine.band_sinks, _window_mask(96, 32, 4)),
    ):
        with torch.no_grad():
            logits = (
                ref(
                    torch.tensor([text[:-1]]),
                    attention_mask=_causal_additive(torch, mask),
                )
                .logits[0]
                .double()
            )
        rows = torch.arange(32, 96)
        nll = torch.nn.functional.cross_entropy(
            logits[rows], torch.tensor(text)[rows + 1]
        )
        assert abs(float(torch.exp(nll)) / setting - 1) < 2e-3


# --- its figures --------------------------------------------------------------
# The circuits figures draw the page's K-composition grids under the heads they go
# into, its patched induction scores, and its first-token shares.


def _head(name: str) -> tuple[int, int]:
    layer, head = re.fullmatch(r"L(\d+)H(\d+)", name).groups()
    return int(layer), int(head)


def test_composition_shows_each_receiving_heads_grid_and_frames_the_sender():
    p, panels = drawn("circuits", "composition")
    c = p.s.weights.composition[1]
    assert [panel.title for panel in panels] == [f"into {n}" for n in p.top[:2]]
    rows = max(_head(n)[0] for n in p.top[:2])
    assert panels[0].yticks == [str(i) for i in range(rows)]
    sender = _head(p.previous)
    for panel in panels:
        layer, head = _head(panel.title.removeprefix("into "))
        (image,) = panel.images
        np.testing.assert_array_equal(image, c[layer, head, :layer])
        assert panel.xticks == [str(h) for h in range(c.shape[1])]
        framed = [
            tuple(round(x) for x in outline[:4].mean(axis=0)[::-1])  # (layer, head)
            for outline in panel.patches.values()
        ]
        assert framed == ([sender] if sender[0] < layer else [])


def test_patching_draws_each_heads_scores_and_the_controls_range():
    p, (panel,) = drawn("circuits", "patching")
    q = p.s.sequences
    second = q.patching.single[1].mean(-1)
    assert_series(
        panel.bars,
        {
            "unpatched": q.clean,
            f"{p.previous} patched": q.patched,
            f"{p.second} patched": np.nan_to_num(second, nan=0.0),
            "a control head patched": np.nanmean(q.controls, axis=1),
        },
    )
    assert_series(
        panel.errors,
        {
            "a control head patched": np.stack(
                [np.nanmin(q.controls, axis=1), np.nanmax(q.controls, axis=1)], axis=1
            )
        },
    )
    assert panel.xticks == p.top


def test_sinks_draws_the_first_tokens_weight_and_share_of_what_moves():
    p, (panel,) = drawn("circuits", "sinks")
    q, even = p.s.sequences, p.s.scan.uniform_first_token
    layers = np.arange(len(q.first_token))
    assert_series(
        panel.lines,
        {
            "attention weight": [layers, q.first_token],
            "share of what moves": [layers, q.first_token_moved],
            "an even spread": [[0, 1], [even, even]],  # across the axes
        },
    )


@pytest.mark.reference
def test_the_new_interventions_equal_the_reference(model, smollm2_reference, request):
    """Transformers on two repeated sequences: L17H8 patched into L18H6's keys; the
    induction heads mean-ablated on every path, on the direct path only and through
    later layers only; the first token's values zeroed or set to their mean over the
    two sequences; and the two other windows (tokens 4-7 kept, a window of 36)."""
    torch = reference_module("torch", request.config)
    grad = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    request.addfinalizer(lambda: torch.set_grad_enabled(grad))
    ref = smollm2_reference
    layers = ref.model.layers
    ids = repeated_tokens.repeated_sequences(model)[:2]
    d_k, n, half = 64, ids.shape[1], repeated_tokens.HALF
    both = sequences._run(model, repeated_tokens._traced(ids))
    tokens = torch.tensor(ids.tolist())
    queries = np.arange(half, 2 * half - 1)

    def hooked(hooks):
        """The model's run under forward hooks ``(module, kind, fn)``."""
        handles = [
            getattr(m, f"register_forward_{kind}hook")(fn) for m, kind, fn in hooks
        ]
        try:
            return ref(tokens, output_hidden_states=True)
        finally:
            for h in handles:
                h.remove()

    def losses(logits) -> np.ndarray:  # second-copy loss of each sequence (nats)
        return np.array(
            [
                float(
                    torch.nn.functional.cross_entropy(
                        logits[b, queries].double(), torch.tensor(ids[b, queries + 1])
                    )
                )
                for b in range(2)
            ]
        )

    captured, final = {}, {}

    def capture(layer):
        def hook(module, args):
            captured[layer] = args[0].detach().clone()

        return hook

    def before_norm(module, args):
        final["x"] = args[0].detach().clone()

    clean_out = hooked(
        [(layers[i].self_attn.o_proj, "pre_", capture(i)) for i in range(30)]
        + [(ref.model.norm, "pre_", before_norm)]
    )
    clean_final = final["x"]

    # L17H8's write from the other sequence, in L18H6's keys
    write = captured[17][..., 8 * d_k : 9 * d_k] @ (
        layers[17].self_attn.o_proj.weight[:, 8 * d_k : 9 * d_k].T
    )
    stream = clean_out.hidden_states[18] - write + write.roll(-1, dims=0)
    attention = layers[18].self_attn
    k = attention.k_proj(layers[18].input_layernorm(stream)).view(2, n, 3, d_k)
    q = attention.q_proj(layers[18].input_layernorm(clean_out.hidden_states[18]))
    cos, sin = ref.model.rotary_emb(stream, torch.arange(n)[None])
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    q, k = apply_rotary_pos_emb(
        q.view(2, n, 9, d_k).transpose(1, 2)[:, 6:7],
        k.transpose(1, 2)[:, 2:3],
        cos,
        sin,
    )
    scores = (q @ k.transpose(-1, -2)) / d_k**0.5 + _causal_additive(
        torch, causal_mask(n)
    )
    weights = scores.softmax(-1).double().numpy()[:, 0]
    reference = repeated_tokens.induction_scores(weights)
    ((mine,),) = sequences._patched_induction(model, both, [(18, 6)], [[(17, 8)]])
    np.testing.assert_allclose(mine, reference, atol=2e-3)

    # the induction heads mean-ablated: every path, direct only, later layers only
    top = [(18, 6), (17, 3), (17, 4), (17, 5), (18, 7)]
    means = {
        h: captured[h[0]][..., h[1] * d_k : (h[1] + 1) * d_k].mean((0, 1)) for h in top
    }

    def mean_out(layer):
        def hook(module, args):
            x = args[0].clone()
            for (at, h), m in means.items():
                if at == layer:
                    x[..., h * d_k : (h + 1) * d_k] = m
            return (x,)

        return hook

    total_out = hooked(
        [(layers[i].self_attn.o_proj, "pre_", mean_out(i)) for i in (17, 18)]
        + [(ref.model.norm, "pre_", before_norm)]
    )
    own = sum(
        captured[at][..., h * d_k : (h + 1) * d_k]
        @ layers[at].self_attn.o_proj.weight[:, h * d_k : (h + 1) * d_k].T
        for at, h in top
    )
    mean = sum(
        means[(at, h)]
        @ layers[at].self_attn.o_proj.weight[:, h * d_k : (h + 1) * d_k].T
        for at, h in top
    )
    direct = ref.lm_head(ref.model.norm(clean_final - own + mean))
    later = ref.lm_head(ref.model.norm(final["x"] + own - mean))
    expected = np.stack(
        [
            losses(clean_out.logits),
            losses(total_out.logits),
            losses(direct),
            losses(later),
        ]
    )
    np.testing.assert_allclose(
        sequences._path_patched_losses(model, both, top), expected, atol=2e-3
    )

    # the first token's values: zero, or their mean over the two sequences
    def first_values(mean: bool):
        def hook(module, args, output):
            v = output.clone()  # (2, n, 3 d_k)
            v[:, 0] = v[:, 0].mean(0) if mean else 0
            return v

        return hook

    expected = [
        losses(
            hooked([(b.self_attn.v_proj, "", first_values(m)) for b in layers]).logits
        )
        for m in (False, True)
    ]
    np.testing.assert_allclose(
        sequences._first_value_losses(model, ids), expected, atol=2e-3
    )

    # the two other windows, on the first 97 tokens of the Markdown
    text = circuits._markdown_ids()[:97]
    mine = _variants(text, 32, 4)
    for setting, mask in (
        (mine.later_kept, _window_mask(96, 32, 4, 4)),
        (mine.wide, _window_mask(96, 36)),
    ):
        logits = ref(
            torch.tensor([text[:-1]]), attention_mask=_causal_additive(torch, mask)
        ).logits[0]
        rows = torch.arange(32, 96)
        nll = torch.nn.functional.cross_entropy(
            logits[rows].double(), torch.tensor(text)[rows + 1]
        )
        assert abs(float(torch.exp(nll)) / setting - 1) < 2e-3
