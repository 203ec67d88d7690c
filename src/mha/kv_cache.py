"""A preallocated key/value cache for incremental (token-by-token) decoding."""

from __future__ import annotations

import weakref

import numpy as np

from mha.support.validate import allocatable, float_array, float_dtype, positive_int


class KVCache:
    """Keys and values of the tokens seen so far, for one attention layer.

    Preallocated as ``(batch, n_kv_heads, max_len, d_k)`` for K and for V; ``length``
    counts the filled positions and ``nbytes`` the bytes they hold
    (2 x batch x h_kv x d_k x length x itemsize). Going past ``max_len`` raises.
    ``layer_shape`` is the ``(d_model, n_heads, n_kv_heads)`` of the layer whose keys
    it holds (set by that layer's first ``step``): a layer of another shape refuses
    the cache, so that two layers cannot mix their keys in one cache.

    ```python
    import numpy as np
    from mha import KVCache

    cache = KVCache(batch=1, n_kv_heads=2, d_k=4, max_len=8, dtype=np.float32)
    k = np.ones((1, 2, 3, 4), np.float32)  # 3 new tokens
    keys, values = cache.append(k, k)
    assert keys.shape == (1, 2, 3, 4) and cache.length == 3
    assert cache.nbytes == 2 * 1 * 2 * 4 * 3 * 4
    ```
    """

    def __init__(
        self,
        batch: int,
        n_kv_heads: int,
        d_k: int,
        max_len: int,
        dtype: np.dtype | type = np.float64,
    ) -> None:
        shape = tuple(
            positive_int(name, value)
            for name, value in (
                ("batch", batch),
                ("n_kv_heads", n_kv_heads),
                ("max_len", max_len),
                ("d_k", d_k),
            )
        )
        self.dtype = float_dtype("dtype", dtype)
        allocatable("max_len", shape, self.dtype)  # twice: K and V
        allocatable("max_len", (2, *shape), self.dtype)
        self.batch, self.n_kv_heads, self.max_len, self.d_k = shape
        self.k = np.zeros(shape, self.dtype)  # (batch, h_kv, max_len, d_k)
        self.v = np.zeros(shape, self.dtype)
        self.length = 0
        self.layer_shape: tuple[int, int, int] | None = None
        self._layer: weakref.ref | None = None  # the layer whose keys it holds

    @property
    def nbytes(self) -> int:
        """Bytes held by the filled part of the cache (K and V)."""
        return (
            2
            * self.batch
            * self.n_kv_heads
            * self.d_k
            * self.length
            * self.dtype.itemsize
        )

    def append(self, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Store ``k, v (batch, h_kv, n_new, d_k)``; return views of all keys and values."""
        k, v = self._check_new(k, v)
        start, stop = self.length, self.length + k.shape[2]
        self.k[:, :, start:stop] = k
        self.v[:, :, start:stop] = v
        self.length = stop
        return self.k[:, :, :stop], self.v[:, :, :stop]

    def check_layer(
        self, layer_shape: tuple[int, int, int], layer: object | None = None
    ) -> None:
        """Refuse a layer of another ``(d_model, n_heads, n_kv_heads)`` than the one
        whose keys the cache holds, or another ``layer`` object of the same shape
        (two layers of one model sharing a cache). An empty cache, or one filled by
        ``append`` directly, takes the shape and layer it is given.

        ```python
        import numpy as np
        import pytest
        from mha import KVCache, MultiHeadAttention

        cache = KVCache(1, n_kv_heads=2, d_k=2, max_len=4)
        MultiHeadAttention(4, 2).step(np.ones((1, 1, 4)), cache)
        with pytest.raises(ValueError, match="one KVCache per layer"):
            MultiHeadAttention(8, 4, n_kv_heads=2).step(np.ones((1, 1, 8)), cache)
        with pytest.raises(ValueError, match="another layer of the same shape"):
            MultiHeadAttention(4, 2).step(np.ones((1, 1, 4)), cache)
        ```
        """
        if self.length == 0 or self.layer_shape is None:
            self.layer_shape = layer_shape
            self._layer = None if layer is None else weakref.ref(layer)
        elif layer_shape != self.layer_shape:
            raise ValueError(
                "cache: expected the cache of a layer of shape (d_model, n_heads, "
                f"n_kv_heads) = {layer_shape}, got one holding the keys of a layer of "
                f"shape {self.layer_shape}; make one KVCache per layer"
            )
        elif (
            layer is not None and self._layer is not None and self._layer() is not layer
        ):
            raise ValueError(
                "cache: expected the cache of this layer, got one holding the keys of "
                f"another layer of the same shape {layer_shape}; make one KVCache per "
                "layer"
            )

    # --- input checks ---------------------------------------------------------------

    def _check_new(self, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        heads = (self.batch, self.n_kv_heads, self.d_k)  # all but n_new
        k, v = float_array("k", k), float_array("v", v)
        for name, arr in (("k", k), ("v", v)):
            if arr.dtype != self.dtype:
                raise ValueError(
                    f"{name}: expected the cache's dtype {self.dtype}, got {arr.dtype}"
                )
            shape = arr.shape
            if len(shape) != 4 or (shape[0], shape[1], shape[3]) != heads:
                raise ValueError(
                    f"{name}: expected shape (batch={self.batch}, "
                    f"n_kv_heads={self.n_kv_heads}, n_new, d_k={self.d_k}), got {shape}"
                )
        if k.shape != v.shape:
            raise ValueError(f"v: expected the shape of k {k.shape}, got {v.shape}")
        free = self.max_len - self.length
        if k.shape[2] > free:
            raise ValueError(
                f"k: expected at most {free} new tokens "
                f"(max_len={self.max_len}, {self.length} cached), got {k.shape[2]}"
            )
        return k, v
