"""Input checks shared by the core: clear errors that name the argument, say what was
expected and what came.

A value of the wrong kind (a string for a size, an integer array where floats are
needed) raises ``ArgumentTypeError``, which is both a ``TypeError`` and a
``ValueError``; a value of the right kind but out of range raises ``ValueError``.
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type or dtype.

    A ``TypeError`` by nature, and a ``ValueError`` too, so that code catching the
    core's ``ValueError`` catches every bad input.

    ```python
    from mha.support.validate import ArgumentTypeError, positive_int

    try:
        positive_int("n", "3")
    except ValueError as error:  # also a TypeError
        assert isinstance(error, ArgumentTypeError) and str(error).startswith("n: ")
    ```
    """


def float_array(name: str, x: object, *, allow_neg_inf: bool = False) -> np.ndarray:
    """Return ``x`` as a float32 or float64 array (``x`` itself if it is one), or raise.

    Integer, boolean and complex arrays are refused (attention is defined on real
    floats, and silently promoting an integer array would hide a bug), and so is
    float16 (its largest value, 65,504, is soon exceeded by a sum of exponentials).
    NaN and +inf are refused; -inf is accepted only where ``allow_neg_inf`` (a masked
    logit).

    ```python
    import numpy as np
    from mha.support.validate import float_array

    assert float_array("x", [1.0, 2.0]).dtype == np.float64
    ```
    """
    arr = as_array(name, x)
    if arr.dtype not in FLOAT_DTYPES:
        got = _described(x) if arr.dtype == object else f"dtype {arr.dtype}"
        raise ArgumentTypeError(
            f"{name}: expected a floating-point array (float32 or float64), got {got}"
        )
    if np.isfinite(arr).all():  # the usual case, in one pass
        return arr
    bad = np.isnan(arr) | (np.isposinf(arr) if allow_neg_inf else ~np.isfinite(arr))
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{name}: expected finite values, got {arr[first]} at index {first}"
        )
    return arr


def numeric_array(name: str, x: object) -> np.ndarray:
    """Return ``x`` as an array of numbers (bool, integer or float), or raise.

    For functions that move values without computing with them (a reshape).

    ```python
    from mha.support.validate import numeric_array

    assert numeric_array("x", [[1, 2]]).shape == (1, 2)
    ```
    """
    arr = as_array(name, x)
    if arr.dtype.kind not in "biuf":
        raise ArgumentTypeError(
            f"{name}: expected an array of numbers, got dtype {arr.dtype}"
        )
    return arr


class CheckedArray:
    r"""An attribute holding a float array, checked when assigned, read as is.

    ``dims`` name the expected shape in the owner's attributes (``"n_heads*d_k"`` is
    the product of two). Assigning checks that the value is a float32 or float64
    array of that shape with finite values; reading returns the very object assigned,
    with no check, so a method may read it on every call at no cost. ``optional``
    lets ``None`` through (a missing bias).

    ```python
    import numpy as np
    import pytest
    from mha.support.validate import CheckedArray

    class Scale:
        w = CheckedArray("n")

        def __init__(self, n):
            self.n, self.w = n, np.ones(n)

    scale = Scale(3)
    w = np.zeros(3)
    scale.w = w
    assert scale.w is w
    with pytest.raises(ValueError, match=r"w: expected shape \(n,\) = \(3,\), got \(2,\)"):
        scale.w = np.zeros(2)
    ```
    """

    def __init__(self, *dims: str, optional: bool = False) -> None:
        self.dims, self.optional = dims, optional

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, owner: object, owner_type: type | None = None) -> object:
        if owner is None:  # looked up on the class
            return self
        try:
            return owner.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None

    def __set__(self, owner: object, value: object) -> None:
        what = f"({', '.join(self.dims)}{',' if len(self.dims) == 1 else ''})"
        if value is None and self.optional:
            owner.__dict__[self.name] = None
            return
        if value is None:
            raise ArgumentTypeError(
                f"{self.name}: expected an array of shape {what}, got None"
            )
        array = float_array(self.name, value)
        expected = tuple(
            math.prod(getattr(owner, factor) for factor in dim.split("*"))
            for dim in self.dims
        )
        if array.shape != expected:
            raise ValueError(
                f"{self.name}: expected shape {what} = {expected}, got {array.shape}"
            )
        owner.__dict__[self.name] = array


def as_array(name: str, x: object) -> np.ndarray:
    """``np.asarray(x)``, or an ``ArgumentTypeError`` naming ``name`` (ragged lists,
    objects NumPy cannot read).

    ```python
    from mha.support.validate import ArgumentTypeError, as_array

    assert as_array("x", [1, 2]).shape == (2,)
    try:
        as_array("positions", [[1], [2, 3]])
    except ArgumentTypeError as error:
        assert str(error).startswith("positions: expected an array of numbers")
    ```
    """
    try:
        return np.asarray(x)
    except (TypeError, ValueError) as error:
        raise ArgumentTypeError(
            f"{name}: expected an array of numbers, got {_described(x)} ({error})"
        ) from None


def float_dtype(name: str, dtype: object) -> np.dtype:
    """``dtype`` as a NumPy dtype if it is float32 or float64, else raise.

    ```python
    import numpy as np
    from mha.support.validate import float_dtype

    assert float_dtype("dtype", "float32") == np.float32
    ```
    """
    try:
        result = np.dtype(dtype)
    except (TypeError, ValueError):  # not a dtype at all: "banana", 3.5
        result = None
    if result is None or result not in FLOAT_DTYPES:
        got = _described(dtype) if result is None else result
        raise ArgumentTypeError(
            f"{name}: expected a floating-point dtype (float32 or float64), got {got}"
        )
    return result


def flag(name: str, value: object) -> bool:
    """``value`` as a ``bool`` if it is ``True`` or ``False`` (NumPy's too), else raise.

    ```python
    import numpy as np
    from mha.support.validate import flag

    assert flag("bias", np.True_) is True
    ```
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name}: expected True or False, got {value!r}")
    return bool(value)


def integer(name: str, value: object, minimum: int) -> int:
    """``value`` as an ``int`` if it is a whole number (Python or NumPy, not a bool)
    of at least ``minimum``, else raise. The result is a Python ``int``, so products
    of sizes cannot overflow as NumPy's fixed-width integers do.

    ```python
    import numpy as np
    from mha.support.validate import integer

    assert integer("start", np.int32(0), minimum=0) == 0
    assert type(integer("n", np.int8(3), minimum=1)) is int
    ```
    """
    expected = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    if isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name}: expected {expected}, got {value!r}")
    try:
        number = operator.index(value)  # int, NumPy integers, 0-d integer arrays
    except TypeError:
        raise ArgumentTypeError(
            f"{name}: expected {expected}, got {_described(value)}"
        ) from None
    if number < minimum:
        raise ValueError(f"{name}: expected {expected}, got {number}")
    return number


def positive_int(name: str, value: object) -> int:
    """Return ``value`` as an ``int`` if it is a positive integer, else raise.

    ```python
    from mha.support.validate import positive_int

    assert positive_int("n", 3) == 3
    ```
    """
    return integer(name, value, minimum=1)


def head_dim(d_model: int, n_heads: int, n_kv_heads: int | None = None) -> int:
    """Check the head arithmetic and return d_k = d_model / n_heads.

    ```python
    from mha.support.validate import head_dim

    assert head_dim(512, 8, 2) == 64
    ```
    """
    d_model = positive_int("d_model", d_model)
    n_heads = positive_int("n_heads", n_heads)
    if d_model % n_heads:
        raise ValueError(
            f"d_model: expected a multiple of n_heads={n_heads}, got {d_model}"
            + (" (fewer dimensions than heads)" if d_model < n_heads else "")
        )
    if n_kv_heads is not None:
        n_kv_heads = positive_int("n_kv_heads", n_kv_heads)
        if n_heads % n_kv_heads:
            raise ValueError(
                f"n_kv_heads: expected a divisor of n_heads={n_heads}, got {n_kv_heads}"
            )
    return d_model // n_heads


def generator(rng: np.random.Generator | None) -> np.random.Generator:
    """``rng`` itself, or the fixed default seed when ``None`` (every build draws alike).

    ```python
    import numpy as np
    from mha.support.validate import generator

    assert generator(None).integers(1000) == np.random.default_rng(0).integers(1000)
    ```
    """
    if rng is None:
        return np.random.default_rng(0)
    if not isinstance(rng, np.random.Generator):
        raise ArgumentTypeError(
            f"rng: expected a numpy.random.Generator or None, got {rng!r}"
        )
    return rng


def fits(
    name: str,
    what: str,
    result: np.ndarray,
    where: np.ndarray | None = None,
    offset: tuple[int, ...] = (),
) -> np.ndarray:
    """``result``, computed from ``name``, if it is finite (where ``where`` is True),
    else a ``ValueError``: finite inputs whose ``what`` overflowed the dtype (products
    of about 1e155 overflow float64, of about 1e19 float32), or a NaN that came
    through an array edited in place after its check. ``offset`` is added to the last
    axes of the index the error names, for a ``result`` that is one block of a larger
    array.

    ```python
    import numpy as np
    import pytest
    from mha.support.validate import fits

    big = np.full(2, 1e300)
    with np.errstate(over="ignore"):
        square = big * big
    with pytest.raises(ValueError, match=r"^x: expected values whose square fits"):
        fits("x", "square", square)
    ```
    """
    if np.isfinite(result).all():  # the usual case, in one pass
        return result
    bad = ~np.isfinite(result)
    if where is not None:
        bad &= where
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        lead = len(at) - len(offset)
        index = at[:lead] + tuple(i + o for i, o in zip(at[lead:], offset, strict=True))
        raise ValueError(
            f"{name}: expected values whose {what} fits in {result.dtype} (largest "
            f"{np.finfo(result.dtype).max:.3g}), got {result[at]} at index {index}; "
            "scale them down"
        )
    return result


def allocatable(name: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
    """Refuse, naming ``name``, an array of ``shape`` and ``dtype`` larger than this
    machine's memory, before NumPy tries and raises a bare ``MemoryError``.

    ```python
    import numpy as np
    import pytest
    from mha.support.validate import allocatable

    allocatable("max_len", (1, 2, 8, 4), np.dtype(np.float32))  # 256 bytes: fine
    with pytest.raises(ValueError, match="max_len: .* more than this machine"):
        allocatable("max_len", (1, 2, 10**15, 4), np.dtype(np.float32))
    ```
    """
    needed = math.prod(shape) * np.dtype(dtype).itemsize
    if needed > MEMORY:
        raise ValueError(
            f"{name}: an array of shape {shape} ({np.dtype(dtype)}) needs "
            f"{needed / 2**30:,.1f} GiB, more than this machine's "
            f"{MEMORY / 2**30:,.1f} GiB of memory; choose a smaller {name}"
        )


def _memory() -> int:
    """Bytes of physical memory (unlimited where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):  # not a POSIX system
        return 2**63


MEMORY = _memory()


def _described(value: object) -> str:
    """A short description of ``value`` for an error message: its repr and type."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def lookup(name: str, key: object, table: Mapping[Any, T]) -> T:
    """``table[key]``, or a ``ValueError`` naming the argument and the keys there are.

    ```python
    from mha.support.validate import lookup

    assert lookup("name", "b", {"a": 1, "b": 2}) == 2
    try:
        lookup("name", "c", {"a": 1, "b": 2})
    except ValueError as error:
        assert str(error) == "name: expected one of 'a', 'b', got 'c'"
    ```
    """
    try:
        return table[key]
    except (KeyError, TypeError):
        keys = ", ".join(repr(k) for k in table)
        raise ValueError(f"{name}: expected one of {keys}, got {key!r}") from None
