"""Where each printed number comes from: the page object traced as its template reads
it, and the number marked in the page's HTML with the attribute it was read from.

A template reads its page object through ``Traced``, which remembers the path of
every value it hands out (``example.head_a.weights[0]``) and otherwise behaves as the
value. A filter (``| dec``) formats the value and keeps its path (``tracing``). When
a traced value that prints a number leaves a ``{{ }}``, ``Sources.mark`` wraps it in
private-use characters carrying a short key, which Markdown, KaTeX's delimiters and
the table of contents' slugs all leave alone or drop. After the Markdown is HTML,
``Sources.place`` turns each into ``<m-n>0.768</m-n>`` (a custom element: the
shortest markup, as a page may print hundreds) where the number sits in text (a
paragraph, a list, a table cell, a heading). Its path is an entry of
``Sources.placed``, the paths the page's evidence file lists
(``docs/_glue/numbers.py``), each once, in the order the page first prints them: a
number printed from a path for the first time is the next entry, and carries no key;
one printing a path again carries its entry's index (``<m-n p=0>``). It drops the
marks where it cannot hold an element (math, code, an attribute, a script, a drawing): those
numbers keep their source in the page's list of sources at its foot.

```python
from mha_site.traced import Sources, Traced, strip, tracing

class Head:
    weights = [0.768, 0.2]

sources = Sources()
value = Traced(Head(), "head").weights[0]
text = sources.mark(tracing(lambda x: f"{x:.3f}")(value))
html = sources.place(f"<p>It gets {text}, <code>{text}</code>.</p>")
assert html == '<p>It gets <m-n>0.768</m-n>, <code>0.768</code>.</p>'
assert strip(f"$d = {text}$") == "$d = 0.768$" and sources.paths == ["head.weights[0]"]
assert sources.place(f"<p>{text}</p>") == "<p><m-n p=0>0.768</m-n></p>"
assert sources.placed == ["head.weights[0]"]
```
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable
from typing import Any

# A marked number: OPEN, its key (digits of base 256 written as the private-use
# characters KEYS[0]..KEYS[255]), SEP, the printed text, CLOSE.
OPEN, SEP, CLOSE = "\ue000", "\ue001", "\ue002"
_KEY0 = 0xE100
MARKED = re.compile(f"{OPEN}([\ue100-\ue1ff]+){SEP}(.*?){CLOSE}", re.S)
_ANY = re.compile(f"{OPEN}[\ue100-\ue1ff]+{SEP}|{CLOSE}")


def _key(index: int) -> str:
    digits = []
    while True:
        index, digit = divmod(index, 256)
        digits.append(chr(_KEY0 + digit))
        if not index:
            return "".join(reversed(digits))


def _index(key: str) -> int:
    number = 0
    for char in key:
        number = number * 256 + ord(char) - _KEY0
    return number


def strip(text: str) -> str:
    """``text`` without the marks around its numbers: what the reader sees."""
    return _ANY.sub("", text)


def unwrap(value: Any) -> Any:
    """The value a ``Traced`` stands for (anything else as it is)."""
    return value._v if isinstance(value, Traced) else value


def _traced_binary(op: Callable[[Any, Any], Any]) -> Callable:
    def method(self: Traced, other: Any) -> Any:
        return op(self._v, unwrap(other))

    return method


def _traced_reflected(op: Callable[[Any, Any], Any]) -> Callable:
    def method(self: Traced, other: Any) -> Any:
        return op(unwrap(other), self._v)

    return method


class Traced:
    """A value of the page object and its path from it, for a template to read.

    Attributes, items, iteration and calls hand out traced values with longer paths;
    comparisons, truth, length, arithmetic and printing act on the value itself.
    """

    __slots__ = ("_p", "_v")

    def __init__(self, value: Any, path: str) -> None:
        self._v, self._p = value, path

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # Jinja's and Python's probes (__html__, ...)
            raise AttributeError(name)
        return Traced(getattr(self._v, name), f"{self._p}.{name}")

    def __getitem__(self, key: Any) -> Any:
        key = unwrap(key)
        return Traced(self._v[key], f"{self._p}[{key!r}]")

    def __iter__(self):
        for index, item in enumerate(self._v):
            yield Traced(item, f"{self._p}[{index}]")

    def __reversed__(self):
        count = len(self._v)
        for index, item in enumerate(reversed(self._v)):
            yield Traced(item, f"{self._p}[{count - 1 - index}]")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args = tuple(map(unwrap, args))
        kwargs = {k: unwrap(v) for k, v in kwargs.items()}
        return Traced(self._v(*args, **kwargs), f"{self._p}()")

    def __len__(self) -> int:
        return len(self._v)

    def __bool__(self) -> bool:
        return bool(self._v)

    def __contains__(self, item: Any) -> bool:
        return unwrap(item) in self._v

    def __hash__(self) -> int:
        return hash(self._v)

    def __str__(self) -> str:
        return str(self._v)

    def __repr__(self) -> str:
        return repr(self._v)

    def __format__(self, spec: str) -> str:
        return format(self._v, spec)

    def __int__(self) -> int:
        return int(self._v)

    def __float__(self) -> float:
        return float(self._v)

    def __index__(self) -> int:
        return operator.index(self._v)

    def __round__(self, digits: int | None = None) -> Any:
        return round(self._v, digits)

    def __neg__(self) -> Any:
        return -self._v

    def __abs__(self) -> Any:
        return abs(self._v)

    __eq__ = _traced_binary(operator.eq)
    __ne__ = _traced_binary(operator.ne)
    __lt__ = _traced_binary(operator.lt)
    __le__ = _traced_binary(operator.le)
    __gt__ = _traced_binary(operator.gt)
    __ge__ = _traced_binary(operator.ge)
    __add__ = _traced_binary(operator.add)
    __sub__ = _traced_binary(operator.sub)
    __mul__ = _traced_binary(operator.mul)
    __truediv__ = _traced_binary(operator.truediv)
    __floordiv__ = _traced_binary(operator.floordiv)
    __mod__ = _traced_binary(operator.mod)
    __radd__ = _traced_reflected(operator.add)
    __rsub__ = _traced_reflected(operator.sub)
    __rmul__ = _traced_reflected(operator.mul)
    __rtruediv__ = _traced_reflected(operator.truediv)
    __rmod__ = _traced_reflected(operator.mod)


def tracing(function: Callable) -> Callable:
    """``function`` (a Jinja filter or test) given the values its traced arguments
    stand for; what it returns keeps the path of the first traced one."""

    @functools.wraps(function)  # keeps Jinja's jinja_pass_arg, if any
    def traced(*args: Any, **kwargs: Any) -> Any:
        path = next((a._p for a in args if isinstance(a, Traced)), None)
        result = function(
            *map(unwrap, args), **{k: unwrap(v) for k, v in kwargs.items()}
        )
        return result if path is None else Traced(result, path)

    return traced


def fields(paths: list[str]) -> list[str]:
    """The values of the page object ``paths`` start from, each once, in order.

    ```python
    from mha_site.traced import fields

    assert fields(["a.b[0]", "c['x']", "a.d", "e"]) == ["a", "c", "e"]
    ```
    """
    return list(dict.fromkeys(re.match(r"[^.\[(]+", p)[0] for p in paths))


# Elements a number's element cannot go in, or that the reader does not read as text: a
# number printed there loses its marks and keeps its source in the page's list.
_BARE = ("code", "pre", "script", "style", "textarea", "title", "option", "svg")
_TAG = re.compile(r"<(/?)([a-zA-Z][\w-]*)([^>]*)>")
_VOID = {
    "br",
    "hr",
    "img",
    "input",
    "wbr",
    "source",
    "col",
    "area",
    "embed",
    "track",
    "meta",
    "link",
}
_MATH = re.compile(r"""class=["'][^"']*\barithmatex\b""")


class Sources:
    """The paths of the numbers one page prints, in order of first print."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self._keys: dict[str, int] = {}
        self.placed: list[str] = []  # the paths of the numbers marked in text, once
        self._placed: dict[str, int] = {}

    def mark(self, value: Any) -> Any:
        """What ``{{ }}`` prints for ``value``: a traced value whose text holds a
        digit and is neither markup nor an address, between the marks carrying its path's key; anything
        else as it is (a traced one as its text)."""
        if not isinstance(value, Traced):
            return value
        text = "" if value._v is None else str(value._v)
        if not re.search(r"\d", text) or "<" in text or "://" in text:
            return value._v  # no number, markup, or an address (read whole)
        index = self._keys.setdefault(value._p, len(self.paths))
        if index == len(self.paths):
            self.paths.append(value._p)
        return f"{OPEN}{_key(index)}{SEP}{text}{CLOSE}"

    def _element(self, match: re.Match) -> str:
        path = self.paths[_index(match[1])]
        key = self._placed.setdefault(path, len(self.placed))
        if key == len(self.placed):  # the next entry: no key
            self.placed.append(path)
            return f"<m-n>{match[2]}</m-n>"
        return f"<m-n p={key}>{match[2]}</m-n>"

    def place(self, page_html: str) -> str:
        """``page_html`` with each marked number in text as an ``<m-n>``, its path
        the next entry of ``placed`` or, printed again, keyed by its entry's index
        (``p``); the marks of every other number dropped."""
        out, bare, at = [], [], 0  # bare: the elements open inside one it cannot go in
        for tag in _TAG.finditer(page_html):
            text = page_html[at : tag.start()]
            out.append(strip(text) if bare else MARKED.sub(self._element, text))
            closing, name, attributes = tag[1], tag[2].lower(), tag[3]
            empty = name in _VOID or attributes.rstrip().endswith("/")
            if closing and bare:
                bare.pop()
            elif (
                not closing
                and not empty
                and (bare or name in _BARE or _MATH.search(attributes))
            ):
                bare.append(name)
            out.append(strip(tag[0]))
            at = tag.end()
        tail = page_html[at:]
        out.append(strip(tail) if bare else MARKED.sub(self._element, tail))
        return "".join(out)
