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

// The delimiters pymdownx.arithmatex leaves in a page, and those of a notebook's
// Markdown cells (mkdocs-jupyter keeps their $...$).
const DISPLAY_DOLLARS = { left: "$$", right: "$$", display: true };
const DOLLARS = { left: "$", right: "$", display: false };
const PAGE_DELIMITERS = [
  DISPLAY_DOLLARS,
  { left: "\\(", right: "\\)", display: false },
  { left: "\\[", right: "\\]", display: true },
];
const NOTEBOOK_DELIMITERS = [DISPLAY_DOLLARS, DOLLARS];

// Search results: Material fills the list as the reader types and scrolls, each
// snippet a piece of a page's text with its formulas' TeX (a notebook's between $),
// set inline here. A word highlighted inside a formula would split its TeX: the
// highlight goes, the formula renders. A formula that a snippet cuts short stays as
// it is, without an error.
const inline = (delimiters) => delimiters.map((d) => ({ ...d, display: false }));

// Whether `text` ends inside a formula of one of `delimiters`: an opening delimiter
// after the last closing one, or an odd number of a delimiter that opens and closes.
function insideFormula(text, delimiters) {
  return delimiters.some(({ left, right }) =>
    left === right
      ? (text.split(left).length - 1) % 2 === 1
      : text.lastIndexOf(left) > text.lastIndexOf(right),
  );
}

function renderSnippets(item) {
  const link = item.querySelector("a");
  const notebook = link && new URL(link.href).pathname.includes("/notebooks/");
  const delimiters = notebook ? [...PAGE_DELIMITERS, DOLLARS] : PAGE_DELIMITERS;
  for (const mark of item.querySelectorAll("mark")) {
    let before = "";
    for (let node = mark.previousSibling; node; node = node.previousSibling) {
      before = node.textContent + before;
    }
    if (insideFormula(before, delimiters)) mark.replaceWith(...mark.childNodes);
  }
  item.normalize(); // a formula's TeX in one text node again
  renderMathInElement(item, {
    delimiters: inline(delimiters),
    errorCallback: () => {},
  });
}

function renderSearchResults(list) {
  new MutationObserver((changes) => {
    for (const { addedNodes } of changes) {
      for (const node of addedNodes) {
        if (node.nodeType === Node.ELEMENT_NODE) renderSnippets(node);
      }
    }
  }).observe(list, { childList: true });
}

document$.subscribe(({ body }) => {
  renderMathInElement(body, { delimiters: PAGE_DELIMITERS, throwOnError: true });
  for (const notebook of body.querySelectorAll(".jupyter-wrapper")) {
    renderMathInElement(notebook, {
      delimiters: NOTEBOOK_DELIMITERS,
      throwOnError: true,
    });
  }
  const results = body.querySelector(".md-search-result__list");
  if (results) renderSearchResults(results);
  // measured once KaTeX's fonts are in: before, the equations are narrower
  document.fonts.ready.then(() => wrapWideDisplays(body));
});
