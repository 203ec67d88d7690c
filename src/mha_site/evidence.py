"""What a reader sees of the checks: the marker beside each guarded sentence, its
popover, and the foot of each page that counts what the build checked.

A guarded sentence (``{% call fact("tie") %}…{% endcall %}``) is printed with a small
button after it (``marker``), keyed by its fact's name. What its popover holds (the
fact's ``says``, the values that made it true at build time, and a link to the line
of the page module that decides it: ``popover``) is not in the page: it goes, with
where each printed number comes from, in the page's evidence file written beside it
(``docs/_glue/numbers.py``), which ``docs/assets/js/evidence.js`` fetches on the
first hover, focus or tap of a marker or a number. A page that prints hundreds of
numbers weighs that much less, and neither the search index nor print reads it.
Everything is generated at build from the page object and the sources, so two
builds of one commit are byte-identical.

```python
from mha.support.page import Fact
from mha_site.evidence import marker, popover

assert marker("tie") == (
    '<button type="button" class="mha-mark" data-f="tie" aria-expanded="false" '
    'aria-label="How this sentence is checked"></button>')
inside = popover(Fact(True, "0.5 | 0.5", "a and b tie"), "https://x/y.py#L3", "tie")
assert "a and b tie" in inside and "<code>0.5 | 0.5</code>" in inside
```
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

from mha.support.page import Fact

# Characters that Markdown, KaTeX's delimiters or a table would read in the popover's
# text, inside a line (none starts one): written as character references, which the
# browser shows as themselves.
_MARKDOWN = {c: f"&#{ord(c)};" for c in "\\`*_{}[]|$<>&~^"}


def text(words: str) -> str:
    """``words`` as inline HTML that Markdown leaves alone, on one line.

    ```python
    from mha_site.evidence import text

    assert text("a_b | $x$ <y>.") == "a&#95;b &#124; &#36;x&#36; &#60;y&#62;."
    ```
    """
    return "".join(_MARKDOWN.get(c, c) for c in " ".join(str(words).split()))


def fact_line(module_file: Path, name: str) -> int | None:
    """The line of ``module_file`` (a page module, or a package's files in order)
    where fact ``name`` is declared (``"name": Fact(…)``), or None.

    ```python
    from pathlib import Path
    import mha.pages.cricket as cricket
    from mha_site.evidence import fact_line

    line = fact_line(Path(cricket.__file__), "a_commits")
    assert '"a_commits"' in Path(cricket.__file__).read_text().splitlines()[line - 1]
    ```
    """
    declared = re.compile(rf"""^\s*["']{re.escape(name)}["']\s*:""")
    for number, line in enumerate(module_file.read_text("utf-8").splitlines(), 1):
        if declared.match(line):
            return number
    return None


@dataclass(frozen=True)
class Code:
    """Where the build links a page's code: the repository at the commit it built,
    or, for a local build (the repository's address a placeholder), the file."""

    root: Path  # the clone
    repo_url: str | None  # None: a local build
    commit: str | None

    def url(self, path: Path, line: int | None = None) -> str:
        """The address of ``path`` (a file under ``root``), at ``line`` if given.

        ```python
        from pathlib import Path
        from mha_site.evidence import Code

        remote = Code(Path("/r"), "https://github.com/a/b", "abc")
        assert remote.url(Path("/r/src/x.py"), 3) == (
            "https://github.com/a/b/blob/abc/src/x.py#L3")
        assert Code(Path("/r"), None, None).url(Path("/r/x.py")) == "file:///r/x.py"
        ```
        """
        anchor = f"#L{line}" if line else ""
        if self.repo_url and self.commit:
            relative = path.relative_to(self.root).as_posix()
            return f"{self.repo_url.rstrip('/')}/blob/{self.commit}/{relative}{anchor}"
        return path.as_uri() + anchor

    def commit_link(self, sha: str) -> str:
        """Commit ``sha`` as a page prints it (a bench result's seal): its short
        hash, linked to the commit on the repository; a local build, or a hash git
        did not give (``unknown``), prints the hash alone.

        ```python
        from pathlib import Path
        from mha_site.evidence import Code

        remote = Code(Path("/r"), "https://github.com/a/b", "abc")
        assert remote.commit_link("0123456789ab") == (
            '<a href="https://github.com/a/b/commit/0123456789ab">'
            "<code>0123456</code></a>")
        assert Code(Path("/r"), None, None).commit_link("0123456789ab") == (
            "<code>0123456</code>")
        ```
        """
        short = f"<code>{html.escape(str(sha)[:7])}</code>"
        if not (self.repo_url and re.fullmatch(r"[0-9a-f]{7,40}", str(sha))):
            return short
        return f'<a href="{html.escape(self.repo_url.rstrip("/"))}/commit/{sha}">{short}</a>'


def marker(name: str) -> str:
    """The button after fact ``name``'s sentence, on one line: its popover is
    fetched from the page's evidence file (``popover``) when it first opens."""
    return (
        f'<button type="button" class="mha-mark" data-f="{html.escape(name)}" '
        'aria-expanded="false" aria-label="How this sentence is checked"></button>'
    )


def popover(
    fact: Fact, url: str, name: str, where: str = "", chooses: bool = False
) -> str:
    """What the popover of fact ``name``'s marker holds, as HTML: its ``says``, its
    values at build time, and ``url``, its code, named by ``where``
    (``src/mha/pages/x.py, line 12``). ``chooses``: the sentence picks its words
    by the fact (``holds``), so the popover says whether it holds in this build.

    ```python
    from mha.support.page import Fact
    from mha_site.evidence import popover

    inside = popover(Fact(False, "a < b", "b wins"), "u", "win", "x.py", True)
    assert inside == (
        '<span class="mha-says">Checked at build: b wins: false, and the words '
        'follow it.</span><span class="mha-values">Values: <code>a &lt; b</code>'
        '</span><a class="mha-code" href="u">fact &#x27;win&#x27; in x.py</a>')
    ```
    """
    verdict = f": {'true' if fact.holds else 'false'}, and the words follow it" * (
        chooses
    )
    kind = f" Stated without a printed value: {fact.qualitative}." * bool(
        fact.qualitative
    )
    said = " ".join(f"Checked at build: {fact.says}{verdict}.{kind}".split())
    return (
        f'<span class="mha-says">{html.escape(said)}</span>'
        '<span class="mha-values">Values: '
        f"<code>{html.escape(' '.join(fact.values.split()))}</code></span>"
        f'<a class="mha-code" href="{html.escape(url)}">fact '
        f"{html.escape(repr(name))} in {html.escape(where or 'the page module')}</a>"
    )


# The page's evidence file, beside it; what the foot shows without JavaScript.
EVIDENCE = "evidence.json"
_LISTED = (
    '<details class="mha-sources"><summary>Where this page\'s numbers come from'
    f'</summary><p>Listed in <a href="{EVIDENCE}">{EVIDENCE}</a>.</p></details>'
)


@dataclass
class Checked:
    """What the build checked on one page, counted as it renders."""

    numbers: int = 0
    sentences: int = 0
    blocks: int = 0
    figures: int = 0

    def footer(
        self,
        module: tuple[str, str] | None,
        test: tuple[str, str] | None,
        index: str,
        listed: bool = False,
    ) -> str:
        """The foot of the page: the counts, links to its module and its test
        (``(url, path)`` each, or None), and to the evidence index (``index``, a
        URL relative to the page); then, if ``listed``, the place of the list of
        where its numbers come from (``sources_list``), which evidence.js fills
        from the page's evidence file, ``EVIDENCE``, when it is opened.

        ```python
        from mha_site.evidence import Checked

        foot = Checked(numbers=3, sentences=1).footer(("u", "m.py"), None, "e/")
        assert "3 numbers computed, 1 sentence guarded" in foot
        assert 'href="u"' in foot and "tested by" not in foot
        assert "mha-sources" not in foot and "mha-sources" in Checked().footer(
            None, None, "e/", listed=True)
        ```
        """
        counts = (
            f"{self.numbers} {'number' if self.numbers == 1 else 'numbers'} computed, "
            f"{self.sentences} {'sentence' if self.sentences == 1 else 'sentences'} "
            f"guarded, {self.blocks} {'block' if self.blocks == 1 else 'blocks'} "
            f"executed, {self.figures} {'figure' if self.figures == 1 else 'figures'} "
            "drawn at build"
        )
        links = [
            f'{label} <a href="{html.escape(url)}"><code>{text(path)}</code></a>'
            for label, found in (("computed by", module), ("tested by", test))
            if found
            for url, path in [found]
        ]
        tail = f"; {' and '.join(links)}" if links else ""
        return (
            '\n\n<aside class="mha-checked" aria-label="How this page is checked" '
            "data-search-exclude><p><strong>How this page is checked."
            f"</strong> {text(counts)}{tail}. "
            f'<a href="{html.escape(index)}">Every check of the site</a>.</p>'
            f"{_LISTED * listed}</aside>\n"
        )


@dataclass(frozen=True)
class Source:
    """Where the numbers read from some values of a page object come from: the
    values (``fields``), what computed them (``name``, of ``kind`` "function",
    "class", "constant" or "module"; empty if unknown), its code's address (``url``),
    and the cached studies it read (``mha_site.origins.Study``)."""

    fields: tuple[str, ...]
    name: str = ""
    kind: str = ""
    url: str | None = None
    studies: tuple | list = ()


_KINDS = {
    "function": "computed by",
    "class": "built by",
    "constant": "the constant",
    "module": "from the module",
}


def sources_list(sources: list[Source], sealed: str = "") -> str:
    """The list, at a page's foot (written in its evidence file), of where its
    printed numbers come from, one item per function (or constant) and the values of the page object it
    computed (``data-f``, which a number's popover reads); CPU seconds as ``make
    bench`` sealed them at commit ``sealed``.

    ```python
    from mha_site.evidence import Source, sources_list
    from mha_site.origins import Study

    rows = [Source(("rows", "n"), "mha.pages.cost._sweep", "function", "u#L3",
                   [Study("mha.pages.cost._sweep", "0a1b2c3d4e5f", 0.22)])]
    html = sources_list(rows, "a032fe2")
    assert html.startswith('<ul><li data-f="rows n"><code>page.rows</code>')
    assert ('<li data-f="rows n"><code>page.rows</code>, <code>page.n</code>: '
            '<span>computed by <a href="u#L3">') in html
    assert "entry <code>0a1b2c3d4e</code>, 0.22 CPU-s" in html and "a032fe2" in html
    assert sources_list([]) == ""
    ```
    """
    if not sources:
        return ""
    items = []
    for source in sources:
        what = _KINDS.get(source.kind, "computed by")
        name = f"<code>{text(source.name or 'page()')}</code>"
        linked = (
            f'<a href="{html.escape(source.url)}">{name}</a>' if source.url else name
        )
        studies = "".join(
            f"; cached study <code>{text(study.name)}</code>, entry "
            f"<code>{study.key[:10]}</code>"
            + (f", {study.cpu:.2f} CPU-s" if study.cpu is not None else ", not timed")
            for study in source.studies
        )
        named = ", ".join(f"<code>page.{text(f)}</code>" for f in source.fields)
        items.append(
            f'<li data-f="{html.escape(" ".join(source.fields))}">{named}: '
            f"<span>{what} {linked}{studies}</span></li>"
        )
    timed = any(s.cpu is not None for source in sources for s in source.studies)
    seal = (
        "<p>An entry is the content hash a study's result is cached under; CPU "
        f"seconds as <code>make bench</code> sealed them at {text(sealed)}.</p>"
        if timed and sealed
        else ""
    )
    return f"<ul>{''.join(items)}</ul>{seal}"


EXECUTED = re.compile(r"^\s*(`{3,}|~{3,})\s*\{?\.?python\b[^\n]*\bexec=.on.", re.M)


def executed_blocks(markdown: str) -> int:
    """How many code blocks of ``markdown`` the build runs (``exec="on"``).

    ```python
    from mha_site.evidence import executed_blocks

    fences = '```python exec="on" source="above"\\nx\\n```\\n```python\\ny\\n```'
    assert executed_blocks(fences) == 1
    ```
    """
    return len(EXECUTED.findall(markdown))
