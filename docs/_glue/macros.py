"""mkdocs-macros glue: hand each page its page object and the number formatters.

A page ``docs/<page>.md`` reads one object, ``page``: what ``mha.pages.<page>.page()``
returns (``-`` in the file name is ``_`` in the module's). The template formats it and
does nothing else:

    {{ page.example.head_a.weights[0] | dec }}                  -> 0.768
    {% call fact("tie") %}exactly as much to itself{% endcall %} -> the words, checked
    {{ figure("three_distributions") }}                         -> Figure 1, captioned

``fact(name)`` prints its sentence if the page's fact holds and otherwise fails the
build at that Markdown line, quoting the sentence (``mha_site.facts``); after the
sentence, a small button opens what checked it: the fact's ``says``, its values and a
link to its code (``mha_site.evidence``), and the foot of every page counts what the
build computed, guarded, executed and drew there; ``holds(name)``
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
import importlib.util
import logging
import re
import subprocess
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


# The page being rendered: its facts as stated so far, its figures' count, its source,
# its module's name, what the build checked on it (``mha_site.evidence.Checked``) and,
# while serving, the errors it met (kind, one line), shown at its top.
_PAGE: dict = {
    "facts": None,
    "figures": 0,
    "where": "",
    "markdown": "",
    "module": None,
    "checked": None,
    "sources": None,
    "errors": [],
}
# Whether errors are shown in their page (`make serve`: docs/_glue/serve.py turns
# mkdocs-macros' on_error_fail off) instead of failing the build (`make build`).
_SERVING = {"on": False}
# Where the build links code (``mha_site.evidence.Code``), set once per build.
_CODE: dict = {"code": None}
log = logging.getLogger("mkdocs.plugins.mha")


def _fail(error: Exception, line: int | None = None, kind: str = "value") -> None:
    """Log ``error`` as one line naming the page's file (and ``line``), then raise it
    (mkdocs-macros prints the traceback after that line, or, while serving, shows the
    page's errors instead of the page: ``on_post_page_macros``). ``kind`` is the
    error's banner (``mha_site.errors.BANNERS``)."""
    errors = importlib.import_module("mha_site.errors")
    message = errors.first_line(str(error))
    if not errors.LOCATED.match(message):  # not yet named by its file and line
        message = f"{_PAGE['where']}:{line or 0}: {message}"
    log.error(message)
    _PAGE["errors"].append((kind, message))
    raise error


class _Template:
    """The page object as its template reads it, carrying the front matter (``meta``)
    that mkdocs-macros reads from whatever is called ``page``. Each value it hands out
    is traced (``mha_site.traced``): a number it prints names the attribute it came
    from."""

    def __init__(self, page, meta: dict) -> None:
        self._page, self.meta = page, meta

    def __getattr__(self, name: str):
        value = getattr(self._page, name)
        if name in ("facts", "figures") or name.startswith("_"):
            return value
        return importlib.import_module("mha_site.traced").Traced(value, name)


class _Undefined(jinja2.StrictUndefined):
    """An unknown name or value (``on_undefined: strict``), reported at the first
    Markdown line that reads it."""

    def _fail_with_undefined_error(self, *args, **kwargs):
        traced = importlib.import_module("mha_site.traced")
        self._undefined_obj = traced.unwrap(self._undefined_obj)  # named by its type
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
            _fail(error, errors.line_of(_PAGE["markdown"], pattern), "value")


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
    module = importlib.import_module("mha_site.pages").page_module(src)
    checked = importlib.import_module("mha_site.evidence").Checked()
    _PAGE.update(
        figures=0, where=where, markdown=markdown, facts=None, errors=[], module=module
    )
    _PAGE["popovers"] = {}  # what each marker's popover holds, by fact
    _PAGE["checked"] = checked
    _PAGE["sources"] = importlib.import_module("mha_site.traced").Sources()
    try:
        page = (
            importlib.import_module(module).page()
            if module
            else support.Page(facts={}, figures={})
        )
    except Exception as error:
        errors = importlib.import_module("mha_site.errors")
        at = errors.where_raised(error, ROOT) or where
        message = f"{at}: {errors.first_line(str(error))} (building {module}.page() for {where})"
        log.error(message)
        _PAGE["errors"].append(("page", message))
        raise
    _PAGE["facts"] = facts.PageFacts(page, where, markdown)
    return page


def _syntax_error(env) -> bool:
    """Whether the page's template does not parse (an unclosed ``{{``): said in one
    line at its line, and kept to show in the page."""
    try:  # the whole source, front matter included: Jinja's line is the file's
        env.env.parse(_PAGE["markdown"])
    except jinja2.TemplateSyntaxError as error:
        message = f"{_PAGE['where']}:{error.lineno}: {error.message}"
        log.error(message)
        _PAGE["errors"].append(("template", message))
        return True
    return False


def on_pre_page_macros(env) -> None:
    """Before each page (MkDocs): give it its page object; figures numbered from 1.
    While serving, a page whose template does not parse or whose page object cannot
    be built is rendered empty, and ``on_post_page_macros`` shows its error. Not for
    a page that waits for its studies (docs/_glue/waiting.py)."""
    env.env.undefined = _Undefined  # mkdocs-macros' Jinja environment, made by now
    if getattr(env.page, "mha_waiting", None) is not None:  # docs/_glue/waiting.py
        _PAGE.update(facts=None, errors=[])
        return
    env.env.finalize = _count_printed  # every printed value, counted at the page's foot
    _tracing_filters(env.env)
    _SERVING["on"] = not getattr(env, "config", {}).get("on_error_fail", True)
    try:
        page = _page_object(env)
    except Exception:
        if not _SERVING["on"]:
            raise
        env.variables["page"] = _Template(None, env.page.meta)
        env.markdown = ""
        return
    env.variables["page"] = _Template(page, env.page.meta)
    if _SERVING["on"] and _syntax_error(env):
        env.markdown = ""


def _declared_at() -> str:
    """``<page module>:<line>`` where it declares the first fact its page never
    states (the line naming the fact; the module's first line if none does)."""
    facts = _PAGE["facts"]
    name = sorted(set(facts.page.facts) - facts.used)[0]
    src = _PAGE["where"].removeprefix("docs/")
    module = sys.modules[importlib.import_module("mha_site.pages").page_module(src)]
    path = Path(module.__file__)
    errors = importlib.import_module("mha_site.errors")
    line = errors.line_of(
        path.read_text(encoding="utf-8"), rf"""["']{re.escape(name)}["']"""
    )
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return f"{where}:{line or 1}"


def on_post_page_macros(env) -> None:
    """After each page (MkDocs): every fact its module declares was stated (at the
    module's line declaring the first one that was not); each guarded sentence prints
    a value its fact reads, and no sentence compares outside a fact; the page's foot
    says what the build checked on it. While serving, the page's errors go on the page
    (``mha_build_errors``), shown at its top by docs/_glue/errors.py; one that stopped
    its rendering leaves the errors alone (mkdocs-macros wrote its traceback in place
    of the page)."""
    failed = bool(_PAGE["errors"])
    if _PAGE["facts"] is None and not failed:  # a page that waits states none
        return
    unused = None if failed else _PAGE["facts"].unused()
    if unused:
        error = importlib.import_module("mha_site.facts").FactError(
            f"{_declared_at()}: {unused}"
        )
        try:
            _fail(error, kind="unstated")
        except ValueError:
            if not _SERVING["on"]:
                raise
    if _SERVING["on"] and _PAGE["errors"]:  # shown by docs/_glue/errors.py
        env.page.mha_build_errors = [*getattr(env.page, "mha_build_errors", [])]
        env.page.mha_build_errors += _PAGE["errors"]
        if failed:  # mkdocs-macros' traceback in place of the page: the banner alone
            env.markdown = ""
            return
    if failed:
        return
    facts = importlib.import_module("mha_site.facts")
    traced = importlib.import_module("mha_site.traced")
    shown = traced.strip(env.markdown)
    for name in facts.unshown(shown, _PAGE["facts"].page.facts):
        line = _PAGE["facts"].lines.get(name, [0])[0]
        fact = _PAGE["facts"].page.facts[name]
        log.error(
            f"{_PAGE['where']}:{line}: the sentence of fact {name!r} prints none of "
            f"the values it reads ({fact.values}): print one beside it, or declare "
            "the fact qualitative with its reason (Fact(..., qualitative=...))"
        )
    for line, name in facts.unmarked(_PAGE["markdown"]):
        log.error(
            f"{_PAGE['where']}:{line}: holds({name!r}) picks words outside any "
            "guarded sentence, so they carry no marker: write them as the sentence "
            f'of their fact, {{% call fact("{name}") %}}{{% if holds("{name}") %}}…'
            "{% endif %}{% endcall %}"
        )
    for line, sentence in facts.unguarded(_PAGE["markdown"]):
        log.error(
            f"{_PAGE['where']}:{line}: {sentence!r} compares two things outside any "
            "fact: write it inside the fact that checks it, {% call fact(...) %}, or "
            "print the values it compares (mha_site.facts.UNGUARDED lists the "
            "comparisons that need neither, with their reasons)"
        )
    evidence = importlib.import_module("mha_site.evidence")
    checked = _PAGE["checked"]
    checked.figures = _PAGE["figures"]
    checked.blocks = evidence.executed_blocks(_PAGE["markdown"])
    module = test = None
    if _PAGE["module"]:
        files = _module_files(_PAGE["module"])
        module = (_code().url(files[0]), files[0].relative_to(ROOT).as_posix())
        name = _PAGE["module"].removeprefix("mha.pages.")
        path = ROOT / "tests" / "pages" / f"test_{name}.py"
        if path.is_file():
            test = (_code().url(path), path.relative_to(ROOT).as_posix())
    src, _ = _source(env)
    depth = src.count("/") + (
        src not in ("index.md",) and not src.endswith("/index.md")
    )
    index = "../" * depth + "evidence/"
    env.page.mha_sources = _PAGE["sources"]  # placed in the HTML: docs/_glue/numbers.py
    listed = _sources_list()
    # the page's evidence file, written beside it by docs/_glue/numbers.py
    env.page.mha_evidence = {"f": _PAGE["popovers"], "s": listed}
    env.markdown += checked.footer(module, test, index, bool(listed))


def _sources_list() -> str:
    """The list of where the page's printed numbers come from, which the foot shows
    from the page's evidence file: each value of the page object they were read
    from, the function that computed it, linked, and the cached studies it read
    (``mha_site.origins``)."""
    evidence = importlib.import_module("mha_site.evidence")
    origins = importlib.import_module("mha_site.origins")
    traced = importlib.import_module("mha_site.traced")
    module = _PAGE["module"]
    fields = origins.fields(module) if module else {}
    grouped: dict[tuple, list[str]] = {}  # fields by what computed them
    for field in traced.fields(_PAGE["sources"].paths):
        origin = fields.get(field)
        if origin is None:
            grouped.setdefault(("", "", None, ()), []).append(field)
            continue
        found = origin.path.is_relative_to(ROOT)
        url = _code().url(origin.path, origin.line) if found else None
        inline = origin.name == f"{module}.page"  # computed in page() itself
        function = origin.kind == "function" and not inline
        studies = tuple(origins.studies(origin.name)) if function else ()
        grouped.setdefault((origin.name, origin.kind, url, studies), []).append(field)
    rows = [evidence.Source(tuple(f), *key) for key, f in grouped.items()]
    return evidence.sources_list(rows, origins.sealed_commit())


def _module_files(module: str) -> list[Path]:
    """The files of page module ``module``: the file, or a package's, its
    ``__init__.py`` first."""
    origin = Path(importlib.util.find_spec(module).origin)
    if origin.name != "__init__.py":
        return [origin]
    return [origin, *sorted(set(origin.parent.glob("*.py")) - {origin})]


def _code():
    """Where this build links code: the repository at the commit built, or, for a
    local build (the repository's address a placeholder), the files."""
    if _CODE["code"] is None:
        links = importlib.import_module("mha_site.links")
        evidence = importlib.import_module("mha_site.evidence")
        repo_url = _CODE.get("repo_url")
        commit = None
        if repo_url and repo_url != links.PLACEHOLDER_REPO:
            try:
                found = subprocess.run(
                    ["git", "rev-parse", "HEAD"],
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                commit = found.stdout.strip() or None
            except FileNotFoundError:  # no git on the machine
                commit = None
        _CODE["code"] = evidence.Code(ROOT, repo_url if commit else None, commit)
    return _CODE["code"]


def _evidence_marker(name: str) -> str:
    """The button after fact ``name``'s sentence; what its popover holds is kept
    for the page's evidence file."""
    evidence = importlib.import_module("mha_site.evidence")
    fact = _PAGE["facts"].page.facts[name]
    _PAGE["checked"].sentences += 1
    if not _PAGE["module"]:
        return ""
    for path in _module_files(_PAGE["module"]):
        line = evidence.fact_line(path, name)
        if line:
            where = f"{path.relative_to(ROOT).as_posix()}, line {line}"
            break
    else:
        path, line = _module_files(_PAGE["module"])[0], None
        where = path.relative_to(ROOT).as_posix()
    chooses = name in _PAGE["facts"].choosing
    url = _code().url(path, line)
    _PAGE["popovers"][name] = evidence.popover(fact, url, name, where, chooses)
    return evidence.marker(name)


def _count_printed(value):
    """Every value a ``{{ }}`` prints passes here (Jinja's ``finalize``): one that
    holds a digit and no markup is a computed number the page's foot counts; read
    from the page object, it is marked with the attribute it came from
    (``mha_site.traced``)."""
    traced = importlib.import_module("mha_site.traced")
    bare = traced.unwrap(value)
    printed = str(bare) if bare is not None else ""
    checked = _PAGE["checked"]
    if checked is not None and re.search(r"\d", printed) and "<" not in printed:
        checked.numbers += 1
    sources = _PAGE["sources"]
    return sources.mark(value) if sources is not None else bare


def _tracing_filters(jinja: jinja2.Environment) -> None:
    """Every filter and test of the page's Jinja environment given the values its
    traced arguments stand for, its result traced in turn (once per environment)."""
    traced = importlib.import_module("mha_site.traced")
    for table in (jinja.filters, jinja.tests):
        for name, function in table.items():
            if not getattr(function, "mha_traced", False):
                table[name] = traced.tracing(function)
                table[name].mha_traced = True


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
    env.filter(importlib.import_module("mha_site.evidence").text, "plain")
    env.filter(lambda sha: _code().commit_link(sha), "commit")  # a bench result's seal
    _CODE.update(code=None, repo_url=getattr(env, "conf", {}).get("repo_url"))

    if zensical:  # the page Zensical renders is its own: the values go onto it
        vars(env.variables["page"]).update(vars(_page_object(env)))

    @env.macro
    def fact(name: str, caller) -> str:
        """The sentence inside ``{% call fact(name) %}…{% endcall %}``, if it holds."""
        sentence = caller()
        try:  # checked on the words as the reader reads them (numbers unmarked)
            _PAGE["facts"].state(
                name, importlib.import_module("mha_site.traced").strip(sentence)
            )
        except ValueError as error:  # FactError: the message names file and line
            _fail(error, kind="fact")
        return sentence + _evidence_marker(name)

    @env.macro
    def holds(name: str) -> bool:
        """Whether the page's fact ``name`` holds (for ``{% if holds(name) %}``)."""
        try:
            return _PAGE["facts"].holds(name)
        except ValueError as error:
            _fail(error, kind="fact")

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
                ),
                kind="figure",
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
            _fail(error, line, "figure")
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
