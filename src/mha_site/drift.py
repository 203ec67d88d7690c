"""The drift guard: find numbers typed by hand into a page, for the build to refuse.

The build runs it on every page it builds (``docs/_glue/drift.py``, an mkdocs hook):
a finding fails ``make build`` and a ``make serve`` rebuild, naming the file, the
line and the fix. Three kinds of hand-typed number:

- **in prose**, tables and admonitions: a run of digits with an optional sign,
  decimal point, thousands commas or percent sign; glued to a unit (``10x``,
  ``3ms``, ``12GB``; ``12 GB`` is the number ``12`` anyway); a decimal count of
  millions or billions (``7.24B``; ``7B`` and ``70B`` name models); in scientific
  notation (``1e-4``). A multi-digit or decimal number in math counts; a single-digit
  constant of a formula (``$4d^2$``) does not;
- **passed to a call** inside ``{{ }}`` or ``{% %}``: ``param_count(4, 1)``. A
  subscript (``rows[3]``) and the digits of a formatting filter (``dec(1)``) are
  not values of the page, so they are allowed;
- **in a text output block** (a fence marked ``text``, ``console``, ``output``,
  ``pycon`` or nothing): output typed by hand instead of printed by a block the build
  runs (markdown-exec, ``result="text"``).

Not numbers: code fences of a language, inline code, HTML comments and tags, link
targets, the marker of an ordered list, arXiv ids, and identifiers with digits in
them (``GPT-2``, ``Llama-2 70B``, ``W_O``, ``47th``: a digit run glued to a letter
that is not a unit, or a hyphen glued to a word before it).

The few numbers that must be typed (a year, a version, an example's input data) are
on the allowlist (``drift_allowlist.toml`` beside this module): the exact string, a
fragment of the sentence it stands in (it excuses the number on the lines that
fragment covers, nowhere else) and the reason. An entry whose fragment no longer
occurs on its page, or that excuses nothing, is a finding too.

```python
from mha_site.drift import numbers

found = numbers("The cache takes 12 GB, 10x less.\\n\\nA rate of 1e-4 here.\\n")
assert [(f.line, f.text) for f in found] == [(1, "12"), (1, "10x"), (3, "1e-4")]
assert numbers("GPT-2 and Llama-2 70B; `x = 0.5`; {{ w[0] | dec(3) }}\\n") == []
```
"""

from __future__ import annotations

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
ATTR_LIST = re.compile(r"\{\s*[:#.][^}]*\}")
LIST_MARKER = re.compile(r"^(\s*)\d+[.)](?=\s)", re.M)
ARXIV = re.compile(r"arXiv[:\s]+\d{4}\.\d{4,5}(v\d+)?", re.I)
_DIGITS = r"\d+(?:,\d{3})*(?:\.\d+)?"
SCIENTIFIC = re.compile(r"[-+−]?(?<![\w.,])\d+(?:\.\d+)?[eE][-+−]?\d+(?![\w.])")
UNITS = r"x|×|ms|µs|us|ns|s|min|GB|MB|kB|KB|TB|GiB|MiB|KiB|px|pt|GHz|MHz|tok/s"
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


def _math_constants_only(match: re.Match) -> str:
    """Keep the numbers of a math span that are not single-digit constants."""
    found = [m.group(0) for m in NUMBER.finditer(match.group(0))]
    kept = [n for n in found if len(re.sub(r"\D", "", n)) > 1]  # $t-1$ is a constant
    body = re.sub(r"[^\n]", " ", match.group(0))
    return body[: len(body) - len(" ".join(kept))] + " ".join(kept) if kept else body


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
    for pattern in (BLOCKS, INLINE_CODE, LINK_TARGET, TAG, ATTR_LIST, ARXIV):
        text = pattern.sub(_blank, text)
    text = MATH.sub(_math_constants_only, text)
    return LIST_MARKER.sub(
        lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))), text
    )


def _numbers_in_line(line: str) -> list[str]:
    """The numbers of one line of prose: scientific, with a unit glued, plain."""
    found = []
    for pattern in (SCIENTIFIC, WITH_UNIT, DECIMAL_SIZE):
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
    return (
        f"compute it in {_page_module(page)} and print it with {{{{ }}}}, or allowlist "
        f"it with a reason ({ALLOWLIST.name}: text, a fragment of its sentence, reason)"
    )


def _call_fix(page: str) -> str:
    return (
        f"a literal passed to a call in a template: name it in {_page_module(page)} "
        "(a constant or a function without the argument) and call that"
    )


OUTPUT_FIX = (
    "output typed into a text block: print it from a block the build runs "
    '(```python exec="on" result="text"), or allowlist it with a reason'
)


def call_literals(markdown: str) -> list[tuple[int, str]]:
    """``(line, literal)`` for every number passed to a call inside ``{{ }}``/``{% %}``.

    ```python
    from mha_site.drift import call_literals

    page = "{{ acc.param_count(bert.d_model, 1) }}\\n{{ rows[3].d_k | dec(1) }}\\n"
    assert call_literals(page) == [(1, "1")]
    ```
    """
    tree = jinja2.Environment().parse(markdown)
    found: list[tuple[int, str]] = []
    for node in tree.find_all((nodes.Call, nodes.Filter)):
        if isinstance(node, nodes.Filter) and node.name in FORMAT_FILTERS:
            continue
        arguments = [*node.args, *(kw.value for kw in node.kwargs)]
        for extra in (node.dyn_args, node.dyn_kwargs):
            if extra is not None:
                arguments.append(extra)
        for argument in arguments:
            _constants(argument, found)
    return sorted(found, key=lambda item: item[0])  # by line, in source order


def _constants(node: nodes.Node, found: list[tuple[int, str]]) -> None:
    """Numeric literals in an argument, not in subscripts or in nested calls' arguments."""
    if isinstance(node, nodes.Const):
        if isinstance(node.value, int | float) and not isinstance(node.value, bool):
            found.append((node.lineno, repr(node.value)))
    elif isinstance(node, nodes.Call | nodes.Filter | nodes.Getitem):
        _constants(node.node, found)  # its own arguments are a call's (or a subscript)
    else:
        for child in node.iter_child_nodes():
            _constants(child, found)


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
    for line_no, line in enumerate(prose(markdown).splitlines(), start=1):
        found += [
            Finding(page, line_no, t, _prose_fix(page)) for t in _numbers_in_line(line)
        ]
    for line_no, line in split_fences(markdown)[1]:
        found += [Finding(page, line_no, t, OUTPUT_FIX) for t in _numbers_in_line(line)]
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
        for key in ("page", "text", "fragment", "reason"):
            if not str(raw.get(key, "")).strip():
                raise ValueError(f"allowlist entry {raw} has no {key}")
        entries.append(Entry(raw["page"], raw["text"], raw["fragment"], raw["reason"]))
    return entries


def _covered_lines(markdown: str, fragment: str) -> set[int]:
    """The lines covered by each occurrence of ``fragment`` (whitespace-insensitive)."""
    lines = markdown.splitlines()
    flat, starts = "", []
    for line in lines:
        starts.append(len(flat))
        flat += " ".join(line.split()) + " "
    wanted = " ".join(fragment.split())
    covered: set[int] = set()
    start = flat.find(wanted)
    while start >= 0:
        end = start + len(wanted)
        covered |= {
            i + 1
            for i, s in enumerate(starts)
            if s < end and s + len(lines[i]) + 1 > start
        }
        start = flat.find(wanted, start + 1)
    return covered


def check(markdown: str, page: str, entries: list[Entry]) -> list[Finding]:
    """The findings of one page that its allowlist entries do not excuse.

    ```python
    from mha_site.drift import Entry, check

    page = "Vaswani et al. (2017) used 0.1 dropout.\\n"
    year = Entry("a.md", "2017", "Vaswani et al. (2017)", "the year of a citation")
    assert [f.text for f in check(page, "a.md", [year])] == ["0.1"]
    ```
    """
    own = [entry for entry in entries if entry.page == page]
    covered = {entry: _covered_lines(markdown, entry.fragment) for entry in own}
    used: set[Entry] = set()
    kept = []
    for finding in numbers(markdown, page):
        excuse = next(
            (e for e in own if e.text == finding.text and finding.line in covered[e]),
            None,
        )
        if excuse is None:
            kept.append(finding)
        else:
            used.add(excuse)
    for entry in own:
        if entry not in used:
            why = (
                "its fragment no longer occurs"
                if not covered[entry]
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

    assert page_text(Path("docs/cost.md")).startswith("# ")
    ```
    """
    text = path.read_text(encoding="utf-8")
    return notebook_markdown(text) if path.suffix == ".py" else text


def scan(docs: Path, entries: list[Entry]) -> list[Finding]:
    """The findings of every page under ``docs`` (Markdown pages and notebooks).

    ```python
    import tempfile
    from pathlib import Path
    from mha_site.drift import scan

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "a.md").write_text("It costs 3ms.\n")
        assert [(f.page, f.line, f.text) for f in scan(Path(folder), [])] == [
            ("a.md", 1, "3ms")
        ]
    ```
    """
    pages = sorted(docs.rglob("*.md")) + sorted((docs / "notebooks").glob("*.py"))
    findings = []
    for path in pages:
        page = path.relative_to(docs).as_posix()
        findings += check(page_text(path), page, entries)
    return findings


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
