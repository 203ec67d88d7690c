"""A content-hash cache for expensive build-time results.

``cached(fn, *args)`` returns ``fn(*args)``, computing it only when no result is stored
under the same key. The key hashes the code the result depends on (the syntax tree,
without docstrings and comments, of ``fn``'s module and of every ``mha`` module it
imports, directly or not, and of the module of any function passed as an argument),
the data files those modules read (the folder a module names ``DATA_DIR``), the
function's name, its pickled arguments, and the versions of Python, NumPy and
matplotlib. Any change to the code or the inputs invalidates the entry by itself:
there is nothing to clear by hand, and a docstring or comment edit recomputes
nothing. ``prune`` deletes entries that no recent build or test read. Processes that ask
for the same missing result at once compute it once: the others wait for it. Results live in
``.cache/results/`` at the repository root (ignored by git), or in ``$MHA_CACHE_DIR``.

``cached_arrays(name, key, compute)`` keeps large arrays (a real model's dequantised
weights) as ``.npy`` files under a key the caller derives from its inputs and code,
and holds one entry per name, so a new version replaces the old one on disk.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import dataclasses
import functools
import hashlib
import importlib
import io
import json
import os
import pickle
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from filelock import FileLock, Timeout

T = TypeVar("T")
Arrays = dict[str, np.ndarray]
PACKAGE = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """Where results are stored: ``$MHA_CACHE_DIR`` or ``<repo>/.cache/results``.

    ```python
    from mha.support.cache import cache_dir

    assert cache_dir().name
    ```
    """
    default = PACKAGE.parent.parent / ".cache" / "results"
    return Path(os.environ.get("MHA_CACHE_DIR", default))


@functools.cache
def code_hash() -> str:
    """SHA-256 of the syntax tree of every module of the ``mha`` package.

    Docstrings and comments are not part of it, so editing them changes nothing.

    ```python
    from mha.support.cache import code_hash

    assert len(code_hash()) == 64
    ```
    """
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE).as_posix().encode())
        digest.update(_tree_digest(path).encode())
    return digest.hexdigest()


def dependencies(module: str) -> list[str]:
    """The ``mha`` modules ``module`` runs: itself, its packages, what they import.

    ```python
    from mha.support.cache import dependencies

    modules = dependencies("mha.pages.cost")
    assert "mha.accounting" in modules and "mha.pages.ffn" not in modules
    ```
    """
    return list(_dependencies(module))


@functools.cache
def _dependencies(module: str) -> tuple[str, ...]:
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen or _module_path(name) is None:
            continue
        seen.add(name)
        todo += _direct_dependencies(name)
    return tuple(sorted(seen))


@functools.cache
def _direct_dependencies(module: str) -> list[str]:
    """The packages and modules ``module`` itself runs (each file parsed once)."""
    tree = ast.parse(_module_path(module).read_bytes())
    return _packages(module) + _imports(module, tree)


def code_digest(modules: list[str]) -> str:
    """SHA-256 of the code of ``mha`` modules and of everything they import.

    For a result that runs code no Python function names, such as a notebook:
    its key is the digest of the modules it imports. Docstrings and comments aside.

    ```python
    from mha.support.cache import code_digest

    assert code_digest(["mha.pages.cricket"]) != code_digest(["mha.attention"])
    ```
    """
    digest = hashlib.sha256()
    for module in sorted({m for name in modules for m in _dependencies(name)}):
        digest.update(module.encode() + _module_digest(module).encode())
    return digest.hexdigest()


def cache_key(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """The key under which ``fn(*args, **kwargs)`` is stored.

    ```python
    from mha.support.cache import cache_key

    assert cache_key(max, 1, 2) == cache_key(max, 1, 2) != cache_key(max, 2, 1)
    ```
    """
    functions = [fn, *[a for a in (*args, *kwargs.values()) if callable(a)]]
    modules = sorted(
        {m for f in functions for m in _dependencies(getattr(f, "__module__", ""))}
    )
    digest = hashlib.sha256(versions().encode())
    for module in modules:
        digest.update(module.encode())
        digest.update(_module_digest(module).encode())
    digest.update(f"{fn.__module__}.{fn.__qualname__}".encode())
    digest.update(_key_bytes((args, sorted(kwargs.items()))))
    return digest.hexdigest()


def _key_bytes(arguments: Any) -> bytes:
    """``arguments`` pickled for a key, the same bytes whichever objects they share:
    without the pickle memo, a result just computed (whose rows share key strings
    with the code) and the same result read from the cache (sharing others) pickle
    alike. (The fast-attention memory figure got two keys, one per process, and was
    drawn twice in a build.) Cyclic arguments, which need the memo, keep it."""
    buffer = io.BytesIO()
    pickler = _KeyPickler(buffer, protocol=5)
    pickler.fast = True  # no memo
    try:
        pickler.dump(arguments)
    except ValueError:  # "fast mode: can't pickle cyclic objects"
        buffer = io.BytesIO()
        _KeyPickler(buffer, protocol=5).dump(arguments)
    return buffer.getvalue()


def _module_path(module: str) -> Path | None:
    """The file of an ``mha`` module, or ``None`` for any other module."""
    if module != "mha" and not module.startswith("mha."):
        return None
    base = PACKAGE.joinpath(*module.split(".")[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _packages(module: str) -> list[str]:
    """The packages whose ``__init__`` runs before ``module``: mha, mha.pages, ..."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _imports(module: str, tree: ast.Module) -> list[str]:
    """The modules that ``import`` statements of ``module`` name (``from a import b``
    names ``a.b`` when that is a module, else ``a``), but for those under ``if
    TYPE_CHECKING:``, which never run: a figure annotated with a page's dataclass does
    not depend on the page's code (the values it is handed are part of the key)."""
    names = []
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    return [n for n in names if _module_path(n) is not None]


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """The nodes of ``tree`` outside ``if TYPE_CHECKING:`` blocks."""
    nodes, todo = [], [tree]
    while todo:
        node = todo.pop()
        nodes.append(node)
        if isinstance(node, ast.If) and _name(node.test) == "TYPE_CHECKING":
            todo += node.orelse
        else:
            todo += ast.iter_child_nodes(node)
    return nodes


def _name(node: ast.AST) -> str | None:
    return getattr(node, "id", None) or getattr(node, "attr", None)


@functools.cache
def _module_digest(module: str) -> str:
    """The module's syntax tree, and the files of the folder it names ``DATA_DIR``."""
    path = _module_path(module)
    digest = hashlib.sha256(_tree_digest(path).encode())
    tree = ast.parse(path.read_bytes())
    for node in tree.body:
        targets = getattr(node, "targets", [getattr(node, "target", None)])
        if any(getattr(t, "id", None) == "DATA_DIR" for t in targets):
            folder = importlib.import_module(module).DATA_DIR
            for data in sorted(Path(folder).rglob("*")):
                if data.is_file():
                    digest.update(data.name.encode() + data.read_bytes())
    return digest.hexdigest()


@functools.cache
def _tree_digest(path: Path) -> str:
    """SHA-256 of a Python file's syntax tree with its docstrings removed."""
    tree = ast.parse(path.read_bytes())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def versions() -> str:
    """The versions every cache key holds: Python's, NumPy's and Matplotlib's.

    ```python
    from mha.support.cache import versions

    assert versions().startswith("python ")
    ```
    """
    import matplotlib  # imported here: the cache itself draws nothing

    return f"python {sys.version_info[:3]} numpy {np.__version__} matplotlib {matplotlib.__version__}"


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
    from mha.support.cache import cached

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
    name = f"{fn.__module__}.{fn.__qualname__}{described(args, kwargs)}"
    return _cached(name, fn, args, kwargs)


def described(args: tuple, kwargs: dict | None = None, limit: int = 32) -> str:
    """The arguments of a computation, as its name in a build's progress shows them:
    each plain value (a number, a short string, a tuple of them, a small dataclass)
    written out, anything longer as ``…``; nothing when no argument is plain. Two
    computations of one function with other arguments get other names.

    ```python
    from mha.support.cache import described

    assert described((2, (11, 12))) == "(2, (11, 12))"
    assert described((list(range(100)), "mean")) == "(…, 'mean')"
    assert described((object(),)) == ""
    ```
    """
    values = [*args, *(kwargs or {}).values()]
    names = [*[""] * len(args), *(f"{key}=" for key in kwargs or {})]
    shown = [_plain(value, limit) for value in values]
    if all(text is None for text in shown):
        return ""
    parts = [f"{name}{text or '…'}" for name, text in zip(names, shown, strict=True)]
    return f"({', '.join(parts)})"


def _plain(value: Any, limit: int) -> str | None:
    """``repr(value)`` if it is plain and at most ``limit`` characters, else None."""
    plain = (int, float, str, bool, type(None))
    simple = isinstance(value, plain) or (
        isinstance(value, tuple | list) and all(isinstance(v, plain) for v in value)
    )
    if not simple and not dataclasses.is_dataclass(value):
        return None
    text = repr(value)
    return text if len(text) <= limit and " at 0x" not in text else None


def cached_as(name: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``cached(fn, *args, **kwargs)``, called ``name`` where a build shows its progress
    and keeps its timings: a helper that computes many things (every figure's SVG,
    every code block's output) is named after each of them. The name is not part of
    the cache key.

    ```python
    import json, os, tempfile
    from mha.support.cache import cache_dir, cached, cached_as

    os.environ["MHA_CACHE_DIR"] = tempfile.mkdtemp()

    def square(x):
        return x * x

    assert cached_as("figure demo.square", square, 4) == 16
    assert "figure demo.square" in json.loads((cache_dir() / "timings.json").read_text())
    assert cached(square, 4) == 16  # the same entry, read from the cache
    del os.environ["MHA_CACHE_DIR"]
    ```
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name: expected a non-empty string, got {name!r}")
    return _cached(name, fn, args, kwargs)


# Every result this process asked the cache for, computed or read: its name, its key
# and the function that computes it, so that a build can say which cached study a
# printed number came from (``asked``).
_ASKED: list[tuple[str, str, str]] = []


def asked() -> list[tuple[str, str, str]]:
    """The results this process asked the cache for, in order: ``(name, key,
    function)``, ``function`` the qualified name of the function that computes it
    (the same whether the result was computed or read).

    ```python
    import os, tempfile
    from mha.support.cache import asked, cached

    os.environ["MHA_CACHE_DIR"] = tempfile.mkdtemp()

    def double(x):
        return 2 * x

    cached(double, 3)
    name, key, function = asked()[-1]
    assert name.endswith("double(3)") and function.endswith("double")
    assert len(key) == 64
    del os.environ["MHA_CACHE_DIR"]
    ```
    """
    return list(_ASKED)


def _cached(name: str, fn: Callable[..., T], args: tuple, kwargs: dict) -> T:
    key = cache_key(fn, *args, **kwargs)
    _ASKED.append((name, key, f"{fn.__module__}.{fn.__qualname__}"))
    path = cache_dir() / f"{key}.pickle"
    if path.exists():
        _mark_read(path)
        return pickle.loads(path.read_bytes())
    cheap = _ONLY_CHEAP.get()
    if cheap is not None and not cheap(name):
        raise Missing(name, path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(path.with_suffix(".lock"))
        began = time.perf_counter()
        lock.acquire(blocking=_WAIT_FOR_OTHERS.get() and cheap is None)
    except Timeout:  # held by another process; not waiting (an OSError, caught first)
        raise (Busy(path) if cheap is None else Missing(name, path)) from None
    except OSError as error:  # a read-only folder: compute, store nothing
        _cannot_store(path.parent, error)
        with _progress(name):
            return fn(*args, **kwargs)
    # one process computes; another asking meanwhile (a test beside the build) waits
    try:
        if path.exists():  # computed by another process meanwhile
            _progress_of_others(time.perf_counter() - began)
            return pickle.loads(path.read_bytes())
        with _progress(name):
            result = fn(*args, **kwargs)
        _store(path, pickle.dumps(result, protocol=5))
    finally:
        lock.release()
    return result


class Busy(RuntimeError):
    """Raised by ``cached`` within ``not_waiting()``: another process is computing
    the entry asked for, to be stored at ``path``.

    ```python
    from pathlib import Path
    from mha.support.cache import Busy

    busy = Busy(Path("cache/0a1b.pickle"))
    assert busy.path.name == "0a1b.pickle" and "0a1b.pickle" in str(busy)
    ```
    """

    def __init__(self, path: Path):
        super().__init__(f"another process is computing {path.name}")
        self.path = path


# False within ``not_waiting()``: ``cached`` raises ``Busy`` instead of waiting.
_WAIT_FOR_OTHERS = contextvars.ContextVar("wait_for_others", default=True)


@contextlib.contextmanager
def not_waiting():
    """Within it, ``cached`` raises ``Busy`` where it would wait for another process
    computing the same entry: a build's second process turns to other work.

    ```python
    import os, tempfile
    from filelock import FileLock
    from mha.support.cache import Busy, cache_dir, cache_key, cached, not_waiting

    os.environ["MHA_CACHE_DIR"] = tempfile.mkdtemp()
    entry = cache_dir() / f"{cache_key(abs, -2)}.lock"
    busy = False
    with FileLock(entry), not_waiting():  # held, as by a process computing it
        try:
            cached(abs, -2)
        except Busy:
            busy = True
    assert busy and cached(abs, -2) == 2  # once free, computed
    del os.environ["MHA_CACHE_DIR"]
    ```
    """
    token = _WAIT_FOR_OTHERS.set(False)
    try:
        yield
    finally:
        _WAIT_FOR_OTHERS.reset(token)


class Missing(LookupError):
    """Raised by ``cached`` within ``only_cheap()``: the result ``name`` is not stored
    (at ``path``) and is not cheap to compute.

    ```python
    from pathlib import Path
    from mha.support.cache import Missing

    missing = Missing("mha.pages.depth.scan", Path("cache/0a1b.pickle"))
    assert missing.name == "mha.pages.depth.scan" and "scan" in str(missing)
    ```
    """

    def __init__(self, name: str, path: Path):
        super().__init__(f"{name} is not computed yet ({path.name})")
        self.name, self.path = name, path


# Within ``only_cheap(cheap)``: ``cached`` computes a missing result only if
# ``cheap(name)``, else raises ``Missing``.
_ONLY_CHEAP: contextvars.ContextVar[Callable[[str], bool] | None] = (
    contextvars.ContextVar("only_cheap", default=None)
)


@contextlib.contextmanager
def only_cheap(cheap: Callable[[str], bool]):
    """Within it, ``cached`` returns what is stored, computes what ``cheap(name)``
    calls cheap, and raises ``Missing`` for the rest (and for an entry another process
    is computing): `make serve` renders a page at once only if its studies are ready.

    ```python
    import os, tempfile
    from mha.support.cache import Missing, cached, only_cheap

    os.environ["MHA_CACHE_DIR"] = tempfile.mkdtemp()
    with only_cheap(lambda name: name.startswith("builtins.abs")):
        assert cached(abs, -4) == 4  # cheap: computed
        try:
            cached(max, 1, 2)
        except Missing as missing:
            assert missing.name == "builtins.max(1, 2)"
    assert cached(max, 1, 2) == 2  # outside it, computed
    del os.environ["MHA_CACHE_DIR"]
    ```
    """
    token = _ONLY_CHEAP.set(cheap)
    try:
        yield
    finally:
        _ONLY_CHEAP.reset(token)


def _store(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (a full disk leaves no part)."""
    tmp = None
    try:
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
            tmp.write(data)
        os.replace(tmp.name, path)  # atomic: a reader never sees half a file
    except OSError as error:
        if tmp is not None:
            Path(tmp.name).unlink(missing_ok=True)
        _cannot_store(path.parent, error)


def _cannot_store(folder: Path, error: OSError) -> None:
    """Say once that results are computed but not kept, why, and what to do."""
    if "store" not in _WARNED:
        _WARNED.add("store")
        print(
            f"[mha] cannot store results in the cache {folder} ({error.strerror}): "
            "they are computed but not kept, so the next build computes them again; "
            "free space there, or set MHA_CACHE_DIR to a writable folder with room",
            file=sys.stderr,
            flush=True,
        )


_WARNED: set[str] = set()


def _mark_read(path: Path) -> None:
    """Touch an entry as read (``prune`` keeps it); on a read-only cache, say once
    that reads cannot be recorded, and serve the hit anyway."""
    try:
        path.touch()
    except OSError as error:
        if "touch" not in _WARNED:
            _WARNED.add("touch")
            print(
                f"[mha] the cache {path.parent} is read-only ({error.strerror}): "
                "results are read but not marked; set MHA_CACHE_DIR to a writable "
                "folder to record them",
                file=sys.stderr,
                flush=True,
            )


def _progress_of_others(seconds: float) -> None:
    """Seconds waited for another process's study: not the waiting study's own."""
    if seconds > 0.01:
        importlib.import_module("mha.support.progress").waited(seconds)


def _progress(name: str):
    """``mha.support.progress.computing(name)``, imported when a study is computed:
    what a build prints is not part of any result's key."""
    return importlib.import_module("mha.support.progress").computing(name)


def prune(read_before: float, keep_seconds: float = 7 * 24 * 3600) -> list[Path]:
    """Delete the results not read since ``read_before`` (a ``time.time()``) nor in the
    last ``keep_seconds``; return their paths. A full build calls it with its own start
    time, so what it and recent test runs read stays, and stale entries go.

    ```python
    import os, tempfile, time
    from mha.support.cache import cached, prune

    os.environ["MHA_CACHE_DIR"] = tempfile.mkdtemp()
    cached(abs, -3)
    assert prune(time.time() + 1, keep_seconds=0)  # nothing read since: deleted
    assert not prune(time.time() + 1, keep_seconds=0)
    del os.environ["MHA_CACHE_DIR"]
    ```
    """
    cutoff = min(read_before, time.time() - keep_seconds)
    stale = [p for p in cache_dir().glob("*.pickle") if p.stat().st_mtime < cutoff]
    for path in stale:
        path.unlink(missing_ok=True)
        path.with_suffix(".lock").unlink(missing_ok=True)
    return stale


def cached_arrays(
    name: str, key: str, compute: Callable[[], tuple[Arrays, dict[str, Any]]]
) -> tuple[Arrays, dict[str, Any]]:
    """``compute()``'s arrays and JSON metadata, stored as files under ``name/key``.

    ``key`` must change whenever the result would (hash the inputs and the code that
    computes it). Only the latest entry of ``name`` is kept: storing a new key removes
    the others. Arrays are ``.npy`` files, mapped into memory with no pickle and no
    copy (a page is read when first used; processes share the pages), so they are
    read-only, and so are those just computed: the same whether cached or not.

    ```python
    import os, tempfile
    import numpy as np
    from mha.support.cache import cached_arrays

    os.environ["MHA_CACHE_DIR"] = tempfile.mkdtemp()
    calls = []

    def compute():
        calls.append(1)
        return {"w": np.arange(3.0)}, {"note": "three"}

    first = cached_arrays("demo", "v1", compute)
    arrays, meta = cached_arrays("demo", "v1", compute)
    assert arrays["w"].tolist() == [0.0, 1.0, 2.0] and meta == {"note": "three"}
    assert len(calls) == 1  # computed once
    assert not arrays["w"].flags.writeable and not first[0]["w"].flags.writeable
    del os.environ["MHA_CACHE_DIR"]
    ```
    """
    folder = cache_dir() / name
    entry = folder / key
    if (entry / "meta.json").exists():
        return _stored_arrays(entry)
    if _ONLY_CHEAP.get() is not None:  # never cheap: seconds of work
        raise Missing(f"{name} arrays", entry)
    try:  # one process computes; another asking meanwhile waits, then reads them
        folder.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(folder.parent / f"{name}.arrays.lock")
        began = time.perf_counter()
        lock.acquire()
    except OSError:  # a read-only folder: compute, store nothing
        return compute()
    try:
        if (entry / "meta.json").exists():  # computed by another process meanwhile
            _progress_of_others(time.perf_counter() - began)
            return _stored_arrays(entry)
        return _compute_arrays(folder, key, compute)
    finally:
        lock.release()


def _stored_arrays(entry: Path) -> tuple[Arrays, dict[str, Any]]:
    """The arrays and metadata stored in ``entry``, mapped into memory."""
    stored = json.loads((entry / "meta.json").read_text())
    arrays = {
        k: np.load(entry / f"{k}.npy", mmap_mode="r").view(np.ndarray)
        for k in stored["arrays"]
    }
    return arrays, stored["meta"]


def _compute_arrays(
    folder: Path, key: str, compute: Callable[[], tuple[Arrays, dict[str, Any]]]
) -> tuple[Arrays, dict[str, Any]]:
    """``compute()``'s arrays, made read-only and stored in ``folder/key``."""
    entry = folder / key
    arrays, meta = compute()
    for array in arrays.values():
        array.flags.writeable = False
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=folder, prefix=".tmp-"))
        for k, array in arrays.items():
            np.save(tmp / f"{k}.npy", array)
        # meta.json last: an entry is complete once it exists
        (tmp / "meta.json").write_text(
            json.dumps({"arrays": list(arrays), "meta": meta})
        )
    except OSError as error:  # a full disk, a read-only folder: keep nothing
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        _cannot_store(folder, error)
        return arrays, meta
    for old in folder.iterdir():
        if old.name != key and not old.name.startswith(".tmp-"):
            shutil.rmtree(old, ignore_errors=True)
    try:
        tmp.rename(entry)  # atomic; fails if another process stored it first
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return arrays, meta
