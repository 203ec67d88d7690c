"""The drift guard: find numbers typed by hand into the prose of a page.

A *number* is a run of digits, with an optional sign, decimal point, thousands commas
or percent sign, standing in prose, a table or an admonition. Not numbers:

- anything in a code fence, inline code, a macro (``{{ }}``, ``{% %}``, ``{# #}``), an
  HTML comment or tag, a link target;
- identifiers that contain digits: ``GPT-2``, ``Llama-2``, ``70B``, ``W_O``,
  ``47th`` (a digit run glued to a letter, or a hyphen glued to a word before it),
  and arXiv ids written ``arXiv 1706.03762``;
- the marker of an ordered list (``1. ``);
- single-digit integers inside math (``$4d^2$``, ``$\\sqrt{d_k}$``): formulas carry
  constants, not results. A multi-digit or decimal number in math is a number.

Everything else must come from a macro, or be on the allowlist with a reason.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
BLOCKS = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}|<!--.*?-->", re.S)
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$|\\\(.*?\\\)|\\\[.*?\\\]", re.S)
INLINE_CODE = re.compile(r"(`+).+?\1")
LINK_TARGET = re.compile(r"\]\([^)]*\)|\]\[[^\]]*\]|^\s*\[[^\]]+\]:.*$", re.M)
TAG = re.compile(r"<[^>\n]+>")
ATTR_LIST = re.compile(r"\{\s*[:#.][^}]*\}")
LIST_MARKER = re.compile(r"^(\s*)\d+[.)](?=\s)", re.M)
ARXIV = re.compile(r"arXiv[:\s]+\d{4}\.\d{4,5}(v\d+)?", re.I)
NUMBER = re.compile(r"[-+−]?(?<![\w.,])\d+(?:,\d{3})*(?:\.\d+)?%?(?![\w])")


@dataclass(frozen=True)
class Finding:
    """A hand-typed number: where it stands and what it is."""

    page: str
    line: int
    text: str


def _blank(match: re.Match) -> str:
    """Replace a match by spaces, keeping its newlines (so line numbers hold)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def _math_constants_only(match: re.Match) -> str:
    """Keep the numbers of a math span that are not single-digit constants."""
    kept = [m.group(0) for m in NUMBER.finditer(match.group(0)) if len(m.group(0)) > 1]
    body = re.sub(r"[^\n]", " ", match.group(0))
    return body[: len(body) - len(" ".join(kept))] + " ".join(kept) if kept else body


def prose(markdown: str) -> str:
    """The page with everything that is not prose blanked out, line numbers kept."""
    lines, fence = [], None
    for line in markdown.splitlines():
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)[0] * len(opening.group(1))
            lines.append("")
        elif fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            lines.append("")
        else:
            lines.append(line)
    text = "\n".join(lines)
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        text = re.sub(r"[^\n]", " ", text[: end + 4]) + text[end + 4 :]
    for pattern in (BLOCKS, INLINE_CODE, LINK_TARGET, TAG, ATTR_LIST, ARXIV):
        text = pattern.sub(_blank, text)
    text = MATH.sub(_math_constants_only, text)
    return LIST_MARKER.sub(
        lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))), text
    )


def numbers(markdown: str) -> list[tuple[int, str]]:
    """``(line, number)`` for every hand-typed number in the prose of ``markdown``."""
    found = []
    for line_no, line in enumerate(prose(markdown).splitlines(), start=1):
        for match in NUMBER.finditer(line):
            if re.search(r"\w$", line[: match.start()]):  # GPT-2, Llama-2: a name
                continue
            found.append((line_no, match.group(0)))
    return found


def notebook_markdown(source: str) -> str:
    """The Markdown cells of a jupytext percent-format notebook, as Markdown."""
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


def load_allowlist(path: Path) -> dict[str, set[str]]:
    """``{page: {exact text, ...}}`` from the TOML allowlist; every entry needs a reason."""
    allowed: dict[str, set[str]] = {}
    for entry in tomllib.loads(path.read_text())["allow"]:
        if not entry.get("reason", "").strip():
            raise ValueError(f"allowlist entry {entry} has no reason")
        allowed.setdefault(entry["page"], set()).add(entry["text"])
    return allowed


def scan(docs: Path, allowlist: dict[str, set[str]]) -> list[Finding]:
    """Every number in the pages under ``docs`` that the allowlist does not excuse."""
    findings = []
    pages = sorted(docs.rglob("*.md")) + sorted((docs / "notebooks").glob("*.py"))
    for path in pages:
        page = path.relative_to(docs).as_posix()
        text = path.read_text()
        if path.suffix == ".py":
            text = notebook_markdown(text)
        allowed = allowlist.get(page, set()) | allowlist.get("*", set())
        findings += [
            Finding(page, line, number)
            for line, number in numbers(text)
            if number not in allowed
        ]
    return findings
