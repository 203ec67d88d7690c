"""What a reader sees of a page's figures, widgets, tables and equations at one width.

`measure` reads it from the live DOM (in the browser, once the page has loaded);
tests/browser/test_legibility.py says what the numbers must be.
"""

from __future__ import annotations

from playwright.sync_api import Page

# Runs in the page. Figures hidden by their page (the heads explorer's static
# stand-in, shown without JavaScript and in print) are shown while they are measured.
MEASURE = r"""
() => {
  const shown = (e) => e.getClientRects().length > 0
    && getComputedStyle(e).visibility !== "hidden";
  const smallest = (root) => {
    let best = null;
    for (const e of root.querySelectorAll("*")) {
      const own = [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
      if (!own || !shown(e)) continue;
      let px = parseFloat(getComputedStyle(e).fontSize);
      if (e instanceof SVGElement) {
        const m = e.getScreenCTM();
        px *= Math.min(Math.hypot(m.a, m.b), Math.hypot(m.c, m.d));
      }
      if (!best || px < best.px) best = { px, text: e.textContent.trim().slice(0, 40) };
    }
    return best;
  };
  const unhide = (e) => {
    const hidden = [];
    for (let a = e; a; a = a.parentElement) {
      if (getComputedStyle(a).display === "none") {
        hidden.push([a, a.style.display]);
        a.style.display = "block";
      }
    }
    return hidden;
  };
  const figures = [...document.querySelectorAll("figure.mha")].map((f) => {
    const hidden = unhide(f);
    const caption = f.querySelector(":scope > figcaption");
    const box = f.getBoundingClientRect();
    const result = {
      id: f.id,
      caption: caption && shown(caption) ? caption.textContent.trim() : null,
      smallest: smallest(f.querySelector(".mha-scroll") || f),
      right: box.right,
    };
    for (const [a, display] of hidden) a.style.display = display;
    return result;
  });
  // a notebook's cell output is not a numbered figure (mkdocs-jupyter has no macro);
  // its drawings are measured with the widgets
  const loose = [...document.querySelectorAll("svg.mha-figure, .mha-panels")]
    .filter((e) => !e.closest("figure.mha, .jupyter-wrapper")).length;
  const widgets = [...document.querySelectorAll(
    ".mha-explorer, form.kv-calculator, .jupyter-wrapper svg.mha-figure",
  )]
    .filter(shown)
    .map((w) => ({ name: w.getAttribute("class"), smallest: smallest(w) }));
  const cut = (selector) => [...document.querySelectorAll(selector)]
    .filter((e) => e.scrollWidth > e.clientWidth + 1)
    .map((e) => e.textContent.trim().slice(0, 60));
  // a table hides a column when a cell's text ends past the visible part of its
  // scrolling wrapper (overflow made of padding alone hides nothing); a table folded
  // in a <details> is measured open, as its reader sees it (folded, it is not laid
  // out, and its wrapper's edge can read 0)
  const folded = [...document.querySelectorAll("details:not([open])")];
  for (const details of folded) details.open = true;
  const hiddenCells = [...document.querySelectorAll(".md-typeset__scrollwrap")]
    .flatMap((wrap) => {
      const edge = wrap.getBoundingClientRect().right;
      return [...wrap.querySelectorAll("th, td")].filter((cell) => {
        const text = document.createRange();
        text.selectNodeContents(cell);
        return [...text.getClientRects()].some((r) => r.width && r.right > edge + 1);
      }).map((cell) => cell.textContent.trim().slice(0, 40));
    });
  // every code block, a notebook's cells too: a line longer than its box scrolls
  const code = cut(".md-typeset pre > code, .jupyter-wrapper .highlight pre");
  for (const details of folded) details.open = false;
  // a display of equations set side by side (\qquad) that was broken into lines as
  // one run of math: one equation's name can end a line, its definition start the next
  const runTogether = [...document.querySelectorAll(".md-typeset .mha-math-wrap .katex")]
    .filter((k) => !k.closest(".katex-display"))
    .map((k) => k.querySelector('annotation[encoding="application/x-tex"]'))
    .filter((tex) => tex && /\\qquad/.test(tex.textContent))
    .map((tex) => tex.textContent.trim().slice(0, 60));
  return {
    figures, loose, widgets, runTogether,
    tables: hiddenCells,
    code,
    printed: cut(".md-typeset .highlight + .highlight code:not(:has(span))"),
    equations: cut(".md-typeset .katex-display"),
    viewport: innerWidth,
  };
}
"""

# The heads explorer draws its maps once its data is read.
_EXPLORERS_LIVE = (
    "[...document.querySelectorAll('.mha-explorer')]"
    ".every((e) => e.classList.contains('mhx-live'))"
)


def measure(page: Page) -> dict:
    """The report of ``MEASURE`` on the loaded ``page``, once its widgets have drawn."""
    page.wait_for_function(_EXPLORERS_LIVE)
    return page.evaluate(MEASURE)
