"""The heads explorer's data: every number the widget shows, computed by the core.

Page: ``docs/heads-explorer.md``.

The page's JavaScript only renders this payload; it does no attention arithmetic.
The build writes it to ``SITE_PATH`` inside the site output (an mkdocs hook calls
``write``), never into ``docs/``.

Schema (every float rounded to ``DECIMALS`` places; positions count from 1)::

    {
      "version": 1,
      "examples": {
        "<example id>": {                       # "cat_mat", "cricket"
          "title": str,
          "queries": [{"token": str, "position": int}, ...],   # n_q rows
          "keys":    [{"token": str, "position": int}, ...],   # n_k columns
          "configs": [                          # one per head count, ascending
            {
              "n_heads": int,
              "label": str,                     # "1 head", "2 heads", "4 heads"
              "d_k": int,
              "scale": float,                   # √d_k
              "heads": [                        # n_heads of them
                {
                  "name": str,
                  "rows": [                     # one per query, n_q of them
                    {
                      "dots":    [float] * n_k, # q·k
                      "scores":  [float] * n_k, # q·k / √d_k
                      "exps":    [float] * n_k, # exp(score)
                      "sum":     float,         # Σ exp(score)
                      "weights": [float] * n_k, # softmax, from the core
                      "output":  [float] * d_k  # Σ weight · v, from the core
                    }
                  ]
                }
              ]
            }
          ]
        }
      }
    }

``weights`` and ``output`` come from ``scaled_dot_product_attention``; the other
fields spell out the steps that produce them (``exps / sum`` equals ``weights``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from mha.attention import scaled_dot_product_attention
from mha.heads import split_heads
from mha.worked import cat_mat, cricket

SCHEMA_VERSION = 1
DECIMALS = 4
SITE_PATH = "assets/data/heads-explorer.json"  # relative to the site output


def _numbers(values: np.ndarray) -> list | float:
    """Nested lists of floats rounded to ``DECIMALS`` places (no ``-0.0``)."""
    rounded = np.round(np.asarray(values, dtype=np.float64), DECIMALS) + 0.0
    return rounded.tolist()


def _label(n_heads: int) -> str:
    return f"{n_heads} head" + ("" if n_heads == 1 else "s")


def config(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, n_heads: int, names: tuple[str, ...]
) -> dict:
    """One head count's arithmetic for projected ``q (n_q, d)``, ``k, v (n_k, d)``.

    The width d is split into ``n_heads`` heads (``split_heads``) and each head runs
    the core's ``scaled_dot_product_attention``; ``names`` names the heads.

    ```python
    import numpy as np
    from mha.pages.heads_explorer import config

    q, k = np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 1.0]])
    one = config(q, k, np.eye(2), 1, ("only head",))
    row = one["heads"][0]["rows"][0]
    assert row["dots"] == [1.0, 0.0] and one["scale"] == 1.4142
    assert abs(sum(row["weights"]) - 1) < 1e-4
    ```
    """
    if len(names) != n_heads:
        raise ValueError(
            f"names: expected {n_heads} head names, got {len(names)}: {names!r}"
        )
    q_h, k_h, v_h = (split_heads(a, n_heads) for a in (q, k, v))  # (h, n, d_k)
    outputs, weights = scaled_dot_product_attention(q_h, k_h, v_h)  # (h, n_q, *)
    d_k = q_h.shape[-1]
    scale = np.sqrt(d_k)
    dots = q_h @ np.swapaxes(k_h, -1, -2)  # (h, n_q, n_k)
    exps = np.exp(dots / scale)
    heads = []
    for name, head_dots, head_exps, head_w, head_out in zip(
        names, dots, exps, weights, outputs, strict=True
    ):
        rows = [
            {
                "dots": _numbers(row_dots),
                "scores": _numbers(row_dots / scale),
                "exps": _numbers(row_exps),
                "sum": _numbers(row_exps.sum()),
                "weights": _numbers(row_w),
                "output": _numbers(row_out),
            }
            for row_dots, row_exps, row_w, row_out in zip(
                head_dots, head_exps, head_w, head_out, strict=True
            )
        ]
        heads.append({"name": name, "rows": rows})
    return {
        "n_heads": n_heads,
        "label": _label(n_heads),
        "d_k": d_k,
        "scale": _numbers(scale),
        "heads": heads,
    }


def _tokens(tokens: tuple[str, ...], first: int = 1) -> list[dict]:
    """Tokens with their positions in the sentence, counted from 1."""
    return [{"token": t, "position": p} for p, t in enumerate(tokens, start=first)]


def cat_mat_example() -> dict:
    """The four constructed heads on "the cat sat on the warm mat ." with 1, 2, 4 heads.

    ```python
    from mha.pages.heads_explorer import cat_mat_example

    ex = cat_mat_example()
    assert [c["label"] for c in ex["configs"]] == ["1 head", "2 heads", "4 heads"]
    ```
    """
    x = cat_mat.features()
    tokens = _tokens(cat_mat.TOKENS)
    configs = []
    for n_heads in cat_mat.HEAD_COUNTS:
        layer = cat_mat.layer(n_heads)
        q, k, v = x @ layer.w_q, x @ layer.w_k, x @ layer.w_v  # (8, d_model)
        configs.append(config(q, k, v, n_heads, cat_mat.head_names(n_heads)))
    return {
        "title": " ".join(cat_mat.TOKENS),
        "queries": tokens,
        "keys": tokens,
        "configs": configs,
    }


def cricket_example() -> dict:
    """The cricket example: the query "his" over Kohli, his, century; 1 or 2 heads.

    ```python
    from mha.pages.heads_explorer import cricket_example

    ex = cricket_example()
    assert ex["queries"] == [{"token": "his", "position": 2}]
    assert ex["configs"][1]["heads"][0]["rows"][0]["weights"][0] == 0.7679
    ```
    """
    q = cricket.Q_HIS[None]  # (1 query, d_model)
    names = {  # what each head sees, and the cricket page's name for it
        1: ("all four dimensions",),
        2: ("coreference dimensions (head A)", "topic dimensions (head B)"),
    }
    return {
        "title": f'"{cricket.QUERY}" over ' + ", ".join(cricket.TOKENS),
        "queries": _tokens((cricket.QUERY,), cricket.TOKENS.index(cricket.QUERY) + 1),
        "keys": _tokens(cricket.TOKENS),
        "configs": [config(q, cricket.K, cricket.V, h, names[h]) for h in names],
    }


def payload() -> dict:
    """The whole JSON payload: every example the widget can show.

    ```python
    from mha.pages.heads_explorer import payload

    assert set(payload()["examples"]) == {"cat_mat", "cricket"}
    ```
    """
    return {
        "version": SCHEMA_VERSION,
        "examples": {"cat_mat": cat_mat_example(), "cricket": cricket_example()},
    }


def write(path: str | Path) -> Path:
    """Write ``payload()`` as compact JSON to ``path`` (parents created); return it.

    ```python
    import json, tempfile
    from pathlib import Path
    from mha.pages.heads_explorer import write

    out = write(Path(tempfile.mkdtemp()) / "data" / "explorer.json")
    assert json.loads(out.read_text())["version"] == 1
    ```
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload(), separators=(",", ":"), ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")
    return path
