"""The Transformer block in code (mha.pages.block) against the real models."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mha.pages import block
from mha.pretrained import minilm, smollm2


@pytest.fixture(scope="module")
def page():
    return block.page()


def test_the_two_orders_put_the_norm_in_different_places() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3))
    calls: list[str] = []

    def named(name: str):
        def sublayer(y: np.ndarray) -> np.ndarray:
            calls.append(name)
            return y * 0.5

        return sublayer

    parts = dict(
        attend=named("attend"), ffn=named("ffn"), norm_1=named("n1"), norm_2=named("n2")
    )
    pre = block.pre_norm(x, **parts)
    assert calls == ["n1", "attend", "n2", "ffn"]  # the norm before each sublayer
    calls.clear()
    post = block.post_norm(x, **parts)
    assert calls == ["attend", "n1", "ffn", "n2"]  # the norm after each addition
    h = x + 0.25 * x  # pre: x + attend(norm(x))
    assert np.allclose(pre, h + 0.25 * h)
    h = 0.5 * (x + 0.5 * x)  # post: norm(x + attend(x))
    assert np.allclose(post, 0.5 * (h + 0.5 * h))


def test_smollm2s_block_written_here_is_the_models(page) -> None:
    check = page.check
    model = smollm2.load()
    assert check.smollm2_layers == model.config.n_layers
    assert check.smollm2_gap <= block._SMOLLM2_TOLERANCE
    assert check.smollm2_block_gap <= block._SMOLLM2_TOLERANCE
    # it is a real check: a block with its FFN removed is far from the model's
    x = model.embed(model.encode("The cat sat"))
    b = model.blocks[0]
    no_ffn = dataclasses.replace(b, w_down=np.zeros_like(b.w_down))
    assert (
        np.abs(block.smollm2_block(x, no_ffn) - b(x, model.new_caches(3)[0])).max()
        > 1e-3
    )


def test_the_block_is_causal() -> None:
    model = smollm2.load()
    ids = model.encode("The cat sat on the mat")
    x = model.embed(ids)
    changed = x.copy()
    changed[0, -1] += 1.0  # the last token cannot change the earlier rows
    first = block.smollm2_block(x, model.blocks[3])
    second = block.smollm2_block(changed, model.blocks[3])
    assert np.array_equal(first[0, :-1], second[0, :-1])
    assert not np.allclose(first[0, -1], second[0, -1])


def test_minilms_layer_written_here_is_the_models(page) -> None:
    check = page.check
    encoder = minilm.load()
    assert check.minilm_layers == encoder.n_layers
    assert len(set(check.minilm_tokens)) == 2  # two lengths: the padding mask works
    assert check.minilm_gap <= block._MINILM_TOLERANCE
    batch = encoder.batch(list(block._MINILM_TEXTS))
    x = encoder.embed_tokens(batch)
    layer = encoder.layers[0]
    ours = block.minilm_layer(x, layer, batch.mask)
    # post-norm: the output is the LayerNorm of its last sum, so each token has mean
    # b and a spread set by g; without the mask the short sentence reads its padding
    assert not np.allclose(block.minilm_layer(x, layer, None)[1], ours[1], atol=1e-3)


def test_the_stream_grows_in_pre_norm_and_not_in_post_norm(page) -> None:
    check = page.check
    assert check.smollm2_rms.shape == (check.smollm2_layers + 1,)
    assert check.minilm_rms.shape == (check.minilm_layers + 1,)
    assert page.first_peak > check.smollm2_rms.max()  # the first token stands out
    assert page.minilm_low <= page.minilm_high


def test_the_page_shows_the_code_without_docstrings() -> None:
    for function in (block.pre_norm, block.post_norm, block.smollm2_block):
        shown = block.source(function)
        assert shown.startswith(f"def {function.__name__}(")
        assert function.__doc__.strip().splitlines()[0] not in shown
        assert "return" in shown


def test_every_fact_holds_and_a_changed_value_is_refused(page) -> None:
    assert all(f.holds for f in page.facts.values())
    check = page.check

    def fails(name: str, **changed) -> bool:
        return not block._facts(dataclasses.replace(check, **changed))[name].holds

    assert fails("smollm2_equal", smollm2_gap=1e-3)
    assert fails("minilm_equal", minilm_gap=1e-3)
    assert fails("pre_norm_grows", smollm2_rms=np.ones(31))
    assert fails("post_norm_steady", minilm_rms=np.array([1.0, 1.0, 5.0]))


def test_the_diagram_carries_the_real_models_shapes(page) -> None:
    from mha.figures.block import orders

    pre, post = page.check.smollm2_shapes, page.check.minilm_shapes
    n = page.check.smollm2_tokens
    assert pre.stream == (1, n, 576) and pre.hidden == (1, n, 1536)
    assert pre.queries == (1, 9, n, 64) and pre.keys == (1, 3, n, 64)
    assert post.stream[-1] == 384 and post.queries[1] == post.keys[1] == 12
    spec = page.figures["orders"]
    assert "(1, 9, 11, 64)".replace("11", str(n)) in spec.alt
    drawn = orders(*spec.data)
    texts = [" ".join(t.get_text() for t in f.axes[0].texts) for f in drawn]
    assert "RMSNorm" in texts[0] and "LayerNorm" in texts[1]
    assert f"(1, {n}, 576)" in texts[0] and "1,536" in texts[1]
