"""A content-hash cache for expensive build-time results.

``cached(fn, *args)`` returns ``fn(*args)``, computing it only when no result is stored
under the same key. The key hashes the source of every module of the ``mha`` package,
the function's name and its pickled arguments, so any change to the code or the inputs
invalidates the entry by itself: there is nothing to clear by hand. Processes that ask
for the same missing result at once compute it once: the others wait for it. Results live in
``.cache/results/`` at the repository root (ignored by git), or in ``$MHA_CACHE_DIR``.

``cached_arrays(name, key, compute)`` keeps large arrays (a real model's dequantised
weights) as ``.npy`` files under a key the caller derives from its inputs and code,
and holds one entry per name, so a new version replaces the old one on disk.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import pickle
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from filelock import FileLock

T = TypeVar("T")
Arrays = dict[str, np.ndarray]
PACKAGE = Path(__file__).resolve().parent


def cache_dir() -> Path:
    """Where results are stored: ``$MHA_CACHE_DIR`` or ``<repo>/.cache/results``.

    ```python
    from mha.cache import cache_dir

    assert cache_dir().name
    ```
    """
    default = PACKAGE.parent.parent / ".cache" / "results"
    return Path(os.environ.get("MHA_CACHE_DIR", default))


@functools.cache
def code_hash() -> str:
    """SHA-256 of the source of every ``.py`` file of the ``mha`` package.

    ```python
    from mha.cache import code_hash

    assert len(code_hash()) == 64
    ```
    """
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_key(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """The key under which ``fn(*args, **kwargs)`` is stored.

    ```python
    from mha.cache import cache_key

    assert cache_key(max, 1, 2) == cache_key(max, 1, 2) != cache_key(max, 2, 1)
    ```
    """
    digest = hashlib.sha256(code_hash().encode())
    digest.update(f"{fn.__module__}.{fn.__qualname__}".encode())
    arguments = io.BytesIO()
    _KeyPickler(arguments, protocol=5).dump((args, sorted(kwargs.items())))
    digest.update(arguments.getvalue())
    return digest.hexdigest()


class _KeyPickler(pickle.Pickler):
    """Pickles an array as its C-ordered copy: a strided view of some numbers (a result
    just computed) and a copy of them (the same result read from the cache) would
    otherwise pickle to different bytes, and so to two keys for one computation."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, np.ndarray) and not obj.flags.c_contiguous:
            return np.ascontiguousarray(obj).__reduce_ex__(5)  # the protocol of dump
        return NotImplemented


def cached(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, loaded from the cache when the same code ran it before.

    ```python
    import os, tempfile
    from mha.cache import cached

    os.environ["MHA_CACHE_DIR"] = tempfile.mkdtemp()
    calls = []

    def square(x):
        calls.append(x)
        return x * x

    assert cached(square, 4) == cached(square, 4) == 16
    assert calls == [4]  # computed once
    del os.environ["MHA_CACHE_DIR"]
    ```
    """
    path = cache_dir() / f"{cache_key(fn, *args, **kwargs)}.pickle"
    if path.exists():
        return pickle.loads(path.read_bytes())
    path.parent.mkdir(parents=True, exist_ok=True)
    # one process computes; another asking meanwhile (a test beside the build) waits
    with FileLock(path.with_suffix(".lock")):
        if path.exists():
            return pickle.loads(path.read_bytes())
        result = fn(*args, **kwargs)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
            tmp.write(pickle.dumps(result, protocol=5))
        os.replace(tmp.name, path)  # atomic: a reader never sees half a file
    return result


def cached_arrays(
    name: str, key: str, compute: Callable[[], tuple[Arrays, dict[str, Any]]]
) -> tuple[Arrays, dict[str, Any]]:
    """``compute()``'s arrays and JSON metadata, stored as files under ``name/key``.

    ``key`` must change whenever the result would (hash the inputs and the code that
    computes it). Only the latest entry of ``name`` is kept: storing a new key removes
    the others. Arrays are ``.npy`` files, read back at disk speed, with no pickle.

    ```python
    import os, tempfile
    import numpy as np
    from mha.cache import cached_arrays

    os.environ["MHA_CACHE_DIR"] = tempfile.mkdtemp()
    calls = []

    def compute():
        calls.append(1)
        return {"w": np.arange(3.0)}, {"note": "three"}

    first = cached_arrays("demo", "v1", compute)
    arrays, meta = cached_arrays("demo", "v1", compute)
    assert arrays["w"].tolist() == [0.0, 1.0, 2.0] and meta == {"note": "three"}
    assert len(calls) == 1  # computed once
    del os.environ["MHA_CACHE_DIR"]
    ```
    """
    folder = cache_dir() / name
    entry = folder / key
    if (entry / "meta.json").exists():
        stored = json.loads((entry / "meta.json").read_text())
        arrays = {k: np.load(entry / f"{k}.npy") for k in stored["arrays"]}
        return arrays, stored["meta"]
    arrays, meta = compute()
    folder.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder, prefix=".tmp-"))
    for k, array in arrays.items():
        np.save(tmp / f"{k}.npy", array)
    # meta.json last: an entry is complete once it exists
    (tmp / "meta.json").write_text(json.dumps({"arrays": list(arrays), "meta": meta}))
    for old in folder.iterdir():
        if old.name != key and not old.name.startswith(".tmp-"):
            shutil.rmtree(old, ignore_errors=True)
    try:
        tmp.rename(entry)  # atomic; fails if another process stored it first
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return arrays, meta
