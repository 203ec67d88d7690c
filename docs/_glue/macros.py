"""mkdocs-macros glue: hand each page its page object and the number formatters.

A page ``docs/<page>.md`` reads one object, ``page``: what ``mha.pages.<page>.page()``
returns (``-`` in the file name is ``_`` in the module's). The template formats it and
does nothing else:

    {{ page.example.head_a.weights[0] | dec }}                  -> 0.768
    {% call fact("tie") %}exactly as much to itself{% endcall %} -> the words, checked
    {{ figure("three_distributions") }}                         -> Figure 1, captioned

``fact(name)`` prints its sentence if the page's fact holds and otherwise fails the
build at that Markdown line, quoting the sentence (``mha_site.facts``); ``holds(name)``
is the same fact for a sentence that changes with it (an ``if``). ``figure(name)``
inlines the page's figure ``name`` (``mha.support.page.Figure``), with its alt text as
its accessible name, in a ``<figure>`` numbered on its page ("Figure 1.") with its
caption below. Figures are cached by content hash (code and data), so a warm build
does not draw them again.

Every error a contributor can cause here (a page object that cannot be built, a false
fact, an unknown figure or value) is logged first as one line naming the file and
line (``mha_site.errors``), before mkdocs-macros prints its traceback.

Both builds run this module. MkDocs (mkdocs-macros) calls ``define_env`` once and
``on_pre_page_macros``/``on_post_page_macros`` around each page, whose file is
``env.page.file``; Zensical calls ``define_env`` once per page, with ``env.page.path``
(relative to docs/) and no ``file``, and renders the ``page`` object it set up first,
so there the page module's values are copied onto it.
"""

import html
import importlib
import logging
import re
import sys
from pathlib import Path

import jinja2
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(
        0, str(ROOT / "src")
    )  # mha_site: the build's tooling, not installed


def _fresh_core() -> None:
    """Forget imported ``mha`` modules, so `mkdocs serve` picks up edits in src/."""
    for name in [m for m in sys.modules if m.split(".")[0] in ("mha", "mha_site")]:
        del sys.modules[name]


# The page being rendered: its facts as stated so far, its figures' count, its source.
_PAGE: dict = {"facts": None, "figures": 0, "where": "", "markdown": ""}
log = logging.getLogger("mkdocs.plugins.mha")


def _fail(error: Exception, line: int | None = None) -> None:
    """Log ``error`` as one line naming the page's file (and ``line``), then raise it
    (mkdocs-macros prints the traceback after that line)."""
    errors = importlib.import_module("mha_site.errors")
    message = errors.first_line(str(error))
    if not message.startswith(_PAGE["where"]):
        message = f"{_PAGE['where']}:{line or 0}: {message}"
    log.error(message)
    raise error


class _Template:
    """The page object as its template reads it, carrying the front matter (``meta``)
    that mkdocs-macros reads from whatever is called ``page``."""

    def __init__(self, page, meta: dict) -> None:
        self._page, self.meta = page, meta

    def __getattr__(self, name: str):
        return getattr(self._page, name)


class _Undefined(jinja2.StrictUndefined):
    """An unknown name or value (``on_undefined: strict``), reported at the first
    Markdown line that reads it."""

    def _fail_with_undefined_error(self, *args, **kwargs):
        try:
            return super()._fail_with_undefined_error(*args, **kwargs)
        except jinja2.UndefinedError as undefined:
            errors = importlib.import_module("mha_site.errors")
            name, error = str(self._undefined_name), undefined
            if isinstance(self._undefined_obj, _Template):  # page.<name>
                values = sorted(set(vars(self._undefined_obj._page)) - {"facts"})
                error = jinja2.UndefinedError(
                    f"the page object has no value {name!r}; it has {values}"
                )
            pattern = rf"\b{re.escape(name)}\b"
            _fail(error, errors.line_of(_PAGE["markdown"], pattern))


# Jinja binds the operators of an undefined value to its base class's failure at class
# level: they are bound again to the one above.
for _name, _value in {**vars(jinja2.Undefined), **vars(jinja2.StrictUndefined)}.items():
    if _value is jinja2.Undefined._fail_with_undefined_error and _name.startswith("__"):
        setattr(_Undefined, _name, _Undefined._fail_with_undefined_error)


def _source(env) -> tuple[str, Path]:
    """The page's path under docs/ and its file, in both builds."""
    file = getattr(env.page, "file", None)
    if file is not None:  # MkDocs
        return file.src_uri, Path(file.abs_src_path)
    docs = Path(env.conf.get("docs_dir") or "docs")  # Zensical: a path under docs/
    return env.page.path, (docs if docs.is_absolute() else ROOT / docs) / env.page.path


def _page_object(env):
    """The page object of the page being rendered, and its facts, from its module."""
    facts = importlib.import_module("mha_site.facts")
    support = importlib.import_module("mha.support.page")
    src, path = _source(env)
    where = f"docs/{src}"
    markdown = path.read_text(encoding="utf-8")
    _PAGE.update(figures=0, where=where, markdown=markdown)
    module = importlib.import_module("mha_site.pages").page_module(src)
    try:
        page = (
            importlib.import_module(module).page()
            if module
            else support.Page(facts={}, figures={})
        )
    except Exception as error:
        at = importlib.import_module("mha_site.errors").where_raised(error, ROOT)
        message = importlib.import_module("mha_site.errors").first_line(str(error))
        log.error(f"{at or where}: {message} (building {module}.page() for {where})")
        raise
    _PAGE["facts"] = facts.PageFacts(page, where, markdown)
    return page


def on_pre_page_macros(env) -> None:
    """Before each page (MkDocs): give it its page object; figures numbered from 1.
    Not for a page that waits for its studies (docs/_glue/waiting.py)."""
    env.env.undefined = _Undefined  # mkdocs-macros' Jinja environment, made by now
    if getattr(env.page, "mha_waiting", None) is not None:
        _PAGE["facts"] = None
        return
    env.variables["page"] = _Template(_page_object(env), env.page.meta)


def on_post_page_macros(env) -> None:
    """After each page (MkDocs): every fact its module declares was stated."""
    if _PAGE["facts"] is None:  # a page that waits states none
        return
    unused = _PAGE["facts"].unused()
    if unused:
        error = importlib.import_module("mha_site.facts").FactError(unused)
        _fail(error)


def define_env(env):
    """Called by mkdocs-macros once per build."""
    # The build's experiments multiply many small matrices: one BLAS thread runs them
    # several times faster than two threads spinning on each other (measured: the
    # MiniLM pruning study, 23 s with one thread against 127 s with two).
    threadpool_limits(1)
    zensical = getattr(env, "page", None) is not None  # once per page, page known
    if not zensical:
        _fresh_core()
    formatting = importlib.import_module("mha.support.formatting")

    env.filter(formatting.decimals, "dec")
    env.filter(formatting.percent, "pct")
    env.filter(formatting.thousands, "thousands")
    env.filter(formatting.vector, "vec")
    env.filter(formatting.significant, "sig")

    if zensical:  # the page Zensical renders is its own: the values go onto it
        vars(env.variables["page"]).update(vars(_page_object(env)))

    @env.macro
    def fact(name: str, caller) -> str:
        """The sentence inside ``{% call fact(name) %}…{% endcall %}``, if it holds."""
        try:
            return _PAGE["facts"].state(name, caller())
        except ValueError as error:  # FactError: the message names file and line
            _fail(error)

    @env.macro
    def holds(name: str) -> bool:
        """Whether the page's fact ``name`` holds (for ``{% if holds(name) %}``)."""
        try:
            return _PAGE["facts"].holds(name)
        except ValueError as error:
            _fail(error)

    @env.macro
    def figure(name: str) -> str:
        """The page's figure ``name``, numbered, captioned, its alt text its name."""
        errors = importlib.import_module("mha_site.errors")
        line = errors.line_of(
            _PAGE["markdown"], rf"""figure\(\s*["']{re.escape(name)}["']"""
        )
        figures = env.variables["page"].figures
        if name not in figures:
            _fail(
                LookupError(
                    f"{_PAGE['where']}:{line}: the page module has no figure "
                    f"{name!r}; it has {sorted(figures)}"
                )
            )
        spec = figures[name]
        # mha.figures (and Matplotlib with it) imported by the first figure drawn
        render = importlib.import_module("mha.figures").render
        first = _PAGE["figures"] == 0  # drawn once with its card (docs/_glue/social.py)
        social = importlib.import_module("mha_site.social")
        try:
            if first:
                svg, _ = social.figure_and_card(spec)
            else:
                svg = render(spec.draw, spec.alt, *spec.data)
        except Exception as error:
            _fail(error, line)
        _PAGE["figures"] += 1
        number = _PAGE["figures"]
        if number == 1:  # its card for a shared link (docs/_glue/social.py)
            env.page.mha_first_figure = spec
        below = (
            f"<figcaption><strong>Figure {number}.</strong> "
            f"{html.escape(spec.caption)}</figcaption>"
        )
        # the drawing scrolls sideways on its own when it is wider than the screen at
        # its legible floor (``min-width``, mha.figures.style); the caption does not
        return (
            f'<figure class="mha" id="figure-{number}">'
            f'<div class="mha-scroll">{svg}</div>{below}</figure>'
        )
