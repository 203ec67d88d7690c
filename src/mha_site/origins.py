"""Which function computed each value of a page object, read from the page module's
``page()``, and which cached studies it read.

``fields(module)`` reads ``page()`` by its syntax tree: for each value of the
``Page(...)`` it returns, the expression assigned to it, followed through the local
names it uses (``a = atlas()``, ``rows, ranks = cached(_sweep), cached(_ranks)``)
to the first function of ``mha`` it calls (the function ``cached`` is handed, for a
cached study), or the module constant it reads. ``studies(function)`` is each cached
result of that function or of those its code asks the cache for, as the build asked
for it (``mha.support.cache.asked``): its name,
its key (the content hash its entry is stored under) and the CPU seconds it took in
the sealed cold build (``mha/data/bench/studies.json``, written by ``make bench``).
Nothing is timed at build: two builds of one commit say the same.

```python
from mha_site.origins import fields

origin = fields("mha.pages.cricket")["example"]
assert origin.name == "mha.worked.cricket.solve" and origin.kind == "function"
assert origin.path.name == "cricket.py" and origin.line > 1
```
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mha.support import cache, progress

_CACHED = {"cached": 1, "cached_as": 2}  # the position of the function they run, + 1


@dataclass(frozen=True)
class Origin:
    """What computed a value: ``name`` (``module.qualname``), ``kind`` ("function",
    "class", "constant" or "module"), and where it is defined (``path``, ``line``)."""

    name: str
    kind: str
    path: Path
    line: int


@dataclass(frozen=True)
class Study:
    """A cached result: its name, its key and its sealed CPU seconds (None if the
    sealed build did not time it)."""

    name: str
    key: str
    cpu: float | None


@functools.cache
def _defined(obj: Any) -> tuple[Path, int] | None:
    """Where function or class ``obj`` is defined: a function's first line from its
    code (what ``inspect.getsourcelines`` reads too, without tokenizing the file: 4.6
    of a warm build's seconds went there), a class's from its source."""
    try:
        path = Path(inspect.getsourcefile(obj))
        code = getattr(obj, "__code__", None)
        return path, code.co_firstlineno if code else inspect.getsourcelines(obj)[1]
    except (TypeError, OSError):
        return None


def _origin(obj: Any, name: str, module: Any) -> Origin | None:
    """``obj`` as an Origin, if it is a function or class of ``mha`` or a constant
    ``name`` of page module ``module`` or another ``mha`` module."""
    ours = getattr(obj, "__module__", None) or getattr(obj, "__name__", "")
    ours = str(ours).split(".")[0] == "mha"
    inner = inspect.unwrap(obj) if callable(obj) else obj  # functools.cache's too
    if inspect.isfunction(inner) or inspect.isclass(inner):
        found = _defined(inner)
        if found and ours:
            kind = "class" if inspect.isclass(inner) else "function"
            return Origin(f"{inner.__module__}.{inner.__qualname__}", kind, *found)
        return None
    if inspect.ismodule(obj):  # a module of published data, handed whole
        return Origin(obj.__name__, "module", Path(obj.__file__), 1) if ours else None
    if callable(obj):
        return None
    owner, _, attribute = name.rpartition(".")
    home = importlib.import_module(owner) if owner else module
    path = Path(home.__file__)
    pattern = re.compile(rf"^{re.escape(attribute or name)}\s*[:=]")
    lines = path.read_text(encoding="utf-8").splitlines()
    line = next((n for n, text in enumerate(lines, 1) if pattern.match(text)), None)
    if line is None:
        return None
    return Origin(f"{home.__name__}.{attribute or name}", "constant", path, line)


class _Reader:
    """Follows an expression of ``page()`` to what computed it."""

    def __init__(self, module: Any, bindings: dict[str, ast.expr]) -> None:
        self.module, self.bindings = module, bindings

    def _object(self, node: ast.expr) -> tuple[Any, str] | None:
        """The object a dotted name of the module denotes, and its dotted name."""
        if isinstance(node, ast.Name) and node.id not in self.bindings:
            if node.id in vars(self.module):
                obj = vars(self.module)[node.id]
                home = getattr(obj, "__name__", None) if inspect.ismodule(obj) else None
                return obj, home or node.id
            return None
        if isinstance(node, ast.Attribute):
            base = self._object(node.value)
            if base is not None and hasattr(base[0], node.attr):
                owner = base[0]
                name = f"{base[1]}.{node.attr}" if inspect.ismodule(owner) else ""
                return getattr(owner, node.attr), name
        return None

    def callable_(self, node: ast.expr, depth: int) -> Origin | None:
        found = self._object(node)
        if found is not None:
            origin = _origin(*found, self.module)
            if origin is not None:
                return origin
        if isinstance(node, ast.Attribute):  # a method of a local value
            return self.read(node.value, depth + 1)
        return None

    def read(self, node: ast.expr, depth: int = 0) -> Origin | None:
        if depth > 12:
            return None
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            at = _CACHED.get(name)
            if at and len(node.args) >= at:
                return self.callable_(node.args[at - 1], depth)
            plain = isinstance(node.func, ast.Name) and hasattr(builtins, name or "")
            if not plain:
                origin = self.callable_(node.func, depth)
                if origin is not None:
                    return origin
            return self._first([*node.args, *(k.value for k in node.keywords)], depth)
        if isinstance(node, ast.Name):
            if node.id in self.bindings:
                return self.read(self.bindings[node.id], depth + 1)
            found = self._object(node)
            return _origin(*found, self.module) if found else None
        if isinstance(node, ast.Attribute):
            found = self._object(node)
            origin = _origin(*found, self.module) if found else None
            return origin or self.read(node.value, depth + 1)
        if isinstance(node, ast.Subscript | ast.Starred):
            return self.read(node.value, depth + 1)
        return self._first(list(ast.iter_child_nodes(node)), depth)

    def called(self, call: ast.Call) -> tuple[Origin | None, bool]:
        """The ``mha`` function ``call`` runs, or hands to the cache (``cached(f,
        ...)``), and whether it was handed to the cache."""
        name = getattr(call.func, "id", None) or getattr(call.func, "attr", None)
        at = _CACHED.get(name)
        handed = bool(at) and len(call.args) >= at
        denoted = self._object(call.args[at - 1] if handed else call.func)
        return (_origin(*denoted, self.module) if denoted else None), handed

    def every(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> list:
        """Every function the expression ``node`` calls or hands to the cache,
        through the local names it reads, in reading order: ``(origin, cached)``."""
        found = []
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                origin, handed = self.called(sub)
                if origin is not None:
                    found.append((origin, handed))
            elif isinstance(sub, ast.Name) and sub.id in self.bindings.keys() - seen:
                found += self.every(self.bindings[sub.id], seen | {sub.id})
        return found

    def _first(self, nodes: list[ast.AST], depth: int) -> Origin | None:
        """The first of ``nodes`` (calls before names) that leads to an origin."""
        ordered = [n for n in nodes if isinstance(n, ast.expr)]
        for node in sorted(ordered, key=lambda n: not isinstance(n, ast.Call)):
            origin = self.read(node, depth + 1)
            if origin is not None:
                return origin
        return None


def _bindings(function: ast.FunctionDef) -> dict[str, ast.expr]:
    """The first value each local name of ``function`` is given."""
    bound: dict[str, ast.expr] = {}
    for node in ast.walk(function):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name):
                bound.setdefault(target.id, node.value)
            elif isinstance(target, ast.Tuple):
                values = getattr(node.value, "elts", None)
                paired = values if values and len(values) == len(target.elts) else None
                for index, element in enumerate(target.elts):
                    if isinstance(element, ast.Name):
                        value = paired[index] if paired else node.value
                        bound.setdefault(element.id, value)
    return bound


def _assigned(call: ast.Call, bound: dict[str, ast.expr]) -> dict[str, ast.expr]:
    """Each value of ``Page(...)`` and its expression, ``**values`` unpacked."""
    found: dict[str, ast.expr] = {}
    for keyword in call.keywords:
        if keyword.arg is not None:
            found[keyword.arg] = keyword.value
            continue
        spread = keyword.value
        if isinstance(spread, ast.Name):
            spread = bound.get(spread.id, spread)
        if isinstance(spread, ast.Call):  # dict(a=..., b=...)
            found |= {k.arg: k.value for k in spread.keywords if k.arg}
        elif isinstance(spread, ast.Dict):
            for key, value in zip(spread.keys, spread.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    found[key.value] = value
    return found


# Functions that derive or format what a study computed: named as a value's origin
# only when no study stands behind it
_HELPERS = ("mha.pages.", "mha.support.formatting.")


def _studied(reader: _Reader, value: ast.expr) -> Origin | None:
    """What computed ``value``: the first function it leads to, unless that is a
    page's helper or a formatter beside a study (``[(_name(h), s.copying[i]) ...]``
    with ``s = _studies()``): then the first function it reads that is a cached
    study or asks the cache for one."""
    first = reader.read(value)
    every = reader.every(value)
    handed = {origin.name for origin, cached in every if cached}

    def studies(origin: Origin) -> bool:
        return origin.name in handed or bool(_asks(origin.name))

    if first is None or studies(first) or not first.name.startswith(_HELPERS):
        return first
    return next((o for o, _ in every if studies(o)), first)


@functools.cache
def fields(module_name: str) -> dict[str, Origin]:
    """For each value of page module ``module_name``'s page object, what computed it
    (the module's ``page`` itself when its expression leads to nothing of ``mha``)."""
    module = importlib.import_module(module_name)
    page = inspect.unwrap(module.page)
    path, first = _defined(page)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    function = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.name == "page" and n.lineno >= first
    )
    bound = _bindings(function)
    reader = _Reader(module, bound)
    itself = Origin(f"{module_name}.page", "function", path, first)
    origins: dict[str, Origin] = {}
    for node in ast.walk(function):
        name = getattr(getattr(node, "func", None), "id", None)
        if isinstance(node, ast.Call) and name == "Page":
            for field, value in _assigned(node, bound).items():
                origins.setdefault(field, _studied(reader, value) or itself)
    return origins


@functools.cache
def _sealed() -> tuple[dict[str, float], str]:
    """The sealed CPU seconds of each study, by its name without the underscores of
    private names (a study renamed private is the same study), and the commit."""
    studies = progress.sealed()
    try:
        commit = json.loads(progress.SEALED.read_text(encoding="utf-8"))["provenance"]
        commit = commit["commit"][:7]
    except (OSError, ValueError, KeyError):
        commit = ""
    return {_public(n): e["cpu"] for n, e in studies.items()}, commit


def _public(name: str) -> str:
    return re.sub(r"\._", ".", name)


def sealed_commit() -> str:
    """The commit at which ``make bench`` sealed the studies' times."""
    return _sealed()[1]


def _named(name: str) -> Any:
    """The object a qualified name of ``mha`` denotes, or None."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part, None)
        return obj
    return None


_FOLLOWED = 3  # how deep ``_asks`` follows the functions a function calls


@functools.cache
def _asks(name: str, depth: int = 0) -> frozenset[str]:
    """The functions whose results function ``name`` asks the cache for, read from
    its code and that of the ``mha`` functions it calls (not from a run: a warm and
    a cold build ask in other orders, and a cold one also inside the studies)."""
    obj = _named(name)
    inner = inspect.unwrap(obj) if callable(obj) else None
    if not inspect.isfunction(inner):
        return frozenset()
    module = importlib.import_module(inner.__module__)
    reader = _Reader(module, {})
    found: set[str] = set()
    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(inner)))):
        if not isinstance(node, ast.Call):
            continue
        origin, handed = reader.called(node)
        if origin is None or origin.kind != "function" or origin.name == name:
            continue
        if handed:
            found.add(origin.name)
        elif depth < _FOLLOWED:
            found |= _asks(origin.name, depth + 1)
    return frozenset(found)


def studies(function: str) -> list[Study]:
    """The cached results of ``function`` (a qualified name) and of the functions
    it asks the cache for (``_asks``), as this process asked for them (computed or
    read), each once, by name; figures and code blocks aside."""
    names = {function} | _asks(function)
    times = _sealed()[0]
    found = {
        key: Study(name, key, times.get(_public(name)))
        for name, key, computes in cache.asked()
        if computes in names and not name.startswith(("figure ", "code block"))
    }
    return sorted(found.values(), key=lambda s: (s.name, s.key))
