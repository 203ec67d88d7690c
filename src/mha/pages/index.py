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
    """The whole-layer figure and the parameters with one head and with ``h``."""
    mechanism = multi_head.page()
    sizes = mechanism.whole.sizes
    d_model, h = sizes["d_model"], sizes["h"]
    one, many = param_count(d_model, 1), param_count(d_model, h)
    return Page(
        d_model=d_model,
        h=h,
        params_one=one,
        params_many=many,
        facts=_facts(one, many, h),
        figures={"whole_layer": mechanism.figures["whole_layer"]},
    )


def _facts(params_one: int, params_many: int, h: int) -> dict[str, Fact]:
    """The home page's one comparing sentence: ``h`` heads cost what one head costs."""
    return {
        "same_params": Fact(
            params_one == params_many,
            f"{params_one} with one head, {params_many} with {h}",
        )
    }
