// Render the math that pymdownx.arithmatex (generic mode) leaves in the page.
// A display equation wider than its column (on a phone) is split where it sets two
// equations side by side (a \qquad outside braces), each on a line of its own; a
// line still too wide is rendered again as \displaystyle inline math, which KaTeX
// lets the browser break after a relation or an operator, instead of a line that
// scrolls out of sight.
const tooWide = (e) => e.scrollWidth > e.clientWidth + 1;

// The equations of a display set side by side with \qquad at the top level.
function sideBySide(tex) {
  if (tex.includes("\\begin")) return [tex]; // an environment lays out its own lines
  const parts = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < tex.length; i++) {
    if (tex[i] === "{") depth += 1;
    else if (tex[i] === "}") depth -= 1;
    else if (tex[i] === "\\") {
      const word = /^\\[a-zA-Z]+/.exec(tex.slice(i));
      if (word && word[0] === "\\qquad" && depth === 0) {
        parts.push(tex.slice(start, i));
        start = i + word[0].length;
      }
      i += word ? word[0].length - 1 : 1; // a command, or an escaped character
    }
  }
  parts.push(tex.slice(start));
  return parts.map((part) => part.trim()).filter(Boolean);
}

function wrapWideDisplays(root) {
  for (const display of root.querySelectorAll(".katex-display")) {
    if (!tooWide(display)) continue;
    const tex = display.querySelector('annotation[encoding="application/x-tex"]');
    if (!tex) continue;
    const wrap = document.createElement("span");
    wrap.className = "mha-math-wrap";
    const lines = sideBySide(tex.textContent).map((part) => {
      const line = document.createElement("span");
      line.className = "mha-math-line";
      katex.render(part, line, { displayMode: true, throwOnError: true });
      wrap.append(line);
      return [line, part];
    });
    display.replaceWith(wrap);
    for (const [line, part] of lines) {
      if (!tooWide(line.querySelector(".katex-display"))) continue;
      katex.render(`\\displaystyle ${part}`, line, {
        displayMode: false,
        throwOnError: true,
      });
    }
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
