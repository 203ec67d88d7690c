"""How numbers are written in prose: the site-wide conventions in one place.

Attention weights to 3 decimals, integers with comma thousands separators,
percentages to 1 decimal; a list of names as "a, b and c".
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def decimals(x: float, places: int = 3) -> str:
    """``x`` rounded to ``places`` decimals (an attention weight, say).

    ```python
    from mha.support.formatting import decimals

    assert decimals(0.76799) == "0.768"
    assert decimals(2.0, 1) == "2.0"
    ```
    """
    text = f"{float(x):.{places}f}"
    return "0." + "0" * places if text == "-0." + "0" * places else text


def thousands(n: int) -> str:
    """An integer with comma thousands separators.

    ```python
    from mha.support.formatting import thousands

    assert thousands(5120000) == "5,120,000"
    ```
    """
    if float(n) != int(n):
        raise ValueError(f"n: expected an integer value, got {n!r}")
    return f"{int(n):,}"


def percent(fraction: float, places: int = 1) -> str:
    """A fraction written as a percentage.

    ```python
    from mha.support.formatting import percent

    assert percent(0.768) == "76.8%"
    ```
    """
    return decimals(100 * float(fraction), places) + "%"


def significant(x: float, digits: int = 2) -> str:
    """``x`` to ``digits`` significant digits, in plain decimals (a tiny loss, say).

    ```python
    from mha.support.formatting import significant

    assert significant(0.000012345) == "0.000012"
    assert significant(0.1706) == "0.17" and significant(0.0) == "0"
    ```
    """
    x = float(x)
    if x == 0:
        return "0"
    exponent = int(f"{x:.{digits - 1}e}".split("e")[1])  # after rounding: 0.0995 -> -1
    return decimals(x, max(0, digits - 1 - exponent))


def vector(values: Iterable[float], places: int = 3) -> str:
    """A vector in brackets, each entry to ``places`` decimals.

    ```python
    from mha.support.formatting import vector

    assert vector([0.76799, 0.2, 0]) == "[0.768, 0.200, 0.000]"
    ```
    """
    return "[" + ", ".join(decimals(v, places) for v in np.ravel(values)) + "]"


def words(items: Iterable[str]) -> str:
    """Names as prose: "a", "a and b", "a, b and c".

    ```python
    from mha.support.formatting import words

    assert words(["L17H3"]) == "L17H3"
    assert words(["1", "2", "4"]) == "1, 2 and 4"
    ```
    """
    items = list(items)
    if not items:
        raise ValueError("items: expected at least one name, got none")
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
