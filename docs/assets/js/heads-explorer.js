// Heads explorer: renders heatmaps and the softmax arithmetic of one row.
// Every number comes from the JSON that the build writes (src/mha/pages/heads_explorer.py,
// which documents its schema); this script only draws and formats, no attention math.
(() => {
  "use strict";
  const DATA = new URL("../data/heads-explorer.json", document.currentScript.src);
  // cividis (colour-blind safe), nine evenly spaced stops from weight 0 to weight 1.
  const CIVIDIS = ["#00224e", "#1a386f", "#434e6c", "#61656f", "#7d7c78",
    "#9b9476", "#bcae6c", "#dec958", "#fee838"];
  const SVG = "http://www.w3.org/2000/svg";
  const CELL = 28, LEFT = 64, TOP = 64; // heatmap geometry in SVG units
  let data = null;
  let idCount = 0;

  const fmt = (x) => x.toFixed(4);
  const name = (t) => `“${t.token}” (position ${t.position})`;

  function colour(w) {
    const x = Math.min(Math.max(w, 0), 1) * (CIVIDIS.length - 1);
    const i = Math.min(Math.floor(x), CIVIDIS.length - 2);
    const [a, b] = [CIVIDIS[i], CIVIDIS[i + 1]].map((h) => [1, 3, 5].map((k) => parseInt(h.substr(k, 2), 16)));
    return `rgb(${a.map((v, k) => Math.round(v + (b[k] - v) * (x - i))).join(",")})`;
  }

  function el(tag, attrs = {}, text = "", ns = null) {
    const node = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text) node.textContent = text;
    return node;
  }

  function heatmap(ex, config, h, state) {
    const head = config.heads[h];
    const nq = ex.queries.length, nk = ex.keys.length;
    const figure = el("figure", { class: "mhx-map" });
    const caption = el("figcaption", { id: `mhx-${++idCount}` }, `Head ${h + 1}: ${head.name}`);
    const svg = el("svg", {
      viewBox: `0 0 ${LEFT + nk * CELL + 4} ${TOP + nq * CELL + 4}`,
      width: (LEFT + nk * CELL + 4) * 1.25, role: "group", "aria-labelledby": caption.id,
    }, "", SVG);
    ex.keys.forEach((k, j) => {
      const x = LEFT + (j + 0.5) * CELL, y = TOP - 6;
      svg.append(el("text", { x, y, class: "mhx-key", transform: `rotate(-90 ${x} ${y})` }, k.token, SVG));
    });
    const rows = head.rows.map((row, i) => {
      const g = el("g", {
        class: "mhx-row", role: "button", tabindex: i === state.query ? "0" : "-1",
        "aria-label": `${ex.queries[i].token}, position ${ex.queries[i].position}, head ${h + 1}`,
      }, "", SVG);
      const y = TOP + i * CELL;
      g.append(el("rect", { class: "mhx-frame", x: 1, y: y + 1, width: LEFT + nk * CELL, height: CELL - 2 }, "", SVG));
      g.append(el("text", { x: LEFT - 8, y: y + CELL / 2, class: "mhx-query" }, ex.queries[i].token, SVG));
      row.weights.forEach((w, j) => {
        const cell = el("rect", { x: LEFT + j * CELL, y, width: CELL, height: CELL, fill: colour(w), class: "mhx-cell" }, "", SVG);
        cell.append(el("title", {}, `${ex.queries[i].token} → ${ex.keys[j].token}: ${fmt(w)}`, SVG));
        g.append(cell);
      });
      if (state.selected && state.selected.head === h && state.selected.query === i) g.setAttribute("aria-current", "true");
      g.addEventListener("click", () => select(state, h, i));
      g.addEventListener("keydown", (event) => onKey(event, state, h, i));
      svg.append(g);
      return g;
    });
    state.rows.push(rows);
    figure.append(caption, svg);
    return figure;
  }

  function onKey(event, state, h, i) {
    const nq = state.rows[h].length, nh = state.rows.length;
    const moves = { ArrowDown: [h, i + 1], ArrowUp: [h, i - 1], Home: [h, 0], End: [h, nq - 1],
      ArrowRight: [h + 1, i], ArrowLeft: [h - 1, i] };
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      select(state, h, i);
    } else if (event.key in moves) {
      event.preventDefault();
      const [h2, i2] = moves[event.key];
      if (h2 >= 0 && h2 < nh && i2 >= 0 && i2 < nq) focusRow(state, h2, i2);
    }
  }

  function focusRow(state, h, i) {
    state.query = i;
    state.rows.forEach((rows) => rows.forEach((g, k) => g.setAttribute("tabindex", k === i ? "0" : "-1")));
    state.rows[h][i].focus();
  }

  function select(state, h, i) {
    state.selected = { head: h, query: i };
    state.query = i;
    state.rows.forEach((rows, hh) => rows.forEach((g, k) => {
      g.setAttribute("tabindex", k === i ? "0" : "-1");
      if (hh === h && k === i) g.setAttribute("aria-current", "true");
      else g.removeAttribute("aria-current");
    }));
    arithmetic(state);
  }

  function arithmetic(state) {
    const panel = state.panel;
    panel.replaceChildren();
    if (!state.selected) {
      panel.append(el("p", { class: "mhx-hint" }, "Select a row (click it, or focus it and press Enter) to see its arithmetic."));
      return;
    }
    const { ex, config } = state, { head: h, query: i } = state.selected;
    const head = config.heads[h], row = head.rows[i];
    panel.append(el("h3", {}, `The softmax arithmetic of ${name(ex.queries[i])} in head ${h + 1} of ${config.n_heads}: ${head.name}`));
    panel.append(el("p", {}, `Scale: √d_k = √${config.d_k} = ${fmt(config.scale)}. Each weight is exp(score) divided by the sum of the exps.`));
    const wrap = el("div", { class: "mhx-scroll", tabindex: "0", role: "region", "aria-label": "Arithmetic table" });
    const table = el("table", { class: "mhx-table" });
    const headRow = el("tr");
    for (const t of ["key", "q·k", "score = q·k / √d_k", "exp(score)", "weight"]) headRow.append(el("th", { scope: "col" }, t));
    table.append(el("thead"), el("tbody"), el("tfoot"));
    table.tHead.append(headRow);
    ex.keys.forEach((k, j) => {
      const tr = el("tr");
      tr.append(el("th", { scope: "row" }, `${k.token} (${k.position})`));
      for (const v of [row.dots[j], row.scores[j], row.exps[j], row.weights[j]]) tr.append(el("td", {}, fmt(v)));
      table.tBodies[0].append(tr);
    });
    const sum = el("tr");
    sum.append(el("th", { scope: "row" }, "sum"), el("td"), el("td"), el("td", {}, fmt(row.sum)), el("td"));
    table.tFoot.append(sum);
    wrap.append(table);
    panel.append(wrap);
    panel.append(el("p", { class: "mhx-output" }, `Output, Σ weight · v (d_k = ${config.d_k} numbers): [${row.output.map(fmt).join(", ")}]`));
  }

  function render(state, n) {
    const ex = state.ex;
    state.config = ex.configs.find((c) => c.n_heads === n);
    state.rows = [];
    if (state.selected) state.selected = { head: 0, query: state.selected.query };
    state.buttons.forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.heads === String(n))));
    state.maps.replaceChildren(...state.config.heads.map((_, h) => heatmap(ex, state.config, h, state)));
    arithmetic(state);
  }

  function mount(root) {
    const ex = data.examples[root.dataset.example];
    const state = { ex, query: 0, selected: null };
    const bar = el("div", { class: "mhx-toolbar", role: "group", "aria-label": "Number of heads" });
    state.buttons = ex.configs.map((c) => {
      const b = el("button", { type: "button", class: "mhx-toggle", "data-heads": c.n_heads, "aria-pressed": "false" }, c.label);
      b.addEventListener("click", () => render(state, c.n_heads));
      bar.append(b);
      return b;
    });
    const legend = el("p", { class: "mhx-legend" });
    legend.append(el("span", {}, "weight 0"), el("span", { class: "mhx-ramp", "aria-hidden": "true" }), el("span", {}, "1"));
    const help = el("p", { class: "mhx-hint" }, "Rows are queries, columns are keys. Tab to a heatmap, move between rows with the arrow keys, press Enter to show a row's arithmetic.");
    state.maps = el("div", { class: "mhx-maps" });
    state.panel = el("section", { class: "mhx-arithmetic", "aria-live": "polite" });
    root.replaceChildren(bar, help, legend, state.maps, state.panel);
    root.classList.add("mhx-live");
    render(state, Math.max(...ex.configs.map((c) => c.n_heads)));
  }

  async function init() {
    const roots = document.querySelectorAll(".mha-explorer:not(.mhx-live)");
    if (!roots.length) return;
    if (!data) {
      const response = await fetch(DATA);
      if (!response.ok) throw new Error(`heads explorer: ${DATA} answered ${response.status}`);
      data = await response.json();
    }
    roots.forEach(mount);
  }

  if (window.document$) window.document$.subscribe(() => init());
  else init();
})();
