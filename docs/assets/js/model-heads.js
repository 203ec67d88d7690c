// Every head of a real model: a grid of buttons, one per head; the chosen head's map
// over a sentence's tokens, its kind, and the arcs of one query (on hover or focus).
// The data is the JSON embedded in the page (src/mha/experiments/head_grid.py writes
// it and documents its layout): weights as 8-bit integers, round(255 w), in base64.
// This script only decodes, draws and formats to 2 decimals: no arithmetic on the
// weights beyond level / 255, no request.
(() => {
  "use strict";
  // cividis (colour-blind safe), nine evenly spaced stops from weight 0 to weight 1,
  // as the heads explorer's maps
  const CIVIDIS = ["#00224e", "#1a386f", "#434e6c", "#61656f", "#7d7c78",
    "#9b9476", "#bcae6c", "#dec958", "#fee838"];
  const LETTERS = {
    "previous token": "P", "next token": "N", "[CLS]": "C", "[SEP]": "S",
    "punctuation": ",", "same word": "W", "first token": "F", "broad": "B", "mixed": "M",
  };
  const SVG = "http://www.w3.org/2000/svg";
  const ROW = 20, ARC_GAP = 90, FONT = 12; // arcs geometry in CSS px (text 12 px)
  let count = 0;

  function el(tag, attrs = {}, text = "", ns = null) {
    const node = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text) node.textContent = text;
    return node;
  }

  const hex = (h) => [1, 3, 5].map((k) => parseInt(h.substr(k, 2), 16));
  function colour(w) {
    const x = Math.min(Math.max(w, 0), 1) * (CIVIDIS.length - 1);
    const i = Math.min(Math.floor(x), CIVIDIS.length - 2);
    const [a, b] = [hex(CIVIDIS[i]), hex(CIVIDIS[i + 1])];
    return a.map((v, k) => Math.round(v + (b[k] - v) * (x - i)));
  }
  // black or white text, whichever stands out more on the cell (WCAG luminance)
  function ink(rgb) {
    const lin = rgb.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    const lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
    return lum > 0.179 ? "#000" : "#fff";
  }
  const label = (token) => token.trim() || "\u2423"; // a lone space shows as ␣
  const headName = (l, h) => `L${l}H${h}`;

  // A sentence's weights: levels[layer][head] rows, decoded once.
  function decode(data, sentence) {
    if (sentence.levels) return sentence.levels;
    const bytes = Uint8Array.from(atob(sentence.weights), (c) => c.charCodeAt(0));
    const n = sentence.tokens.length;
    const perHead = data.causal ? (n * (n + 1)) / 2 : n * n;
    sentence.levels = { bytes, n, perHead };
    return sentence.levels;
  }
  // query q's row of head (l, h): one level per visible key
  function row(data, sentence, l, h, q) {
    const { bytes, n, perHead } = decode(data, sentence);
    const base = (l * data.heads + h) * perHead;
    const start = data.causal ? base + (q * (q + 1)) / 2 : base + q * n;
    return bytes.subarray(start, start + (data.causal ? q + 1 : n));
  }
  const shown = (data, level) => (level / data.levels).toFixed(2);

  function mount(root) {
    const data = JSON.parse(root.querySelector(".mhg-data").textContent);
    const id = `mhg${++count}`;
    const state = { data, layer: 0, head: 0, sentence: 0, query: null, buttons: [] };
    // rows of the grid: the shorter of layers and heads, so the grid is wide, not tall
    const byLayer = data.layers <= data.heads;
    const [rows, cols] = byLayer ? [data.layers, data.heads] : [data.heads, data.layers];
    const at = (r, c) => (byLayer ? [r, c] : [c, r]); // -> [layer, head]

    const chooser = el("select", { id: `${id}-sentence`, class: "mhg-select" });
    data.sentences.forEach((s, i) => chooser.append(el("option", { value: String(i) }, s.text)));
    const chooserLabel = el("label", { for: `${id}-sentence` }, "Sentence ");
    const controls = el("div", { class: "mhg-controls" });
    controls.append(chooserLabel, chooser);

    const legend = el("ul", { class: "mhg-legend", "aria-label": "Kinds of head" });
    data.kindNames.forEach((k) => {
      const item = el("li");
      item.append(el("span", { class: "mhg-swatch", "data-kind": k, "aria-hidden": "true" }, LETTERS[k]), ` ${k}`);
      legend.append(item);
    });

    const grid = el("div", {
      class: "mhg-grid", role: "group",
      "aria-label": `${data.model}: one button per head, ${byLayer ? "a row per layer" : "a column per layer"}`,
    });
    grid.style.gridTemplateColumns = `auto repeat(${cols}, var(--mhg-cell))`;
    if (cols > 24) grid.classList.add("mhg-wide"); // thirty layers: narrower buttons
    grid.append(el("span", { class: "mhg-corner", "aria-hidden": "true" }));
    for (let c = 0; c < cols; c++) grid.append(el("span", { class: "mhg-axis", "aria-hidden": "true" }, String(c)));
    for (let r = 0; r < rows; r++) {
      grid.append(el("span", { class: "mhg-axis", "aria-hidden": "true" }, String(r)));
      state.buttons.push([]);
      for (let c = 0; c < cols; c++) {
        const [l, h] = at(r, c);
        const kind = data.kindNames[data.kinds[l][h]];
        const button = el("button", {
          type: "button", class: "mhg-head", "aria-label": `layer ${l} head ${h}`,
          "aria-pressed": "false", tabindex: "-1", title: `${headName(l, h)}: ${kind}`,
          "data-layer": String(l), "data-head": String(h), "data-kind": kind,
        }, LETTERS[kind]);
        button.addEventListener("click", () => select(state, l, h));
        button.addEventListener("keydown", (event) => move(state, event, r, c, rows, cols));
        state.buttons[r].push(button);
        grid.append(button);
      }
    }
    const axes = el("p", { class: "mhg-axes" },
      byLayer ? "A row per layer, a column per head, numbered from 0:" : "A column per layer, a row per head, numbered from 0:");
    const gridWrap = el("div", { class: "mhg-scroll mhg-gridwrap" });
    gridWrap.append(grid);
    // on a narrow screen the grid scrolls sideways: say which columns are out of view
    state.hint = el("p", { class: "mhg-hint", id: `${id}-hint`, hidden: "" });
    state.gridWrap = gridWrap;
    state.columnLabels = [...grid.querySelectorAll(".mhg-axis")].slice(0, cols);
    state.columnUnit = byLayer ? "heads" : "layers";
    gridWrap.addEventListener("scroll", () => offscreen(state), { passive: true });

    // announced on each choice: the head and its kind (not the whole map)
    state.title = el("p", { class: "mhg-title", id: `${id}-title`, "aria-live": "polite" });
    state.meaning = el("p", { class: "mhg-meaning" });
    const panel = el("section", {
      class: "mhg-panel", role: "region", "aria-labelledby": `${id}-title`,
    });
    state.map = el("div", { class: "mhg-scroll mhg-mapwrap" });
    state.arcs = el("div", { class: "mhg-arcs" });
    const views = el("div", { class: "mhg-views" });
    views.append(state.map, state.arcs);
    panel.append(state.title, state.meaning, views);

    chooser.addEventListener("change", () => {
      state.sentence = Number(chooser.value);
      state.query = null;
      render(state);
    });
    state.at = at;
    state.byLayer = byLayer;
    root.replaceChildren(controls, legend, axes, state.hint, gridWrap, panel);
    root.classList.add("mhg-live");
    select(state, 0, 0);
    new ResizeObserver(() => scrollable(state)).observe(root);
  }

  function move(state, event, r, c, rows, cols) {
    const step = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0] }[event.key];
    if (!step) return;
    event.preventDefault();
    const nr = Math.min(Math.max(r + step[0], 0), rows - 1);
    const nc = Math.min(Math.max(c + step[1], 0), cols - 1);
    const next = state.buttons[nr][nc];
    state.buttons.flat().forEach((b) => b.setAttribute("tabindex", b === next ? "0" : "-1"));
    next.focus();
  }

  function select(state, layer, head) {
    state.layer = layer;
    state.head = head;
    for (const b of state.buttons.flat()) {
      const on = Number(b.dataset.layer) === layer && Number(b.dataset.head) === head;
      b.setAttribute("aria-pressed", String(on));
      b.setAttribute("tabindex", on ? "0" : "-1");
    }
    render(state);
  }

  function render(state) {
    const { data, layer, head } = state;
    const sentence = data.sentences[state.sentence];
    const k = data.kinds[layer][head];
    state.title.textContent = `${headName(layer, head)}: layer ${layer}, head ${head} of ${data.model}. Kind: ${data.kindNames[k]}.`;
    state.meaning.textContent = `A ${data.kindNames[k]} head: ${data.meanings[k]}. Row i is query token i's weights over the tokens; hover or focus a row's token for its arcs.`;
    drawMap(state, sentence);
    drawArcs(state, sentence);
    scrollable(state);
  }

  function drawMap(state, sentence) {
    const { data, layer, head } = state;
    const tokens = sentence.tokens;
    const n = tokens.length;
    const table = el("table", { class: "mhg-map", "data-layer": String(layer), "data-head": String(head) });
    table.append(el("caption", {}, `Attention weights of ${headName(layer, head)} on “${sentence.text}”: a row per query token, a column per key token, each to 2 decimals.`));
    const head_ = el("tr");
    head_.append(el("th", { scope: "col", class: "mhg-corner-cell" }, "query \\ key"));
    tokens.forEach((t, j) => {
      const th = el("th", { scope: "col", class: "mhg-key", title: `key ${j}: ${t}` });
      th.append(el("span", {}, label(t)));
      head_.append(th);
    });
    const thead = el("thead");
    thead.append(head_);
    const tbody = el("tbody");
    for (let q = 0; q < n; q++) {
      const tr = el("tr", { "data-query": String(q) });
      const th = el("th", { scope: "row" });
      const button = el("button", {
        type: "button", class: "mhg-query", "aria-label": `query ${q}: ${label(tokens[q])}, show its arcs`,
      }, label(tokens[q]));
      for (const ev of ["focus", "mouseenter", "click"]) button.addEventListener(ev, () => activate(state, q));
      th.append(button);
      tr.append(th);
      tr.addEventListener("mouseenter", () => activate(state, q));
      const levels = row(data, sentence, layer, head, q);
      for (let j = 0; j < n; j++) {
        if (j >= levels.length) {
          tr.append(el("td", { class: "mhg-masked", title: "a later token: masked" }));
          continue;
        }
        const rgb = colour(levels[j] / data.levels);
        const td = el("td", { "data-key": String(j) }, shown(data, levels[j]));
        td.style.background = `rgb(${rgb.join(",")})`;
        td.style.color = ink(rgb);
        tr.append(td);
      }
      tbody.append(tr);
    }
    table.append(thead, tbody);
    state.map.replaceChildren(table);
  }

  function activate(state, q) {
    if (state.query === q) return;
    state.query = q;
    for (const tr of state.map.querySelectorAll("tbody tr")) tr.classList.toggle("mhg-active", Number(tr.dataset.query) === q);
    drawArcs(state, state.data.sentences[state.sentence]);
  }

  // bertviz-style arcs: queries on the left, keys on the right, a line per key the
  // active query sees, as opaque as its weight, with the weight beside the key
  function drawArcs(state, sentence) {
    const { data, layer, head, query } = state;
    const tokens = sentence.tokens.map(label);
    const n = tokens.length;
    const width = Math.max(...tokens.map((t) => t.length)) * 7.5 + 8;
    const total = width * 2 + ARC_GAP + 40;
    const svg = el("svg", {
      class: "mhg-arcsvg", width: String(total), height: String(n * ROW + 8),
      viewBox: `0 0 ${total} ${n * ROW + 8}`, role: "img",
      "aria-label": query === null
        ? `Arcs of ${headName(layer, head)}: hover or focus a query token to draw them.`
        : `Arcs of ${headName(layer, head)} from query ${query} (${tokens[query]}) to each key, as opaque as its weight.`,
    }, "", SVG);
    const y = (i) => i * ROW + ROW / 2 + 4;
    const lines = el("g", { class: "mhg-lines", "data-query": query === null ? "" : String(query) }, "", SVG);
    if (query !== null) {
      const levels = row(data, sentence, layer, head, query);
      levels.forEach((level, j) => {
        lines.append(el("line", {
          x1: String(width + 4), y1: String(y(query)), x2: String(width + ARC_GAP - 4), y2: String(y(j)),
          "stroke-opacity": String(level / data.levels), "data-key": String(j), "data-weight": shown(data, level),
        }, "", SVG));
        lines.append(el("text", { x: String(total - 2), y: String(y(j) + 4), "text-anchor": "end", class: "mhg-w" }, shown(data, level), SVG));
      });
    }
    svg.append(lines);
    tokens.forEach((t, i) => {
      svg.append(el("text", { x: String(width), y: String(y(i) + 4), "text-anchor": "end", class: i === query ? "mhg-on" : "" }, t, SVG));
      svg.append(el("text", { x: String(width + ARC_GAP), y: String(y(i) + 4), "text-anchor": "start" }, t, SVG));
    });
    svg.style.fontSize = `${FONT}px`;
    state.arcs.replaceChildren(svg);
  }

  // a region wider than the screen scrolls sideways and takes the keyboard's focus
  function scrollable(state) {
    for (const region of state.map.closest(".mha-heads").querySelectorAll(".mhg-scroll")) {
      if (region.scrollWidth > region.clientWidth + 1) {
        region.tabIndex = 0;
        region.setAttribute("role", "region");
        region.setAttribute("aria-label", region.classList.contains("mhg-mapwrap") ? "The head's map (scrolls sideways)" : "The heads (scroll sideways)");
      } else {
        region.removeAttribute("tabindex");
        region.removeAttribute("role");
        region.removeAttribute("aria-label");
      }
    }
    offscreen(state);
  }

  // "Layers 16 to 29 are off screen: scroll the grid →", from what is in view now
  function offscreen(state) {
    const view = state.gridWrap.getBoundingClientRect();
    const out = (test) => state.columnLabels
      .map((label, c) => [c, label.getBoundingClientRect()])
      .filter(([, box]) => test(box)).map(([c]) => c);
    const left = out((box) => box.left < view.left - 1);
    const right = out((box) => box.right > view.right + 1);
    const span = (cs) => (cs.length > 1
      ? `${state.columnUnit} ${cs[0]} to ${cs[cs.length - 1]} are`
      : `${state.columnUnit.slice(0, -1)} ${cs[0]} is`);
    const said = [];
    if (left.length) said.push(`← ${span(left)} off screen to the left`);
    if (right.length) said.push(`${span(right)} off screen: scroll the grid sideways →`);
    const text = said.join("; ");
    state.hint.textContent = text ? text[0].toUpperCase() + text.slice(1) : "";
    state.hint.hidden = !text;
    if (text) state.gridWrap.setAttribute("aria-describedby", state.hint.id);
    else state.gridWrap.removeAttribute("aria-describedby");
  }

  function init() {
    document.querySelectorAll(".mha-heads:not(.mhg-live)").forEach(mount);
  }

  if (window.document$) window.document$.subscribe(() => init());
  else init();
})();
