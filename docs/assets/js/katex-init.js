// Render the math that pymdownx.arithmatex (generic mode) leaves in the page.
// A display equation wider than its column (on a phone) is rendered again as
// \displaystyle inline math, which KaTeX lets the browser break after a relation or
// an operator, instead of a line that scrolls out of sight.
function wrapWideDisplays(root) {
  for (const display of root.querySelectorAll(".katex-display")) {
    if (display.scrollWidth <= display.clientWidth + 1) continue;
    const tex = display.querySelector('annotation[encoding="application/x-tex"]');
    if (!tex) continue;
    const wrap = document.createElement("span");
    wrap.className = "mha-math-wrap";
    katex.render(`\\displaystyle ${tex.textContent}`, wrap, {
      displayMode: false,
      throwOnError: true,
    });
    display.replaceWith(wrap);
  }
}

document$.subscribe(({ body }) => {
  renderMathInElement(body, {
    delimiters: [
      { left: "$$", right: "$$", display: true },
      { left: "\\(", right: "\\)", display: false },
      { left: "\\[", right: "\\]", display: true },
    ],
    throwOnError: true,
  });
  // Notebook pages (mkdocs-jupyter) keep the $...$ of their Markdown cells.
  for (const notebook of body.querySelectorAll(".jupyter-wrapper")) {
    renderMathInElement(notebook, {
      delimiters: [
        { left: "$$", right: "$$", display: true },
        { left: "$", right: "$", display: false },
      ],
      throwOnError: true,
    });
  }
  // measured once KaTeX's fonts are in: before, the equations are narrower
  document.fonts.ready.then(() => wrapWideDisplays(body));
});
