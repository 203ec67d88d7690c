"""Whether the math of a page has been rendered by KaTeX, read from the live DOM."""

from __future__ import annotations

from dataclasses import dataclass

from playwright.sync_api import Locator, Page

# pymdownx.arithmatex (generic mode) wraps each formula in `.arithmatex` with \( \) or
# \[ \] delimiters; docs/assets/js/katex-init.js replaces them with `.katex` markup.
# Left-over TeX (a delimiter, $$ or a \command) is looked for in the readable text,
# outside code, scripts and KaTeX's own markup.
_RAW_TEX_JS = r"""
(root) => {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const rawTex = [];
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (node.parentElement.closest("pre, code, script, style, .katex")) continue;
    if (/\\[()[\]]|\$\$|\\[a-zA-Z]+/.test(node.textContent)) {
      rawTex.push(node.textContent.trim().slice(0, 80));
    }
  }
  return rawTex;
}
"""
_REPORT_JS = r"""
() => {
  const formulas = [...document.querySelectorAll(".arithmatex")];
  const unrendered = formulas
    .filter((el) => !el.querySelector(".katex"))
    .map((el) => el.textContent.trim().slice(0, 80));
  const errors = [...document.querySelectorAll(".katex-error")]
    .map((el) => el.textContent.trim().slice(0, 80));
  return {
    formulas: formulas.length,
    rendered: document.querySelectorAll(".katex").length,
    unrendered, errors, raw_tex: (RAW_TEX)(document.body),
  };
}
""".replace("RAW_TEX", _RAW_TEX_JS)


@dataclass(frozen=True)
class MathReport:
    """What KaTeX did on a page: counts, and the text of every formula it missed."""

    formulas: int  # .arithmatex elements in the page
    rendered: int  # .katex elements (KaTeX's output)
    unrendered: list[str]  # formulas left without KaTeX output
    errors: list[str]  # formulas KaTeX could not parse
    raw_tex: list[str]  # readable text that still holds TeX

    def problems(self) -> list[str]:
        """One line per formula that a reader would see as raw TeX."""
        missing = (
            ["math present but nothing rendered"]
            if self.formulas and not self.rendered
            else []
        )
        return (
            missing
            + [f"not rendered: {text}" for text in self.unrendered]
            + [f"KaTeX error: {text}" for text in self.errors]
            + [f"raw TeX in the text: {text}" for text in self.raw_tex]
        )


def math_report(page: Page) -> MathReport:
    """Read how the math of the loaded ``page`` was rendered."""
    return MathReport(**page.evaluate(_REPORT_JS))


def raw_tex(element: Locator) -> list[str]:
    """The readable text under ``element`` that still holds TeX."""
    return element.evaluate(_RAW_TEX_JS)
