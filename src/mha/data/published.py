"""Published model shapes and cited results, each with the source it was read from.

Pages quote these through the macros; nothing here is computed. Every row names
the file or the paper (with its section or table) that gives the value.

```python
from mha.data.published import MODELS, model

assert model("BERT-base").d_model == 768
assert all(m.d_model % m.n_heads == 0 for m in MODELS)
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from mha.data import voita2019
from mha.support.validate import lookup

T = TypeVar("T", bound=Any)  # a row with a ``name``


@dataclass(frozen=True)
class Source:
    """Where a figure was read: a title and a link, plus the exact place in it."""

    title: str
    url: str
    where: str  # section, table or line of the source that gives the value


@dataclass(frozen=True)
class ModelShape:
    """The attention shape of one published model: width, heads, layers."""

    name: str
    d_model: int
    n_heads: int
    n_layers: int
    source: Source
    params: int  # the total parameter count the source states (see mha.data.totals)
    params_source: Source

    @property
    def d_k(self) -> int:
        """Width of one head, d_model / n_heads."""
        return self.d_model // self.n_heads


_VASWANI = Source(
    "Vaswani et al. 2017, Attention Is All You Need",
    "https://arxiv.org/abs/1706.03762",
    "Table 3, row 'base': N = 6, d_model = 512, h = 8, d_k = d_v = 64",
)
_BERT = "https://github.com/google-research/bert/blob/master/README.md"
_GPT2 = "https://github.com/openai/gpt-2/blob/master/src/model.py"

MODELS: tuple[ModelShape, ...] = (
    ModelShape(
        "Transformer base",
        512,
        8,
        6,
        _VASWANI,
        65_000_000,
        Source(_VASWANI.title, _VASWANI.url, "Table 3, row 'base': params 65 x 10^6"),
    ),
    ModelShape(
        "BERT-base",
        768,
        12,
        12,
        Source(
            "google-research/bert, README (pre-trained models)",
            _BERT,
            "BERT-Base, Uncased: 12-layer, 768-hidden, 12-heads "
            "(uncased_L-12_H-768_A-12); Devlin et al. 2018, section 3",
        ),
        110_000_000,
        Source(
            "Devlin, Chang, Lee, Toutanova 2018, BERT: Pre-training of Deep "
            "Bidirectional Transformers for Language Understanding",
            "https://arxiv.org/abs/1810.04805",
            "section 3: BERT-BASE (L=12, H=768, A=12, Total Parameters=110M)",
        ),
    ),
    ModelShape(
        "BERT-large",
        1024,
        16,
        24,
        Source(
            "google-research/bert, README (pre-trained models)",
            _BERT,
            "BERT-Large, Uncased: 24-layer, 1024-hidden, 16-heads "
            "(uncased_L-24_H-1024_A-16); Devlin et al. 2018, section 3",
        ),
        340_000_000,
        Source(
            "Devlin, Chang, Lee, Toutanova 2018, BERT: Pre-training of Deep "
            "Bidirectional Transformers for Language Understanding",
            "https://arxiv.org/abs/1810.04805",
            "section 3: BERT-LARGE (L=24, H=1024, A=16, Total Parameters=340M)",
        ),
    ),
    ModelShape(
        "GPT-2 small",
        768,
        12,
        12,
        Source(
            "openai/gpt-2, src/model.py",
            _GPT2,
            "default_hparams(): n_embd=768, n_head=12, n_layer=12 "
            "(the released 124M model)",
        ),
        124_000_000,
        Source(
            "openai/gpt-2, README",
            "https://github.com/openai/gpt-2/blob/master/README.md",
            "the released checkpoint is named 124M (download_model.py); 'our original "
            "parameter counts were wrong due to an error (in our previous blog posts "
            "and paper). Thus you may have seen small referred to as 117M'",
        ),
    ),
)


def model(name: str) -> ModelShape:
    """The published shape called ``name`` (one of ``MODELS``).

    ```python
    from mha.data.published import model

    assert model("Transformer base").d_k == 64
    ```
    """
    return _by_name(MODELS, name)


def _by_name(rows: Sequence[T], name: str) -> T:
    """The row called ``name``, or a ValueError listing the names there are."""
    return lookup("name", name, {row.name: row for row in rows})


@dataclass(frozen=True)
class PruningResult:
    """A head-pruning result: heads removed out of a total, and what it cost."""

    heads_pruned: int
    heads_total: int
    bleu_drop: float
    model: str  # the shape of the pruned model (a name in MODELS)
    source: Source


VOITA_2019 = PruningResult(  # the facts live in mha.data.voita2019, with the citation
    heads_pruned=voita2019.PRUNED_HEADS,
    heads_total=voita2019.ENCODER_HEADS,
    bleu_drop=voita2019.BLEU_COST,
    model=voita2019.MODEL,
    source=Source(voita2019.CITATION, voita2019.URL, voita2019.WHERE),
)


# --- Decoders and their KV cache: layers, query heads, K/V heads, head width ---------


@dataclass(frozen=True)
class DecoderConfig:
    """What sizes a decoder's KV cache: layers, query heads, K/V heads, head width.

    ``head_dim`` is read from the source, never derived here from ``d_model``: the two
    need not agree (``n_heads * head_dim`` is 12,288 for PaLM 540B, whose d_model is
    18,432). ``params`` is the published parameter count (for the weights' bytes);
    ``sliding_window`` is set when the model attends to that many past tokens only,
    so its cache holds no more. ``max_context`` is the longest context the model was
    published for (trained on, or declared in its configuration), read from
    ``context_source``: past it, the model's quality is not what its source reports.

    ```python
    from mha.data.published import decoder

    palm = decoder("PaLM 540B")
    assert palm.n_kv_heads == 1 and palm.n_heads * palm.head_dim != palm.d_model
    ```
    """

    name: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_model: int
    params: int
    source: Source
    params_source: Source
    sliding_window: int | None = None
    max_context: int | None = None  # the longest context the model was published for
    context_source: Source | None = None  # where ``max_context`` was read
    # significant digits of ``params`` as the source prints it ("175.0B": 4), when it
    # prints more than the integer's own digits say
    params_digits: int | None = None


def _config_json(repo: str, where: str) -> Source:
    """The ``config.json`` of a model repository on the Hugging Face Hub."""
    return Source(
        f"{repo}, config.json",
        f"https://huggingface.co/{repo}/blob/main/config.json",
        where,
    )


def _model_card(repo: str, where: str) -> Source:
    return Source(
        f"{repo}, model card",
        f"https://huggingface.co/{repo}/blob/main/README.md",
        where,
    )


_LLAMA3_SIZES = "'Llama 3 comes in two sizes — 8B and 70B parameters'"
_LLAMA_HEAD = "head_dim = hidden_size / num_attention_heads (LlamaAttention)"
_LLAMA2_PAPER = Source(
    "Touvron et al. 2023, Llama 2: Open Foundation and Fine-Tuned Chat Models",
    "https://arxiv.org/abs/2307.09288",
    "Table 1: the 7B, 13B and 70B models (GQA for 70B only)",
)
_GEMMA_PAPER = "https://arxiv.org/abs/2403.08295"
_PALM = Source(
    "Chowdhery et al. 2022, PaLM: Scaling Language Modeling with Pathways",
    "https://arxiv.org/abs/2204.02311",
    "Table 1: 540B has 118 layers, 48 heads, d_model 18432, 540.35B parameters; "
    "'attention head size is always 256'; section 2: multi-query attention "
    "(key and value projected to [1, h], shared by every head)",
)
_GPT3 = Source(
    "Brown et al. 2020, Language Models are Few-Shot Learners",
    "https://arxiv.org/abs/2005.14165",
    "Table 2.1, GPT-3 175B: n_params 175.0B, n_layers 96, d_model 12288, "
    "n_heads 96, d_head 128 (multi-head attention, as GPT-2; section 2.1: "
    "'alternating dense and locally banded sparse attention patterns in the layers "
    "of the transformer, similar to the Sparse Transformer')",
)
# Where each decoder's longest published context was read (``max_context``).
_LLAMA2_CONTEXT = Source(
    _LLAMA2_PAPER.title,
    _LLAMA2_PAPER.url,
    "Table 1: context length 4k for every Llama 2 size (max_position_embeddings 4096)",
)
_MISTRAL_CONTEXT = Source(
    "Jiang et al. 2023, Mistral 7B",
    "https://arxiv.org/abs/2310.06825",
    "Table 1: context_len 8192 (window_size 4096)",
)
_GEMMA_CONTEXT = Source(
    "Gemma Team 2024, Gemma: Open Models Based on Gemini Research and Technology",
    _GEMMA_PAPER,
    "section 2, Model Architecture: 'trained on a context length of 8192 tokens'",
)
_PALM_CONTEXT = Source(
    _PALM.title, _PALM.url, "section 5, Training Setup: sequence length 2048"
)
_GPT3_CONTEXT = Source(
    _GPT3.title, _GPT3.url, "section 2.1: a context window of n_ctx = 2048 tokens"
)

DECODERS: tuple[DecoderConfig, ...] = (
    DecoderConfig(
        "Llama-2 7B",
        32,
        32,
        32,
        128,
        4096,
        7_000_000_000,
        _config_json(
            "meta-llama/Llama-2-7b-hf",
            "num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 32, "
            f"hidden_size 4096; {_LLAMA_HEAD}",
        ),
        _LLAMA2_PAPER,
        max_context=4096,
        context_source=_LLAMA2_CONTEXT,
    ),
    DecoderConfig(
        "Llama-2 13B",
        40,
        40,
        40,
        128,
        5120,
        13_000_000_000,
        _config_json(
            "meta-llama/Llama-2-13b-hf",
            "num_hidden_layers 40, num_attention_heads 40, num_key_value_heads 40, "
            f"hidden_size 5120; {_LLAMA_HEAD}",
        ),
        _LLAMA2_PAPER,
        max_context=4096,
        context_source=_LLAMA2_CONTEXT,
    ),
    DecoderConfig(
        "Llama-2 70B",
        80,
        64,
        8,
        128,
        8192,
        70_000_000_000,
        _config_json(
            "meta-llama/Llama-2-70b-hf",
            "num_hidden_layers 80, num_attention_heads 64, num_key_value_heads 8, "
            f"hidden_size 8192; {_LLAMA_HEAD}",
        ),
        _LLAMA2_PAPER,
        max_context=4096,
        context_source=_LLAMA2_CONTEXT,
    ),
    DecoderConfig(
        "Llama-3 8B",
        32,
        32,
        8,
        128,
        4096,
        8_000_000_000,
        _config_json(
            "meta-llama/Meta-Llama-3-8B",
            "num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8, "
            f"hidden_size 4096; {_LLAMA_HEAD}",
        ),
        _model_card("meta-llama/Meta-Llama-3-8B", _LLAMA3_SIZES),
        max_context=8192,
        context_source=_config_json(
            "meta-llama/Meta-Llama-3-8B", "max_position_embeddings 8192"
        ),
    ),
    DecoderConfig(
        "Llama-3 70B",
        80,
        64,
        8,
        128,
        8192,
        70_000_000_000,
        _config_json(
            "meta-llama/Meta-Llama-3-70B",
            "num_hidden_layers 80, num_attention_heads 64, num_key_value_heads 8, "
            f"hidden_size 8192; {_LLAMA_HEAD}",
        ),
        _model_card("meta-llama/Meta-Llama-3-70B", _LLAMA3_SIZES),
        max_context=8192,
        context_source=_config_json(
            "meta-llama/Meta-Llama-3-70B", "max_position_embeddings 8192"
        ),
    ),
    DecoderConfig(
        "Mistral 7B v0.1",
        32,
        32,
        8,
        128,
        4096,
        7_300_000_000,
        _config_json(
            "mistralai/Mistral-7B-v0.1",
            "num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8, "
            "hidden_size 4096, sliding_window 4096 (head_dim 128 in params.json); "
            "Jiang et al. 2023, arXiv 2310.06825, Table 1 and section 2 "
            "(rolling buffer cache of W = 4096 positions)",
        ),
        Source(
            "Mistral AI, Announcing Mistral 7B",
            "https://mistral.ai/news/announcing-mistral-7b/",
            "'Mistral 7B is a 7.3B parameter model'",
        ),
        sliding_window=4096,
        max_context=8192,
        context_source=_MISTRAL_CONTEXT,
    ),
    DecoderConfig(
        "Falcon-7B",
        32,
        71,
        1,
        64,
        4544,
        7_000_000_000,
        Source(
            "tiiuae/falcon-7b, config.json, read by transformers' modeling_falcon.py",
            "https://github.com/huggingface/transformers/blob/main/src/transformers/"
            "models/falcon/modeling_falcon.py",
            "config.json: hidden_size 4544, num_attention_heads (n_head) 71, "
            "num_hidden_layers 32, multi_query true, new_decoder_architecture false; "
            "saved by transformers it also reads num_kv_heads 71, but FalconAttention "
            "sets num_kv_heads = config.num_kv_heads if (new_decoder_architecture or "
            "not multi_query) else 1: one K/V head; head_dim = 4544 / 71 = 64",
        ),
        _model_card(
            "tiiuae/falcon-7b", "'Falcon-7B is a 7B parameters causal decoder'"
        ),
        max_context=2048,
        context_source=_model_card(
            "tiiuae/falcon-7b",
            "Training Procedure, hyperparameters: sequence length 2048",
        ),
    ),
    DecoderConfig(
        "PaLM 540B",
        118,
        48,
        1,
        256,
        18432,
        540_350_000_000,
        _PALM,
        _PALM,
        max_context=2048,
        context_source=_PALM_CONTEXT,
    ),
    DecoderConfig(
        "Gemma 2B",
        18,
        8,
        1,
        256,
        2048,
        524_550_144 + 1_981_884_416,
        _config_json(
            "google/gemma-2b",
            "num_hidden_layers 18, num_attention_heads 8, num_key_value_heads 1, "
            "head_dim 256, hidden_size 2048; Gemma Team 2024, Table 1",
        ),
        Source(
            "Gemma Team 2024, Gemma: Open Models Based on Gemini Research and Technology",
            _GEMMA_PAPER,
            "Table 2: 2B has 524,550,144 embedding and 1,981,884,416 non-embedding "
            "parameters",
        ),
        max_context=8192,
        context_source=_GEMMA_CONTEXT,
    ),
    DecoderConfig(
        "Gemma 7B",
        28,
        16,
        16,
        256,
        3072,
        786_825_216 + 7_751_248_896,
        _config_json(
            "google/gemma-7b",
            "num_hidden_layers 28, num_attention_heads 16, num_key_value_heads 16, "
            "head_dim 256, hidden_size 3072 (16 x 256 = 4096, not 3072); "
            "Gemma Team 2024, Table 1",
        ),
        Source(
            "Gemma Team 2024, Gemma: Open Models Based on Gemini Research and Technology",
            _GEMMA_PAPER,
            "Table 2: 7B has 786,825,216 embedding and 7,751,248,896 non-embedding "
            "parameters",
        ),
        max_context=8192,
        context_source=_GEMMA_CONTEXT,
    ),
    DecoderConfig(
        "Qwen2.5 7B",
        28,
        28,
        4,
        128,
        3584,
        7_610_000_000,
        _config_json(
            "Qwen/Qwen2.5-7B",
            "num_hidden_layers 28, num_attention_heads 28, num_key_value_heads 4, "
            "hidden_size 3584, use_sliding_window false; head_dim = 3584 / 28 (Qwen2)",
        ),
        _model_card(
            "Qwen/Qwen2.5-7B",
            "'Number of Parameters: 7.61B', 'Number of Attention Heads (GQA): 28 for Q "
            "and 4 for KV'",
        ),
        max_context=131_072,
        context_source=_model_card(
            "Qwen/Qwen2.5-7B", "'Context Length: 131,072 tokens'"
        ),
    ),
    DecoderConfig(
        "GPT-3 175B",
        96,
        96,
        96,
        128,
        12288,
        175_000_000_000,
        _GPT3,
        _GPT3,
        max_context=2048,
        context_source=_GPT3_CONTEXT,
        params_digits=4,  # "175.0B"
    ),
    DecoderConfig(
        "SmolLM2-135M",
        30,
        9,
        3,
        64,
        576,
        135_000_000,
        _config_json(
            "HuggingFaceTB/SmolLM2-135M",
            "num_hidden_layers 30, num_attention_heads 9, num_key_value_heads 3, "
            "head_dim 64, hidden_size 576",
        ),
        _model_card(
            "HuggingFaceTB/SmolLM2-135M", "the 135M model of the SmolLM2 family"
        ),
        max_context=8192,
        context_source=_config_json(
            "HuggingFaceTB/SmolLM2-135M", "max_position_embeddings 8192"
        ),
    ),
)


def decoder(name: str) -> DecoderConfig:
    """The published decoder called ``name`` (one of ``DECODERS``).

    ```python
    from mha.data.published import decoder

    assert decoder("Llama-2 70B").n_heads // decoder("Llama-2 70B").n_kv_heads == 8
    ```
    """
    return _by_name(DECODERS, name)


@dataclass(frozen=True)
class SpeedQuality:
    """One row of Ainslie et al.'s Table 1: a T5 variant's speed and quality."""

    model: str  # "MHA-XXL", "GQA-8-XXL", ...
    seconds_per_sample: float  # T_infer, inference time per sample
    average_score: float  # average over the paper's summarisation, translation, QA


GQA_SOURCE = Source(
    "Ainslie, Lee-Thorp, de Jong, Zemlyanskiy, Lebrón, Sanghai 2023, GQA: Training "
    "Generalized Multi-Query Transformer Models from Multi-Head Checkpoints",
    "https://arxiv.org/abs/2305.13245",
    "Table 1 (T_infer in s per sample, average score over CNN, arXiv, PubMed, "
    "MediaSum, MultiNews, WMT, TriviaQA); section 2.1 (mean-pooled conversion); "
    "section 3.1 (uptraining alpha = 0.05 of pre-training steps); section 4 and "
    "Figure 6 (time per sample grows little from 1 to 8 groups, then faster: 8 groups "
    "chosen as a middle ground)",
)
GQA_TABLE_1: tuple[SpeedQuality, ...] = (
    SpeedQuality("MHA-Large", 0.37, 46.0),
    SpeedQuality("MHA-XXL", 1.51, 47.2),
    SpeedQuality("MQA-XXL", 0.24, 46.6),
    SpeedQuality("GQA-8-XXL", 0.28, 47.1),
)
GQA_UPTRAIN_FRACTION = 0.05  # of the original pre-training steps (section 3.1)
GQA_GROUPS = 8  # the paper's choice (section 4)
