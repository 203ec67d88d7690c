"""The home page: the whole layer in one figure, the intuition, the reading order.

The figure is the multi-head page's (``mha.pages.multi_head``: one
``MultiHeadAttention`` at the base Transformer's shape on the cat sentence); the
parameter counts the intuition paragraph quotes are the home page's own.
"""

from __future__ import annotations

import functools

from mha.accounting import param_count
from mha.pages import multi_head
from mha.support.page import Fact, Page


@functools.cache
def page() -> Page:
    """The whole-layer figure and the parameters with one head and with ``h``.

    ```python
    from mha.pages.index import page

    p = page()
    assert (p.d_model, p.h) == (512, 8) and p.params_one == p.params_many
    ```
    """
    mechanism = multi_head.page()
    sizes = mechanism.whole.sizes
    d_model, h = sizes["d_model"], sizes["h"]
    one, many = param_count(d_model, 1), param_count(d_model, h)
    return Page(
        d_model=d_model,
        h=h,
        params_one=one,
        params_many=many,
        facts=facts(one, many, h),
        figures={"whole_layer": mechanism.figures["whole_layer"]},
    )


def facts(params_one: int, params_many: int, h: int) -> dict[str, Fact]:
    """The home page's one comparing sentence: ``h`` heads cost what one head costs.

    ```python
    from mha.pages.index import facts

    assert facts(100, 100, 8)["same_params"].holds
    assert not facts(100, 120, 8)["same_params"].holds
    ```
    """
    return {
        "same_params": Fact(
            params_one == params_many,
            f"{params_one} with one head, {params_many} with {h}",
            says="one head and h heads at the base Transformer's shape hold the same number of parameters",
        )
    }
