"""The drift guard: find numbers typed by hand into a page, for the build to refuse.

The build runs it on every page it builds (``docs/_glue/drift.py``, an mkdocs hook):
a finding fails ``make build`` and a ``make serve`` rebuild, naming the file, the
line and the fix. The kinds of hand-typed number:

- **in prose**, tables, admonitions and the attributes of raw HTML (``title``,
  ``alt``, ``value``, ``data-*``, ``style``…, all but links, names and identifiers:
  ``NOT_VALUES``): a run of digits with an optional sign, decimal point,
  thousands commas or percent sign; glued to a unit (``10x``, ``3ms``, ``12GB``,
  ``128k``, ``4K``; ``12 GB`` is the number ``12`` anyway); a decimal count of
  millions or billions (``7.24B``; ``7B`` and ``70B`` name models); in scientific
  notation (``1e-4``); a vulgar fraction (``¾``); a count in words from "two" up,
  whatever it counts (``three heads``, ``twelve columns``, ``twice``: the structural
  counts a page explains are allowlisted, each with its reason); a fraction in words
  (``a quarter``, ``a tenth of``, ``half`` as an amount);
- **in math**, a rule: math holds no literal but exponents, subscripts and small
  structural constants. Every number of two digits or more is a value, and so is a
  single digit that is the whole value a relation gives a symbol (``$d_k = 3$``;
  ``= 0`` and ``= 1`` stay constants, as in "the weights sum to 1");
- **any literal in a template** (``{{ }}``, ``{% %}``): an argument, a filter's input
  (``{{ 0.768 | pct }}``), a ``set``, a comparison, a number in a string literal
  (``{{ "76.8%" }}``). A subscript (``rows[3]``) and the digits of a formatting filter
  (``dec(1)``) are not values of the page, so they are allowed;
- **in a text output block** (a fence marked ``text``, ``console``, ``output``,
  ``pycon`` or nothing): output typed by hand instead of printed by a block the build
  runs (markdown-exec, ``result="text"``);
- **in a comment of a code block**, a value its code does not type (a decimal, a
  percentage, a number with a unit, a fraction in words; integers, in digits or in
  words, are shapes and counts);
- **in a notebook** (jupytext ``.py``): its Markdown cells as prose, and the strings
  its code cells print (``print("Kohli gets 0.768")``).

And what is published from outside docs/ (``sources``): the string literals a page
module passes to ``Figure`` as alt text or caption, the titles of mkdocs.yml's nav,
the ``# prints``/``# ->`` comments of docstring examples (an example asserts instead)
and every number in the prose of the docstrings the API reference renders
(``published_modules``), integers included. The hook also checks raw HTML links and
images (``<a href>``, ``<img src>``) as mkdocs checks Markdown links (``html_links``).

Not numbers: code fences of a language, inline code, HTML comments and tags but their
attributes' values, link targets, the marker of an ordered list, arXiv ids, a place in a
cited paper (``Table 3``, ``§3.2``), and identifiers with digits in them (``GPT-2``,
``Llama-2 70B``, ``W_O``, ``47th``: a digit run glued to a letter that is not a unit,
or a hyphen glued to a word before it).

The few numbers that must be typed (a year, a version, an example's input data) are
on the allowlist (``drift_allowlist.toml`` beside this module): the exact string, a
fragment of the sentence it stands in (it excuses that number inside the fragment,
nowhere else, not even on the same line) and the reason. An entry whose fragment no
longer occurs on its page, or that excuses nothing, is a finding too.

```python
from mha_site.drift import numbers

found = numbers("The cache takes 12 GB, 10x less.\\n\\nA rate of 1e-4 here.\\n")
assert [(f.line, f.text) for f in found] == [(1, "12"), (1, "10x"), (3, "1e-4")]
assert numbers("GPT-2 and Llama-2 70B; `x = 0.5`; {{ w[0] | dec(3) }}\\n") == []
```
"""

from __future__ import annotations

import ast
import functools
import posixpath
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import jinja2
from jinja2 import nodes

ALLOWLIST = Path(__file__).with_name("drift_allowlist.toml")
FORMAT_FILTERS = frozenset({"dec", "pct", "thousands", "vec", "sig", "indent"})
OUTPUT_FENCES = frozenset({"", "text", "txt", "console", "output", "pycon", "plain"})

FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*(.*)$")
BLOCKS = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}|<!--.*?-->", re.S)
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$|\\\(.*?\\\)|\\\[.*?\\\]", re.S)
INLINE_CODE = re.compile(r"(`+).+?\1")
LINK_TARGET = re.compile(r"\]\([^)]*\)|\]\[[^\]]*\]|^\s*\[[^\]]+\]:.*$", re.M)
TAG = re.compile(r"<[^>\n]+>")
ATTRIBUTE = re.compile(
    r"([\w:.-]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s\"'=<>`]+))", re.I
)
# The attributes of raw HTML that hold no value of the page: links, names, identifiers,
# the structure of a list or a table, the layout of an image or a field. Every other attribute is read as
# prose, whether the reader sees it (``title``, ``alt``, ``aria-label``) or a script or a
# style draws it (``<meter value="0.9">``, ``data-weight="0.768"``,
# ``style="width: 76.8%"``).
NOT_VALUES = frozenset(
    [
        "href",
        "src",
        "srcset",
        "id",
        "class",
        "for",
        "name",
        "type",
        "role",
        "rel",
        "target",
        "lang",
        "dir",
        "inputmode",
        "autocomplete",
        "loading",
        "decoding",
        "tabindex",
        "markdown",
        "start",
        "colspan",
        "rowspan",
        "span",
        "width",
        "height",
        "size",
        "maxlength",
        "rows",
        "cols",
        "aria-level",
    ]
)
# An input's bounds and step may be the constants 0 and 1 (counts start there).
BOUNDS = frozenset({"min", "max", "step"})
ATTR_LIST = re.compile(r"\{\s*[:#.][^}]*\}")
LIST_MARKER = re.compile(r"^(\s*)\d+[.)](?=\s)", re.M)
# A reference into a cited paper names a place, not a value: Table 3, Figure 2, §3.2.
CITED_PLACE = re.compile(
    r"\b(?:Table|Figure|Fig\.|Section|Sec\.|Eq\.|Equation|Appendix)\s+\d+(?:\.\d+)*"
    r"|§\s*\d+(?:\.\d+)*",
    re.I,
)
ARXIV = re.compile(r"arXiv[:\s]+\d{4}\.\d{4,5}(v\d+)?", re.I)
_DIGITS = r"\d+(?:,\d{3})*(?:\.\d+)?"
SCIENTIFIC = re.compile(r"[-+−]?(?<![\w.,])\d+(?:\.\d+)?[eE][-+−]?\d+(?![\w.])")
UNITS = r"x|×|ms|µs|us|ns|s|min|h|GB|MB|kB|KB|TB|GiB|MiB|KiB|px|pt|GHz|MHz|tok/s"
# A digit run glued to letters is a name (GPT-2, 47th, a model's 7B or 135M) unless the
# letters are a unit above or a thousands count (128k, 4K): those are values.
THOUSANDS = re.compile(r"(?<![\w.,])\d+(?:\.\d+)?[kK](?![\w])")
FRACTIONS = re.compile(r"[\u00bc-\u00be\u2150-\u215e\u2189]")
# A count written in words is a value, whatever it counts or if it counts nothing
# ("split into three heads", "eight scores and seven rows, in twelve columns"): every
# number word from "two" up, and "twice", "thrice". "one" is the article of a single
# thing ("one head", "one of the heads"), not a count. A count inside a fact's sentence
# is the comparison that fact checks ("more than ten times the scores"); the few counts
# that are the structure of what is explained, never a result ("the two halves of a
# vector", "between two tokens"), are excused by the allowlist's `[[word]]` entries, each
# with its reason. A vague plural ("thousands of tokens", "dozens of heads") is not a
# count.
_NUMBER_WORDS = (
    r"two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
    r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|"
    r"seventy|eighty|ninety|hundred|thousand|million|billion|dozen|twice|thrice"
)
_ORDINALS = (
    r"third|fifth|sixth|seventh|eighth|ninth|tenth|twelfth|twentieth|hundredth|"
    r"thousandth|millionth"
)
NUMBER_WORDS = re.compile(
    rf"\b(?:{_NUMBER_WORDS})(?:[-\s]+(?:{_NUMBER_WORDS}|and))*\b(?<!\band)"
    r"(?![-\s]+part(?:y|ies)\b)",
    re.I,
)
# A fraction in words states a value as much as ``0.25`` does: "a quarter", "a tenth of",
# "three quarters" (the number word is a count already), and "half" when it is an amount
# ("half the width", "about half of them", "half a unit"). Not fractions: an ordinal ("a
# third party", "the fifth layer"), a part named by its place ("the first half", "the
# middle half of the rounds": the quartiles' definition) and a name ("half-split").
FRACTION_WORDS = re.compile(
    r"\b(?:a|one)[-\s]+quarters?\b"
    rf"|\b(?:a|one)[-\s]+(?:{_ORDINALS})s?(?=\s+(?:of|as|less|more|fewer|the)\b)"
    r"|(?<!\bfirst\s)(?<!\bsecond\s)(?<!\bmiddle\s)(?<!\bother\s)(?<!\bupper\s)"
    r"(?<!\blower\s)(?<!\beach\s)(?<!\blast\s)(?<!\bone\s)\bhalf\b(?!-)",
    re.I,
)
MAY_HOLD_A_NUMBER = re.compile(
    rf"\d|[\u00bc-\u00be\u2150-\u215e\u2189]|\b(?:{_NUMBER_WORDS}|half|quarters?|"
    rf"{_ORDINALS})\b",
    re.I,
)
WITH_UNIT = re.compile(rf"[-+−]?(?<![\w.,]){_DIGITS}(?:{UNITS})(?![\w])")
# A decimal count of millions or billions (7.24B) is a number; 7B or 70B names a model.
DECIMAL_SIZE = re.compile(r"(?<![\w.,])\d+\.\d+[KMBT](?![\w])")
NUMBER = re.compile(rf"[-+−]?(?<![\w.,]){_DIGITS}%?(?![\w])")


@dataclass(frozen=True)
class Finding:
    """A hand-typed number: where it stands, what it is, and how to fix it."""

    page: str  # relative to docs/
    line: int  # 1-based; 0 for an allowlist entry that no longer applies
    text: str
    fix: str

    def __str__(self) -> str:
        return f"docs/{self.page}:{self.line}: {self.text!r}: {self.fix}"


@dataclass(frozen=True)
class Entry:
    """An allowlisted number: exact text, a fragment of its sentence, and why."""

    page: str
    text: str
    fragment: str
    reason: str


def _blank(match: re.Match) -> str:
    """Replace a match by spaces, keeping its newlines (so line numbers hold)."""
    return re.sub(r"[^\n]", " ", match.group(0))


ALONE = re.compile(r"\s*(?:$|\$|[,;.)}\]]|\\\)|\\\]|\\quad|\\qquad|\\text)")
RELATION = re.compile(r"(?:=|<|>|\\approx|\\le|\\ge|\\leq|\\geq|\\neq)\s*$")


def _math_constants_only(match: re.Match) -> str:
    """Keep the numbers of a math span that are values, not structural constants.

    Math holds no literal but exponents, subscripts and small structural constants:
    a single digit is a constant of the formula (``$4d^2$``, ``$t-1$``,
    ``$= 2 \\cdot L$``) unless it is the whole value a relation gives a symbol
    (``$d_k = 3$``; ``= 0`` and ``= 1`` stay constants, as in "the weights sum to 1"). Every number of two digits or more is a
    value.
    """
    span = match.group(0)
    body = list(re.sub(r"[^\n]", " ", span))
    for number in NUMBER.finditer(span):
        digits = re.sub(r"\D", "", number.group(0))
        valued = (
            RELATION.search(span[: number.start()])
            and ALONE.match(span, number.end())
            and digits not in ("0", "1")
        )
        if len(digits) > 1 or valued:
            body[number.start() : number.end()] = number.group(0)
    return "".join(body)


def _attribute_values(match: re.Match) -> str:
    """Blank an HTML tag but the values of its attributes that may hold a value of
    the page (all but ``NOT_VALUES``): those are prose."""
    tag = match.group(0)
    body = list(re.sub(r"[^\n]", " ", tag))
    for attribute in ATTRIBUTE.finditer(tag):
        name = attribute.group(1).lower()
        group = next(g for g in (2, 3, 4) if attribute.group(g) is not None)
        value = attribute.group(group)
        if name in NOT_VALUES or (name in BOUNDS and value in ("0", "1", "any")):
            continue
        body[attribute.start(group) : attribute.end(group)] = value
    return "".join(body)


def _fence_info(info: str) -> str:
    """The language of a fence: ``python`` from ``python exec="on"`` or ``{.python}``."""
    words = info.strip().strip("{}").split()
    return words[0].lstrip(".").lower() if words else ""


def split_fences(markdown: str) -> tuple[list[str], list[tuple[int, str]]]:
    """The page's lines with fenced blocks blanked, and the lines of output blocks.

    Output blocks are fences marked as text or output (``OUTPUT_FENCES``); their lines
    come back as ``(line number, line)``.

    ```python
    from mha_site.drift import split_fences

    lines, output = split_fences("prose\n```text\n0.5\n```\n```python\nx = 1\n```\n")
    assert lines == ["prose", "", "", "", "", "", ""] and output == [(3, "0.5")]
    ```
    """
    lines: list[str] = []
    output: list[tuple[int, str]] = []
    fence, is_output = None, False
    for line_no, line in enumerate(markdown.splitlines(), start=1):
        opening = FENCE.match(line)
        if fence is None and opening:
            marks = opening.group(1)
            fence, is_output = (
                marks[0] * len(marks),
                _fence_info(opening.group(2)) in OUTPUT_FENCES,
            )
            lines.append("")
        elif fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = None
            elif is_output:
                output.append((line_no, line))
            lines.append("")
        else:
            lines.append(line)
    return lines, output


def prose(markdown: str) -> str:
    """The page with everything that is not prose blanked out, line numbers kept.

    ```python
    from mha_site.drift import prose

    assert prose("a `0.5` b {{ x }}\\n```\\n1\\n```").split() == ["a", "b"]
    ```
    """
    text = "\n".join(split_fences(markdown)[0])
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        text = re.sub(r"[^\n]", " ", text[: end + 4]) + text[end + 4 :]
    for pattern in (BLOCKS, INLINE_CODE, LINK_TARGET, ATTR_LIST, ARXIV):
        text = pattern.sub(_blank, text)
    text = TAG.sub(_attribute_values, text)
    text = MATH.sub(_math_constants_only, text)
    return LIST_MARKER.sub(
        lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))), text
    )


def _numbers_in_line(line: str) -> list[str]:
    """The numbers of one line of prose: scientific, with a unit glued, plain."""
    if not MAY_HOLD_A_NUMBER.search(line):
        return []  # most lines: one search instead of every pattern
    line = CITED_PLACE.sub(_blank, line)
    found = []
    for pattern in (
        NUMBER_WORDS,
        FRACTION_WORDS,
        FRACTIONS,
        SCIENTIFIC,
        WITH_UNIT,
        THOUSANDS,
        DECIMAL_SIZE,
    ):
        for match in pattern.finditer(line):
            if not re.search(r"\w$", line[: match.start()]):
                found.append((match.start(), match.group(0)))
        line = pattern.sub(_blank, line)
    for match in NUMBER.finditer(line):
        if not re.search(r"\w$", line[: match.start()]):  # GPT-2, Llama-2: a name
            found.append((match.start(), match.group(0)))
    return [text for _, text in sorted(found)]


def _page_module(page: str) -> str:
    return "mha.pages." + Path(page).stem.replace("-", "_")


def _prose_fix(page: str) -> str:
    if page.endswith(".py"):  # a notebook: its code cells compute, its prose does not
        return (
            "a notebook's Markdown cell: print the value from a code cell (computed "
            "with mha), or allowlist it with a reason "
            f"({ALLOWLIST.name}: text, a fragment of its sentence, reason)"
        )
    return (
        f"compute it in {_page_module(page)} and print it with {{{{ }}}}, or allowlist "
        f"it with a reason ({ALLOWLIST.name}: text, a fragment of its sentence, reason)"
    )


def _call_fix(page: str) -> str:
    return (
        f"a literal in a template ({{{{ }}}} or {{% %}}): name it in "
        f"{_page_module(page)} (a value or a function without the argument) and print "
        "that"
    )


OUTPUT_FIX = (
    "output typed into a text block: print it from a block the build runs "
    '(```python exec="on" result="text"), or allowlist it with a reason'
)
COMMENT_FIX = (
    "a number in a comment of a code block that its code does not type: print the "
    "value from the block (print(...)), or say it without the number"
)


def call_literals(markdown: str) -> list[tuple[int, str]]:
    """``(line, literal)`` for every literal value inside ``{{ }}`` and ``{% %}``.

    Any number (an argument, a filter's input, a ``set``, a comparison) and any
    number in a string literal (``{{ "76.8%" }}``, an alt text) is typed by hand. A
    subscript (``rows[3]``) and the digits of a formatting filter (``dec(1)``) are
    not values of the page, so they are allowed.

    ```python
    from mha_site.drift import call_literals

    page = "{{ acc.param_count(bert.d_model, 1) }}\\n{{ rows[3].d_k | dec(1) }}\\n"
    assert call_literals(page) == [(1, "1")]
    assert call_literals('{% set w = 0.45 %}{{ "76.8%" }}') == [(1, "0.45"), (1, "76.8%")]
    ```
    """
    tree = jinja2.Environment().parse(markdown)
    found: list[tuple[int, str]] = []
    _constants(tree, found)
    return sorted(found, key=lambda item: item[0])  # by line, in source order


def _constants(node: nodes.Node, found: list[tuple[int, str]]) -> None:
    """The literal values under ``node``, but subscripts and formatting digits."""
    if isinstance(node, nodes.Const):
        value = node.value
        if isinstance(value, int | float) and not isinstance(value, bool):
            found.append((node.lineno, repr(value)))
        elif isinstance(value, str):
            found += [(node.lineno, text) for text in _numbers_in_line(value)]
        return
    if isinstance(node, nodes.Getitem):
        _constants(node.node, found)  # rows[3]: an index, not a value
        return
    if isinstance(node, nodes.Filter) and node.name in FORMAT_FILTERS:
        if node.node is not None:
            _constants(node.node, found)  # dec(1): how to write it, not a value
        return
    for child in node.iter_child_nodes():
        _constants(child, found)


CODE_NUMBER = re.compile(r"(?<![\w.])\d[\d_,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")
COMMENT = re.compile(r"(?<![\w\"'])#(?!!)\s?(.*)$")


def _plain(number: str) -> str:
    """``4,096``, ``4_096`` and ``4096.0`` alike, to compare a comment with code."""
    text = re.sub(r"[,_%]", "", number)
    try:
        return repr(float(text))
    except ValueError:
        return text


def comment_numbers(code: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """``(line, number)`` of each value in a code block's comments that its code
    does not type: a comment may repeat the block's inputs and name shapes and counts
    (integers: ``# (8 tokens, 64)``), not state its results (a decimal, a percentage,
    a number with a unit or in words).

    ```python
    from mha_site.drift import comment_numbers

    block = [(1, "x = np.ones(4)  # d_model = 4"), (2, "y = f(x)  # weight 0.768")]
    assert comment_numbers(block) == [(2, "0.768")]
    ```
    """
    typed, comments = set(), []
    for line_no, line in code:
        comment = COMMENT.search(line)
        statement = line[: comment.start()] if comment else line
        typed |= {_plain(n) for n in CODE_NUMBER.findall(statement)}
        if comment:
            comments.append((line_no, comment.group(1)))
    return [
        (line_no, number)
        for line_no, text in comments
        for number in _numbers_in_line(text)
        if _plain(number) not in typed
        and not re.fullmatch(r"\d+", number)
        and not NUMBER_WORDS.fullmatch(number)  # a count in words, as in digits
    ]


def _code_blocks(markdown: str) -> list[list[tuple[int, str]]]:
    """The Python blocks of a page (fenced ``python``/``py``), as ``(line, text)``."""
    blocks: list[list[tuple[int, str]]] = []
    fence, current = None, None
    for line_no, line in enumerate(markdown.splitlines(), start=1):
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)[0] * len(opening.group(1))
            is_python = _fence_info(opening.group(2)) in ("python", "py", "pycon")
            current = [] if is_python else None
        elif fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                if current is not None:
                    blocks.append(current)
                fence, current = None, None
            elif current is not None:
                current.append((line_no, line))
    return blocks


def _notebook_code(source: str) -> list[list[tuple[int, str]]]:
    """The code cells of a jupytext percent-format notebook, as ``(line, text)``."""
    cells: list[list[tuple[int, str]]] = []
    for line_no, line in enumerate(source.splitlines(), start=1):
        if line.startswith("# %%"):
            cells.append([] if "[markdown]" not in line else None)
        elif cells and cells[-1] is not None:
            cells[-1].append((line_no, line))
    return [cell for cell in cells if cell]


def printed_literals(code: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """``(line, number)`` of each number typed into a string a code cell prints.

    ```python
    from mha_site.drift import printed_literals

    cell = [(3, 'w = weights[0]'), (4, 'print("Kohli gets 0.768", f"{w:.3f}")')]
    assert printed_literals(cell) == [(4, "0.768")]
    ```
    """
    source = "\n".join(text for _, text in code)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    first = code[0][0] if code else 1
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "print"):
            continue
        for argument in [*node.args, *(k.value for k in node.keywords)]:
            for string in _strings(argument):
                found += [
                    (first + string.lineno - 1, text)
                    for text in _numbers_in_line(string.value)
                ]
    return found


def _strings(node: ast.AST) -> list[ast.Constant]:
    """The string literals of an expression, f-strings' text but not their specs."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, ast.FormattedValue):
        return _strings(node.value)  # its format_spec (".3f") is not text
    found = []
    for child in ast.iter_child_nodes(node):
        found += _strings(child)
    return found


def notebook_markdown(source: str) -> str:
    """The Markdown cells of a jupytext percent-format notebook, as Markdown.

    ```python
    from mha_site.drift import notebook_markdown

    text = notebook_markdown("# %% [markdown]\\n# Weight 0.5.\\n# %%\\nx = 1\\n")
    assert text.split("\\n") == ["", "Weight 0.5.", "", ""]  # line numbers kept
    ```
    """
    lines, in_markdown = [], False
    for line in source.splitlines():
        if line.startswith("# %%"):
            in_markdown = "[markdown]" in line
            lines.append("")
        elif in_markdown:
            lines.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
        else:
            lines.append("")
    return "\n".join(lines)


FACT_SENTENCE = re.compile(
    r"""(\{%-?\s*call\s+fact\([^)]*\)\s*-?%\})(.*?)(?=\{%-?\s*endcall)""", re.S
)


def _fact_counts_blanked(markdown: str) -> str:
    """Counts in words inside a fact's sentence blanked: the fact checks them."""
    return FACT_SENTENCE.sub(
        lambda m: (
            m.group(1)
            + FRACTION_WORDS.sub(_blank, NUMBER_WORDS.sub(_blank, m.group(2)))
        ),
        markdown,
    )


def numbers(markdown: str, page: str = "page.md") -> list[Finding]:
    """Every hand-typed number of a page's Markdown, with its line and its fix.

    ```python
    from mha_site.drift import numbers

    found = numbers("{{ acc.param_count(4, 1) }} and 12 GB\n", "cricket.md")
    assert [f.text for f in found] == ["12", "4", "1"]
    assert all(f.line == 1 for f in found) and "mha.pages.cricket" in found[0].fix
    ```
    """
    found = []
    text = _fact_counts_blanked(markdown) if "fact(" in markdown else markdown
    for line_no, line in enumerate(prose(text).splitlines(), start=1):
        found += [
            Finding(page, line_no, t, _prose_fix(page)) for t in _numbers_in_line(line)
        ]
    for line_no, line in split_fences(markdown)[1]:
        found += [Finding(page, line_no, t, OUTPUT_FIX) for t in _numbers_in_line(line)]
    for block in _code_blocks(markdown):
        found += [Finding(page, n, t, COMMENT_FIX) for n, t in comment_numbers(block)]
    try:
        literals = call_literals(markdown)
    except jinja2.TemplateSyntaxError as error:
        return [
            *found,
            Finding(page, error.lineno, "{{ }}", f"not a template: {error}"),
        ]
    found += [Finding(page, line, t, _call_fix(page)) for line, t in literals]
    return sorted(found, key=lambda f: f.line)


def load_allowlist(path: Path = ALLOWLIST) -> list[Entry]:
    """The allowlist's entries; each needs its page, text, fragment and reason.

    ```python
    from mha_site.drift import load_allowlist

    assert all(entry.text in entry.fragment or entry.reason for entry in load_allowlist())
    ```
    """
    entries = []
    for raw in tomllib.loads(Path(path).read_text(encoding="utf-8")).get("allow", []):
        if "fragments" in raw:  # several fragments of one page with one reason
            for key in ("page", "fragments", "reason"):
                if not raw.get(key) or not str(raw[key]).strip():
                    raise ValueError(f"allowlist entry {raw} has no {key}")
            for fragment in raw["fragments"]:
                texts = list(dict.fromkeys(_numbers_in_line(fragment)))
                if not texts:
                    raise ValueError(f"allowlist fragment {fragment!r} holds no number")
                entries += [
                    Entry(raw["page"], t, fragment, raw["reason"]) for t in texts
                ]
            continue
        for key in ("page", "text", "fragment", "reason"):
            if not str(raw.get(key, "")).strip():
                raise ValueError(f"allowlist entry {raw} has no {key}")
        entries.append(Entry(raw["page"], raw["text"], raw["fragment"], raw["reason"]))
    return entries


@functools.cache
def _patterns(fragment: str, text: str) -> tuple[re.Pattern, re.Pattern]:
    """An entry's fragment (any whitespace between its words) and its number."""
    words = re.compile(r"\s+".join(map(re.escape, fragment.split())))
    return words, re.compile(rf"(?<![\w.,]){re.escape(text)}(?![\w])")


def _excuse(markdown: str, entry: Entry) -> tuple[list[int], bool]:
    """The line of each ``entry.text`` standing inside an occurrence of its fragment
    (whitespace-insensitive, across lines): the entry excuses that exact number
    there, not the rest of the line; and whether the fragment occurs at all."""
    fragment, number = _patterns(entry.fragment, entry.text)
    lines, occurs = [], False
    for match in fragment.finditer(markdown):
        occurs = True
        for inside in number.finditer(match.group(0)):
            lines.append(markdown.count("\n", 0, match.start() + inside.start()) + 1)
    return lines, occurs


def check(markdown: str, page: str, entries: list[Entry]) -> list[Finding]:
    """The findings of one page that its allowlist entries do not excuse.

    An entry excuses its number inside its fragment only: another number on the same
    line is still a finding.

    ```python
    from mha_site.drift import Entry, check

    page = "Vaswani et al. (2017) used 0.1 dropout.\\n"
    year = Entry("a.md", "2017", "Vaswani et al. (2017)", "the year of a citation")
    assert [f.text for f in check(page, "a.md", [year])] == ["0.1"]
    ```
    """
    own = [entry for entry in entries if entry.page == page]
    kept = numbers(markdown, page)
    for entry in own:
        lines, occurs = _excuse(markdown, entry)
        excused = [
            i for i, f in enumerate(kept) if f.text == entry.text and f.line in lines
        ][: len(lines)]  # one finding per number blanked, not the rest of its line
        kept = [f for i, f in enumerate(kept) if i not in excused]
        if not excused:
            why = (
                "its fragment no longer occurs"
                if not occurs
                else "it excuses no number"
            )
            kept.append(
                Finding(
                    page,
                    0,
                    entry.text,
                    f"allowlist entry (fragment {entry.fragment!r}): {why} on the page; "
                    f"remove or update it in {ALLOWLIST.name}",
                )
            )
    return kept


def page_text(path: Path) -> str:
    """The Markdown of a page: the file, or a notebook's Markdown cells.

    ```python
    from pathlib import Path
    from mha_site.drift import page_text

    assert "\n# What it costs" in page_text(Path("docs/cost.md"))
    ```
    """
    text = path.read_text(encoding="utf-8")
    return notebook_markdown(text) if path.suffix == ".py" else text


NOTEBOOK_FIX = (
    "a number typed into a string a notebook cell prints: print the computed value "
    "(an f-string of the variable), not a literal"
)


def page_findings(path: Path, page: str, entries: list[Entry]) -> list[Finding]:
    """The findings of one page file: its prose and templates; for a notebook, also
    the strings its code cells print and the numbers of their comments.

    ```python
    import tempfile
    from pathlib import Path
    from mha_site.drift import page_findings

    with tempfile.TemporaryDirectory() as folder:
        notebook = Path(folder) / "play.py"
        notebook.write_text("# %%\\nprint('weight 0.768')\\n")
        found = page_findings(notebook, "notebooks/play.py", [])
        assert [(f.line, f.text) for f in found] == [(2, "0.768")]
    ```
    """
    findings = check(page_text(path), page, entries)
    if path.suffix == ".py":
        for cell in _notebook_code(path.read_text(encoding="utf-8")):
            findings += [
                Finding(page, n, t, NOTEBOOK_FIX) for n, t in printed_literals(cell)
            ]
            findings += [
                Finding(page, n, t, COMMENT_FIX) for n, t in comment_numbers(cell)
            ]
    return findings


def scan(docs: Path, entries: list[Entry]) -> list[Finding]:
    """The findings of every page under ``docs`` (Markdown pages and notebooks).

    ```python
    import tempfile
    from pathlib import Path
    from mha_site.drift import scan

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "a.md").write_text("It costs 3ms.\\n")
        assert [(f.page, f.line, f.text) for f in scan(Path(folder), [])] == [
            ("a.md", 1, "3ms")
        ]
    ```
    """
    pages = sorted(docs.rglob("*.md")) + sorted((docs / "notebooks").glob("*.py"))
    findings = []
    for path in pages:
        findings += page_findings(path, path.relative_to(docs).as_posix(), entries)
    return findings


@dataclass(frozen=True)
class SourceFinding:
    """A hand-typed number outside docs/: a page module's figure text, a nav title,
    a docstring example's claimed output."""

    path: str  # relative to the repository
    line: int
    text: str
    fix: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text!r}: {self.fix}"


FIGURE_TEXT_FIX = (
    "a number typed into a figure's alt text or caption: build the text from the "
    "computed value (an f-string of it) in the page module"
)


def figure_texts(
    source: str, path: str, entries: list[Entry] = ()
) -> list[SourceFinding]:
    """Numbers typed into the string literals a page module passes to ``Figure`` as
    its alt text or caption (its third and fourth arguments, or ``alt=``/``caption=``),
    read as prose; a single-digit integer there is an index or a count of the drawing
    (numbered from 0, columns 2 and 3, a 0 to 1 colour scale, "two panels"), not a
    value: decimals, percentages, larger numbers, units, larger counts in words and
    fractions in words are.

    ```python
    from mha_site.drift import figure_texts

    code = 'Figure("c.bars", (w,), f"head A puts {w:.1%} on Kohli", "90% on column 2")'
    assert [(f.line, f.text) for f in figure_texts(code, "p.py")] == [(1, "90%")]
    ```
    """
    own = [entry for entry in entries if entry.page == path]
    found = []
    for node in _figure_calls(source):
        texts = node.args[2:4] + [k.value for k in node.keywords if k.arg in TEXTS]
        for text in texts:
            for string in _strings(text):
                numbers = _numbers_in_line(string.value)
                if not numbers:
                    continue
                excused = [e.text for e in own if _excuse(string.value, e)[0]]
                for number in numbers:
                    if re.fullmatch(rf"\d|{DRAWING_COUNT}", number, re.I):
                        continue
                    if number in excused:
                        excused.remove(number)
                        continue
                    found.append(
                        SourceFinding(path, string.lineno, number, FIGURE_TEXT_FIX)
                    )
    return found


TEXTS = ("alt", "caption")
# A count of the drawing (panels, curves, bars), in digits or in words: two to nine.
DRAWING_COUNT = "two|three|four|five|six|seven|eight|nine"
FIGURE_CALL = re.compile(r"(?<![\w.])Figure\(")


def _figure_calls(source: str) -> list[ast.Call]:
    """The ``Figure(...)`` calls of a module, each parsed alone (parsing the whole
    module would cost more than the rest of the guard), line numbers kept."""
    calls = []
    for match in FIGURE_CALL.finditer(source):
        end = _closing(source, match.end())
        if end is None:
            continue
        try:
            tree = ast.parse(source[match.start() : end], mode="eval")
        except SyntaxError:
            continue
        ast.increment_lineno(tree, source.count("\n", 0, match.start()))
        if isinstance(tree.body, ast.Call):
            calls.append(tree.body)
    return calls


def _closing(source: str, start: int) -> int | None:
    """The index after the parenthesis that closes the one before ``start``,
    skipping string literals and comments."""
    depth, i = 1, start
    while i < len(source):
        char = source[i]
        if char in "\"'":
            quote = source[i : i + 3] if source[i : i + 3] in ('"""', "'''") else char
            i += len(quote)
            while i < len(source) and not source.startswith(quote, i):
                i += 2 if source[i] == "\\" else 1
            i += len(quote)
            continue
        if char == "#":
            i = source.find("\n", i)
            if i < 0:
                return None
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _name(node: ast.AST) -> str:
    return getattr(node, "id", "") or getattr(node, "attr", "")


NAV_FIX = (
    "a number typed into a nav title in mkdocs.yml: say it without the number (the "
    "page prints its values)"
)


def nav_titles(
    config: str, path: str = "mkdocs.yml", entries: list[Entry] = ()
) -> list[SourceFinding]:
    """Numbers typed into the titles of mkdocs.yml's ``nav``; an allowlist entry whose
    ``page`` is ``mkdocs.yml`` excuses its number inside its fragment.

    ```python
    from mha_site.drift import nav_titles

    config = "site_name: x\\nnav:\\n  - Home: index.md\\n  - Eight heads, 0.9: a.md\\n"
    found = nav_titles(config)
    assert [(f.line, f.text) for f in found] == [(4, "Eight"), (4, "0.9")]
    ```
    """
    found, in_nav = [], False
    for line_no, line in enumerate(config.splitlines(), start=1):
        if re.match(r"[^\s-]", line):  # a top-level key (a list may sit at column 0)
            in_nav = line.startswith("nav:")
            continue
        title = re.match(r"\s*-\s*(?:\"([^\"]*)\"|'([^']*)'|([^:#]+)):", line)
        if in_nav and title:
            text = next(group for group in title.groups() if group is not None)
            excused = [
                e.text for e in entries if e.page == path and _excuse(text, e)[0]
            ]
            for number in _numbers_in_line(text):
                if number in excused:
                    excused.remove(number)
                else:
                    found.append(SourceFinding(path, line_no, number, NAV_FIX))
    return found


DOCSTRING_FIX = (
    "a docstring example states its output in a comment (# prints / # ->), which no "
    "test checks: assert the value instead (assert f(x) == ...)"
)
CLAIMED_OUTPUT = re.compile(r"#\s*(?:prints?\b|->|→|==>|outputs?:|returns?:)")


def docstring_outputs(source: str, path: str) -> list[SourceFinding]:
    """Output claimed by a comment in a docstring (the API reference publishes it),
    ``# prints 0.768`` or ``# -> 0.768``: an example asserts, it does not claim.

    ```python
    from mha_site.drift import docstring_outputs

    code = "def f():\\n    '''Doc.\\n\\n    f()  # prints 0.768\\n    '''\\n"
    assert [(f.line, f.text) for f in docstring_outputs(code, "m.py")] == [
        (4, "# prints")
    ]
    ```
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef):
            continue
        body = node.body
        first = body[0] if body else None
        if not (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            continue
        for offset, line in enumerate(first.value.value.splitlines()):
            claim = CLAIMED_OUTPUT.search(line)
            if claim:
                text = " ".join(claim.group(0).split())
                found.append(
                    SourceFinding(path, first.lineno + offset, text, DOCSTRING_FIX)
                )
    return found


PROSE_FIX = (
    "a value typed into a docstring the API reference publishes: say it without the "
    "number, show it in the example (assert it), or allowlist it with a reason "
    "(page = this file's path)"
)


# The year of a citation ("Ainslie et al. (2023)", "Kobayashi et al., 2020",
# "Milakov & Gimelshein 2018"): a name of the source, not a value.
CITATION_YEAR = re.compile(
    r"(?:\bet\s+al\.|\b[A-Z][a-z]+),?\s*\(?((?:19|20)\d\d)(?![\w.,]\d)"
)


def _blank_year(match: re.Match) -> str:
    """A citation with its year blanked (the name kept: it may hold a number)."""
    text, start = match.group(0), match.start(1) - match.start()
    return (
        text[:start] + " " * len(match.group(1)) + text[start + len(match.group(1)) :]
    )


# A single digit written as a formula's constant, an operator beside it
# (``4·d_model²``, ``n²·d_model·2``, ``x/2``, ``√2``, ``2 x batch x h_kv``): the formula's
# structure, as a single digit in math is.
FORMULA_CONSTANT = re.compile(
    r"(?<=[·×*/√^])\d(?![\d.,])|(?<![\w.,])\d(?=\s?[·×*/^²³]|\s[x×]\s\w)"
)


def _published(source: str) -> list[tuple[int, str]]:
    """``(first line, text)`` of the docstrings mkdocstrings renders: the module's,
    its public classes' and functions', public methods' (``__init__``'s too: merged
    into its class) and the public attributes' (a string after an assignment)."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []

    def docstring(node: ast.AST) -> None:
        body = getattr(node, "body", [])
        first = body[0] if body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            found.append((first.lineno, first.value.value))

    def members(body: list[ast.stmt], methods: bool) -> None:
        for before, node in zip([None, *body], body, strict=False):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                public = not node.name.startswith("_") or node.name == "__init__"
                if public and (methods or not node.name.startswith("__")):
                    docstring(node)
                    if isinstance(node, ast.ClassDef):
                        members(node.body, True)
            elif (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
                and isinstance(before, ast.Assign | ast.AnnAssign)
                and not _name(
                    getattr(before, "target", None) or before.targets[0]
                ).startswith("_")
            ):
                found.append((node.lineno, node.value.value))

    docstring(tree)
    members(tree.body, False)
    return found


def docstring_numbers(
    source: str, path: str, entries: list[Entry] = ()
) -> list[SourceFinding]:
    """Numbers typed into the prose of the docstrings the API reference publishes
    (a module's, its public classes', functions' and methods'): integers, decimals,
    percentages, numbers with a unit, counts and fractions in words, as in a page's
    prose. Scientific notation there states a tolerance or a magnitude (``1e-5``), and
    single digits in math are constants, as on a page. Examples (code fences), inline
    code and private names' docstrings (not rendered) are not prose. An allowlist
    entry whose ``page`` is ``path`` excuses its number inside its fragment.

    ```python
    from mha_site.drift import Entry, docstring_numbers

    doc = "Split into 3 heads, 76.8% on Kohli.\\n\\n    `x = 0.5`\\n    "
    code = "def f():\\n    " + '"' * 3 + doc + '"' * 3 + "\\n"
    found = docstring_numbers(code, "m.py")
    assert [(f.line, f.text) for f in found] == [(2, "3"), (2, "76.8%")]
    why = Entry("m.py", "76.8%", "76.8% on", "a worked example's input")
    assert [f.text for f in docstring_numbers(code, "m.py", [why])] == ["3"]
    private = "def _f():\\n    " + '"' * 3 + "Split into 3 heads." + '"' * 3 + "\\n"
    assert docstring_numbers(private, "m.py") == []
    ```
    """
    if not any(_prose_numbers(m.group(1)) for m in TRIPLE_QUOTED.finditer(source)):
        return []  # the common case: no module parsed
    own = [entry for entry in entries if entry.page == path]
    found = []
    for first, text in _published(source):
        excused: dict[int, list[str]] = {}
        numbers = _prose_numbers(text)
        for entry in own if numbers else ():
            for line in _excuse(text, entry)[0]:
                excused.setdefault(line, []).append(entry.text)
        for line_no, number in numbers:
            if number in excused.get(line_no, []):
                excused[line_no].remove(number)
                continue
            found.append(SourceFinding(path, first + line_no - 1, number, PROSE_FIX))
    return found


TRIPLE_QUOTED = re.compile(r'(?<![\w\'"])(?:[rRuU])?"""(.*?)"""', re.S)


def _prose_numbers(text: str) -> list[tuple[int, str]]:
    """``(line, number)`` of the numbers in a docstring's prose: not its examples,
    inline code, citations' years, formulas' constants, tolerances, 0 or 1."""
    if not MAY_HOLD_A_NUMBER.search(text):
        return []
    body = "\n".join(split_fences(text)[0])
    body = CITATION_YEAR.sub(_blank_year, INLINE_CODE.sub(_blank, body))
    body = FORMULA_CONSTANT.sub(_blank, body)
    body = MATH.sub(_math_constants_only, body)
    return [
        (line_no, number)
        for line_no, line in enumerate(body.splitlines(), start=1)
        for number in _numbers_in_line(line)
        if not SCIENTIFIC.match(number) and number not in ("0", "1")
    ]


# The page and figure modules are the site's own code, explained by their pages, not
# the library a reader imports: issue 42 takes them out of the API reference.
SITE_OWN = frozenset({("src", "mha", "pages"), ("src", "mha", "figures")})
REFERENCE_ENTRY = re.compile(r"^:::\s*([\w.]+)[ \t]*\n((?:[ \t]+.*\n|\n)*)", re.M)


def published_modules(root: Path) -> list[Path]:
    """The modules of ``src/`` whose docstrings the API reference renders: each
    ``::: name`` of ``docs/reference/*.md``, with its submodules when the entry sets
    ``show_submodules: true``; none of them private (``_name``, not rendered).

    ```python
    from pathlib import Path
    from mha_site.drift import published_modules

    names = [p.as_posix() for p in published_modules(Path("."))]
    assert "src/mha/attention.py" in names
    ```
    """
    modules: set[Path] = set()
    for page in sorted((root / "docs" / "reference").glob("*.md")):
        for entry in REFERENCE_ENTRY.finditer(page.read_text(encoding="utf-8") + "\n"):
            base = root / "src" / Path(*entry.group(1).split("."))
            deep = re.search(r"show_submodules:\s*true", entry.group(2))
            if base.with_suffix(".py").is_file():
                modules.add(base.with_suffix(".py"))
            elif (base / "__init__.py").is_file():
                modules.update(base.rglob("*.py") if deep else [base / "__init__.py"])
    return sorted(
        path.relative_to(root)
        for path in modules
        if not any(
            part.startswith("_") and part != "__init__.py"
            for part in path.relative_to(root).parts
        )
        and path.relative_to(root).parts[:3] not in SITE_OWN
    )


def sources(root: Path, entries: list[Entry] = ()) -> list[SourceFinding]:
    """The findings outside docs/: page modules' figure texts, every module's
    docstring examples and the values in its docstrings' prose (but ``mha.data``'s,
    which hold the cited sources' own numbers), and the nav titles of mkdocs.yml.

    ```python
    from pathlib import Path
    from mha_site.drift import load_allowlist, sources

    assert sources(Path("."), load_allowlist()) == []
    ```
    """
    found = []
    published = set(published_modules(root))
    for path in sorted((root / "src" / "mha").rglob("*.py")):
        name = path.relative_to(root).as_posix()
        source = path.read_text(encoding="utf-8")
        if "/pages/" in name and "Figure(" in source:
            found += figure_texts(source, name, entries)
        if CLAIMED_OUTPUT.search(source):  # parse only a module that may claim one
            found += docstring_outputs(source, name)
        if "/data/" not in name and Path(name) in published:
            found += docstring_numbers(source, name, entries)
    for entry in entries:
        path = root / entry.page
        if entry.page.startswith(("src/", "mkdocs.yml")) and not (
            path.is_file() and _excuse(path.read_text(encoding="utf-8"), entry)[0]
        ):
            why = (
                f"its fragment {entry.fragment!r} with {entry.text!r} no longer occurs"
            )
            found.append(
                SourceFinding(entry.page, 0, entry.text, f"allowlist entry: {why}")
            )
    config = root / "mkdocs.yml"
    if config.exists():
        found += nav_titles(config.read_text(encoding="utf-8"), entries=entries)
    return found


HTML_LINK = re.compile(
    r"<(?:a|img|source)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.I
)


def html_links(markdown: str) -> list[tuple[int, str]]:
    """``(line, target)`` of the relative links and images written in raw HTML
    (``<a href>``, ``<img src>``) outside code, for the build to check as it checks
    Markdown links.

    ```python
    from mha_site.drift import html_links

    page = '<a href="cost.md#x">cost</a>\\n`<img src="no.png">`\\n<a href="https://a.b">\\n'
    assert html_links(page) == [(1, "cost.md#x")]
    ```
    """
    lines = split_fences(markdown)[0]
    found = []
    for line_no, line in enumerate(lines, start=1):
        line = INLINE_CODE.sub(_blank, line)
        for match in HTML_LINK.finditer(line):
            target = match.group(1)
            if not re.match(r"[a-z][a-z0-9+.-]*:|/|\{\{", target, re.I):
                found.append((line_no, target))
    return found


def resolve(src_uri: str, target: str) -> tuple[list[str], str]:
    """The docs files a raw HTML ``target`` of page ``src_uri`` may name, and its
    anchor. mkdocs does not rewrite raw HTML, so the browser reads ``target`` from the
    page's built URL (``cricket.md`` is served at ``cricket/``): ``../cost/`` is the
    page ``cost.md``, ``../assets/a.png`` the file ``assets/a.png``; a ``.md`` target
    names no file of the built site (none is returned).

    ```python
    from mha_site.drift import resolve

    assert resolve("cricket.md", "../cost/#x") == (["cost.md", "cost/index.md"], "x")
    assert resolve("index.md", "cost/") == (["cost.md", "cost/index.md"], "")
    assert resolve("cricket.md", "../assets/a.png") == (["assets/a.png"], "")
    assert resolve("cricket.md", "#top") == (["cricket.md"], "top")
    assert resolve("cricket.md", "cost.md") == ([], "")
    ```
    """
    path, _, anchor = target.partition("#")
    if not path:
        return [src_uri], anchor
    stem = posixpath.splitext(src_uri)[0]
    here = posixpath.dirname(stem) if posixpath.basename(stem) == "index" else stem
    joined = posixpath.normpath(posixpath.join(here, path))
    if joined.startswith("..") or path.endswith(".md"):
        return [], anchor
    if path.endswith("/") or not posixpath.splitext(path)[1]:
        if joined in ("", "."):
            return ["index.md"], anchor
        return [joined + ".md", joined + "/index.md"], anchor
    return [joined], anchor


def report(findings: list[Finding]) -> str:
    """The build's error message: one line per finding, file, line and fix.

    ```python
    from mha_site.drift import numbers, report

    text = report(numbers("It is 10x faster.\n", "cost.md"))
    assert text.splitlines()[1].startswith("  docs/cost.md:1: '10x': compute it in")
    ```
    """
    return "drift guard: numbers typed by hand\n" + "\n".join(
        f"  {f}" for f in findings
    )
