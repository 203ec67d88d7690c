"""The home page: the whole layer in one figure, the intuition, the reading order.

Page: ``docs/index.md``. The figure is the multi-head page's (``mha.pages.multi_head``:
one ``MultiHeadAttention`` at the base Transformer's shape on the cat sentence); this
module holds the home page's own values and claims.
"""

from __future__ import annotations

from dataclasses import dataclass

from mha.accounting import param_count
from mha.pages import multi_head
from mha.support.cache import cached
from mha.support.claims import Claim


@dataclass(frozen=True)
class Home:
    """What the home page prints."""

    whole: multi_head.WholeLayer
    alt: str  # the whole-layer figure's alt text
    caption: str
    d_model: int
    h: int
    params_one: int  # W_Q, W_K, W_V, W_O with one head at d_model
    params_many: int  # ... with h heads


def home() -> Home:
    """The whole-layer run and the parameter counts the intuition paragraph quotes.

    ```python
    from mha.pages.index import home

    p = home()
    assert (p.d_model, p.h) == (512, 8) and p.params_one == p.params_many
    ```
    """
    whole = cached(multi_head.whole_layer)  # the multi-head page's, computed once
    sizes = whole.sizes
    d_model, h = sizes["d_model"], sizes["h"]
    return Home(
        whole=whole,
        alt=multi_head.whole_layer_alt(whole),
        caption=multi_head.CAPTIONS["whole_layer"],
        d_model=d_model,
        h=h,
        params_one=param_count(d_model, 1),
        params_many=param_count(d_model, h),
    )


def claims(p: Home | None = None) -> dict[str, Claim]:
    """The home page's comparing sentences, checked.

    ```python
    from mha.pages.index import claims

    assert all(c.holds for c in claims().values())
    ```
    """
    p = home() if p is None else p
    return {
        "same_params": Claim(
            "for exactly the same number of parameters",
            p.params_one == p.params_many,
            f"{p.params_one} with one head, {p.params_many} with {p.h}",
        ),
    }
