// Heads explorer: heatmaps of attention weights and the arithmetic of one row.
// Every number comes from the JSON embedded in the page (written at build time by
// src/mha/pages/heads_explorer.py, which documents its schema); this script only
// draws and formats: no attention arithmetic, no request.
(() => {
  "use strict";
  // cividis (colour-blind safe), nine evenly spaced stops from weight 0 to weight 1.
  const CIVIDIS = ["#00224e", "#1a386f", "#434e6c", "#61656f", "#7d7c78",
    "#9b9476", "#bcae6c", "#dec958", "#fee838"];
  const SVG = "http://www.w3.org/2000/svg";
  const CELL = 34, LEFT = 58, TOP = 58; // heatmap geometry in SVG units (text: 16)
  let idCount = 0;

  // Formatting only: each value is printed as stored, to a fixed precision.
  const fixed = (x, d) => x.toFixed(d);
  const dot = (x) => (Number.isInteger(x) ? String(x) : x.toFixed(2));
  const big = (x) => (x >= 100 ? Math.round(x).toLocaleString("en-US") : x >= 10 ? x.toFixed(2) : x.toFixed(3));
  const name = (t) => `“${t.token}” (position ${t.position})`;

  function colour(w) {
    const x = Math.min(Math.max(w, 0), 1) * (CIVIDIS.length - 1);
    const i = Math.min(Math.floor(x), CIVIDIS.length - 2);
    const [a, b] = [CIVIDIS[i], CIVIDIS[i + 1]].map((h) => [1, 3, 5].map((k) => parseInt(h.substr(k, 2), 16)));
    return a.map((v, k) => Math.round(v + (b[k] - v) * (x - i)));
  }
  // black or white text, whichever stands out more on the cell (WCAG luminance),
  // as on the real models' maps
  function ink(rgb) {
    const lin = rgb.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] > 0.179 ? "#000" : "#fff";
  }

  function el(tag, attrs = {}, text = "", ns = null) {
    const node = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text) node.textContent = text;
    return node;
  }

  const variant = (state) => state.ex.variants[state.variant];
  const configOf = (state, n) => variant(state).configs.find((c) => c.n_heads === n);
  const headLabel = (config, h) => `H${h} of ${config.label}`;

  // The maps a mode shows: [n_heads, head index] pairs.
  function mapsOf(state) {
    const counts = state.mode === "side" ? [state.least, state.most] : [state.mode];
    return counts.flatMap((n) => configOf(state, n).heads.map((_, h) => [n, h]));
  }

  function heatmap(state, m, n, h) {
    const ex = state.ex, config = configOf(state, n), head = config.heads[h];
    const nq = ex.queries.length, nk = ex.keys.length;
    const figure = el("figure", { class: "mhx-map" });
    const caption = el("figcaption", { id: `mhx-${++idCount}` }, `${config.label} · H${h}: ${head.name}`);
    const width = LEFT + nk * CELL + 4, height = TOP + nq * CELL + 4;
    const svg = el("svg", { viewBox: `0 0 ${width} ${height}`, role: "group", "aria-labelledby": caption.id }, "", SVG);
    svg.style.maxWidth = `${Math.round(width * 0.75)}px`; // a map of few keys stays small
    ex.keys.forEach((k, j) => {
      const x = LEFT + (j + 0.5) * CELL, y = TOP - 6;
      svg.append(el("text", { x, y, class: "mhx-key", transform: `rotate(-90 ${x} ${y})` }, k.token, SVG));
    });
    const rows = head.rows.map((row, i) => {
      const g = el("g", {
        class: "mhx-row", role: "button", tabindex: i === state.query ? "0" : "-1",
        "aria-label": `${ex.queries[i].token}, position ${ex.queries[i].position}, ${headLabel(config, h)}`,
      }, "", SVG);
      const y = TOP + i * CELL;
      g.append(el("rect", { class: "mhx-frame", x: 1, y: y + 1, width: LEFT + nk * CELL, height: CELL - 2 }, "", SVG));
      g.append(el("text", { x: LEFT - 6, y: y + CELL / 2, class: "mhx-query" }, ex.queries[i].token, SVG));
      row.weights.forEach((w, j) => {
        const rgb = colour(w);
        const cell = el("rect", { x: LEFT + j * CELL, y, width: CELL, height: CELL, fill: `rgb(${rgb.join(",")})`, class: "mhx-cell" }, "", SVG);
        cell.append(el("title", {}, `${ex.queries[i].token} → ${ex.keys[j].token}: ${fixed(w, 3)}`, SVG));
        // the weight itself, printed in its cell (2 decimals; 3 in the title and the panel)
        const value = el("text", { x: LEFT + (j + 0.5) * CELL, y: y + CELL / 2, class: "mhx-value", "aria-hidden": "true" }, fixed(w, 2), SVG);
        value.style.fill = ink(rgb);
        g.append(cell, value);
      });
      const sel = state.selected;
      if (sel && sel.n === n && sel.h === h && sel.query === i) g.setAttribute("aria-current", "true");
      g.addEventListener("click", () => select(state, m, i));
      g.addEventListener("keydown", (event) => onKey(event, state, m, i));
      svg.append(g);
      return g;
    });
    state.rows.push(rows);
    figure.append(caption, svg);
    return figure;
  }

  function onKey(event, state, m, i) {
    const nq = state.rows[m].length, nm = state.rows.length;
    const moves = { ArrowDown: [m, i + 1], ArrowUp: [m, i - 1], Home: [m, 0], End: [m, nq - 1],
      ArrowRight: [m + 1, i], ArrowLeft: [m - 1, i] };
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      select(state, m, i);
    } else if (event.key in moves) {
      event.preventDefault();
      const [m2, i2] = moves[event.key];
      if (m2 >= 0 && m2 < nm && i2 >= 0 && i2 < nq) focusRow(state, m2, i2);
    }
  }

  function roving(state, i) {
    state.query = i;
    state.rows.forEach((rows) => rows.forEach((g, k) => g.setAttribute("tabindex", k === i ? "0" : "-1")));
  }

  function focusRow(state, m, i) {
    roving(state, i);
    state.rows[m][i].focus();
  }

  function select(state, m, i) {
    const [n, h] = state.maps[m];
    const relation = configOf(state, n).heads[h].relations[0];
    state.selected = { n, h, query: i, relation };
    roving(state, i);
    state.rows.forEach((rows, mm) => rows.forEach((g, k) => {
      if (mm === m && k === i) g.setAttribute("aria-current", "true");
      else g.removeAttribute("aria-current");
    }));
    arithmetic(state);
    place(state);
    reveal(state);
  }

  // The panel goes right under the row of maps that holds the selected map.
  function place(state) {
    const figures = [...state.mapBox.querySelectorAll(".mhx-map")];
    state.mapBox.append(state.panel); // measure the maps without the panel among them
    const m = state.selectedMap();
    if (m < 0) return;
    const top = figures[m].offsetTop;
    const last = figures.filter((f) => Math.abs(f.offsetTop - top) < 2).pop();
    last.after(state.panel);
  }

  // Bring the panel's heading and breakdown into view, keeping the map's top in view.
  function reveal(state) {
    const m = state.selectedMap();
    if (m < 0) return;
    const figure = state.mapBox.querySelectorAll(".mhx-map")[m];
    const header = document.querySelector(".md-header");
    const top = header ? header.getBoundingClientRect().bottom : 0;
    const bottom = state.breakdown.getBoundingClientRect().bottom + 8;
    const need = bottom - window.innerHeight;
    if (need > 0) {
      const room = figure.getBoundingClientRect().top - top - 4;
      window.scrollBy({ top: Math.min(need, Math.max(room, 0)), behavior: "instant" });
    }
  }

  function arithmetic(state) {
    const panel = state.panel, ex = state.ex, rel = ex.relations;
    panel.replaceChildren();
    const heading = el("h3", { id: state.headingId });
    panel.append(heading);
    if (!state.selected) {
      heading.textContent = "The arithmetic of a row";
      panel.append(el("p", { class: "mhx-hint" }, "Select a row (click it, or focus it and press Enter) to see its arithmetic here."));
      state.breakdown = heading;
      return;
    }
    const { n, h, query: i } = state.selected;
    const config = configOf(state, n), head = config.heads[h], row = head.rows[i];
    const parts = variant(state).contributions;
    heading.textContent = `The arithmetic of ${name(ex.queries[i])} in ${headLabel(config, h)}`;
    const mine = head.relations.map((r) => rel[r]);
    const others = rel.filter((_, r) => !head.relations.includes(r));
    const joined = (names) => names.join(" + ");
    let intro = mine.length > 1
      ? `q·k = ${joined(mine)}: the sum of the contributions of the relations this head holds.`
      : `q·k = ${mine[0]}, the one relation this head holds.`;
    if (others.length) intro += ` (${others.join(", ")}: in other heads.)`;
    panel.append(el("p", { class: "mhx-step" }, `1. ${intro}`));
    const table = el("table", { class: "mhx-table mhx-breakdown" });
    const headRow = el("tr");
    for (const t of ["key", joined(mine), "q·k", "score", "exp", "weight"]) headRow.append(el("th", { scope: "col" }, t));
    table.append(el("thead"), el("tbody"), el("tfoot"));
    table.tHead.append(headRow);
    ex.keys.forEach((k, j) => {
      const tr = el("tr");
      tr.append(el("th", { scope: "row" }, k.token));
      tr.append(el("td", { class: "mhx-part" }, head.relations.map((r) => dot(parts[r][i][j])).join("+")));
      tr.append(el("td", {}, dot(row.dots[j])), el("td", {}, fixed(row.scores[j], 3)),
        el("td", {}, big(row.exps[j])), el("td", { class: "mhx-weight" }, fixed(row.weights[j], 3)));
      table.tBodies[0].append(tr);
    });
    const sum = el("tr");
    sum.append(el("th", { scope: "row", colspan: "4" }, "Σ exp"), el("td", {}, big(row.sum)), el("td"));
    table.tFoot.append(sum);
    const wrap = el("div", { class: "mhx-scroll", tabindex: "0", role: "region", "aria-label": "Breakdown table" });
    wrap.append(table);
    panel.append(wrap);
    state.breakdown = table;
    panel.append(el("p", { class: "mhx-step" }, `2. Scaling: score = q·k / √d_k, with √${config.d_k} = ${fixed(config.scale, 3)}.`));
    panel.append(el("p", { class: "mhx-step" }, `3. Softmax: exp = exp(score), weight = exp / Σ exp, with Σ exp = ${big(row.sum)}. The weights are the row of the map.`));
  }

  function render(state) {
    const old = state.selected;
    state.maps = mapsOf(state);
    if (old) { // keep the row; keep the head, or else the head that holds its relation
      const found = state.maps.find(([n, h]) => n === old.n && h === old.h)
        || state.maps.find(([n, h]) => configOf(state, n).heads[h].relations.includes(old.relation));
      state.selected = { n: found[0], h: found[1], query: old.query, relation: old.relation };
    }
    state.rows = [];
    state.buttons.forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.mode === String(state.mode))));
    state.mapBox.replaceChildren(...state.maps.map(([n, h], m) => heatmap(state, m, n, h)));
    arithmetic(state);
    place(state);
  }

  function mount(root) {
    const ex = JSON.parse(root.querySelector("script.mhx-data").textContent);
    const counts = ex.variants[0].configs.map((c) => c.n_heads);
    const state = { ex, variant: ex.default, query: 0, selected: null, least: Math.min(...counts), most: Math.max(...counts) };
    state.headingId = `mhx-${++idCount}`;
    state.selectedMap = () => (state.selected
      ? state.maps.findIndex(([n, h]) => n === state.selected.n && h === state.selected.h) : -1);
    const bar = el("div", { class: "mhx-toolbar", role: "group", "aria-label": "Number of heads" });
    const modes = [...counts.map((n) => [String(n), configOf(state, n).label]),
      ["side", `${state.least} and ${state.most} heads side by side`]];
    state.buttons = modes.map(([mode, label]) => {
      const b = el("button", { type: "button", class: "mhx-toggle", "data-mode": mode, "aria-pressed": "false" }, label);
      b.addEventListener("click", () => {
        state.mode = mode === "side" ? "side" : Number(mode);
        render(state);
      });
      bar.append(b);
      return b;
    });
    const parts = [bar];
    if (ex.sinks.length) {
      const id = `mhx-${++idCount}`;
      const box = el("div", { class: "mhx-slider" });
      const label = el("label", { for: id }, "Sink strength");
      const input = el("input", { id, type: "range", min: "0", max: String(ex.sinks.length - 1), step: "1", value: String(ex.default) });
      const shown = el("output", { for: id, class: "mhx-sink" });
      const summary = el("p", { class: "mhx-summary", "aria-live": "polite" });
      const update = () => {
        state.variant = Number(input.value);
        const sink = ex.sinks[state.variant];
        input.setAttribute("aria-valuetext", String(sink));
        shown.textContent = String(sink);
        summary.textContent = variant(state).summary;
      };
      input.addEventListener("input", () => {
        update();
        render(state);
      });
      update();
      box.append(label, input, shown);
      parts.push(box, summary);
    }
    const legend = el("p", { class: "mhx-legend" });
    legend.append(el("span", {}, "weight 0"), el("span", { class: "mhx-ramp", "aria-hidden": "true" }), el("span", {}, "1"));
    parts.push(legend);
    state.mapBox = el("div", { class: "mhx-maps" });
    state.panel = el("section", { class: "mhx-arithmetic", role: "region", "aria-labelledby": state.headingId, "aria-live": "polite" });
    parts.push(state.mapBox);
    root.replaceChildren(...parts);
    root.classList.add("mhx-live");
    state.mode = "side";
    render(state);
    let width = window.innerWidth;
    window.addEventListener("resize", () => {
      if (window.innerWidth !== width) { width = window.innerWidth; place(state); }
    });
  }

  function init() {
    document.querySelectorAll(".mha-explorer:not(.mhx-live)").forEach(mount);
  }

  if (window.document$) window.document$.subscribe(() => init());
  else init();
})();
