"""Figures are deterministic SVG that follows the page's colours, with alt text and a caption."""

import importlib.util
import inspect
import pkgutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import mha.figures
from mha.figures import to_svg
from mha.figures.cricket import three_distributions
from mha.figures.style import INK
from mha.support.page import Figure
from mha.worked.cricket import TOKENS, solve


def test_svg_is_byte_identical_between_draws():
    first = to_svg(three_distributions(solve(), TOKENS, "his"), "alt")
    second = to_svg(three_distributions(solve(), TOKENS, "his"), "alt")
    assert first == second


def test_svg_uses_current_color_and_carries_its_alt_text():
    svg = to_svg(three_distributions(solve(), TOKENS, "his"), 'weights of "his"')
    assert svg.startswith('<svg role="img" aria-label="weights of &quot;his&quot;"')
    assert "currentColor" in svg and INK not in svg
    assert "<style" not in svg and "\n\n" not in svg


def test_alt_text_is_required():
    with pytest.raises(ValueError, match="alt"):
        to_svg(three_distributions(solve(), TOKENS, "his"), " ")


def test_every_figure_module_documents_its_figures():
    for info in pkgutil.iter_modules(mha.figures.__path__):
        module = __import__(f"mha.figures.{info.name}", fromlist=["_"])
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ == module.__name__ and not name.startswith("_"):
                assert fn.__doc__, f"mha.figures.{info.name}.{name} has no docstring"


def test_text_drawn_after_new_figure_follows_the_page_colour():
    from mha.figures.style import new_figure

    fig, ax = new_figure(2, 1)
    bars = ax.bar([0, 1], [0.25, 0.75], label="weights")
    ax.bar_label(bars, fmt="%.2f")
    ax.legend()
    svg = to_svg(fig, "two bars")
    texts = svg.count("<text")
    assert texts >= 3
    assert (
        svg.count('style="fill: currentColor') + svg.count("fill: currentColor")
        >= texts
    )


def _figure_macro(page: str):
    """The build's ``figure`` macro (docs/_glue/macros.py), rendering on ``page``."""
    path = Path(__file__).resolve().parents[1] / "docs" / "_glue" / "macros.py"
    spec = importlib.util.spec_from_file_location("macros_under_test", path)
    macros = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(macros)
    root = Path(__file__).resolve().parents[1]
    file = SimpleNamespace(src_uri=page, abs_src_path=str(root / "docs" / page))
    env = SimpleNamespace(macros={}, variables={}, page=None)  # as MkDocs starts
    env.env = SimpleNamespace(filters={}, tests={})  # mkdocs-macros' Jinja's
    env.filter = lambda fn, name: None
    env.macro = lambda fn: env.macros.setdefault(fn.__name__, fn)
    modules = dict(sys.modules)
    try:
        macros.define_env(env)  # it forgets imported mha modules: give them back after
    finally:
        sys.modules.update(modules)
    env.page = SimpleNamespace(file=file, meta={})  # then renders the page
    macros.on_pre_page_macros(env)
    return env.macros["figure"]


def test_figures_are_numbered_and_captioned_and_a_caption_is_required():
    figure = _figure_macro("cricket.md")
    first = figure("three_distributions")
    assert first.startswith('<figure class="mha" id="figure-1">')
    assert "<figcaption><strong>Figure 1.</strong> The weights of" in first
    assert figure("extended").startswith('<figure class="mha" id="figure-2">')
    with pytest.raises(
        LookupError, match=r"docs/cricket\.md:\d*:? .* no figure 'bars'"
    ):
        figure("bars")
    with pytest.raises(ValueError, match="caption: expected a sentence"):
        Figure("cricket.three_distributions", (), "bars", " ")
