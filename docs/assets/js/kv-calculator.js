// KV-cache calculator: model, context length, batch and dtype -> cache size.
// The per-token bytes of every model come from the JSON the build writes
// (src/mha/pages/kv_cache.py documents its schema); this script only multiplies them by
// the tokens held (the context, capped by a sliding window) and the batch.
(() => {
  "use strict";
  const DATA = new URL("../data/kv-cache.json", document.currentScript.src);

  const grouped = (n) => n.toLocaleString("en-US");

  function show(form, data) {
    const model = data.models.find((m) => m.name === form.elements.model.value);
    const dtype = form.elements.dtype.value;
    const context = Number(form.elements.context.value);
    const batch = Number(form.elements.batch.value);
    const output = form.querySelector("output");
    if (!model || !(dtype in model.bytes_per_token)
        || !Number.isInteger(context) || context < 1
        || !Number.isInteger(batch) || batch < 1) {
      output.textContent = "enter a whole number of at least one token and one sequence";
      return;
    }
    const held = model.window === null ? context : Math.min(context, model.window);
    const bytes = model.bytes_per_token[dtype] * held * batch;
    if (!Number.isSafeInteger(bytes)) {
      output.textContent = "too large to count exactly: lower the context or the batch";
      return;
    }
    const note = held < context ? ` (its sliding window holds ${grouped(held)} tokens)` : "";
    output.textContent = `${(bytes / data.unit.bytes).toFixed(2)} ${data.unit.name} `
      + `(${grouped(bytes)} bytes)${note}`;
    output.dataset.bytes = String(bytes);
  }

  async function start() {
    const forms = document.querySelectorAll("form.kv-calculator");
    if (forms.length === 0) return;
    const response = await fetch(DATA);
    if (!response.ok) throw new Error(`kv-calculator: ${DATA} answered ${response.status}`);
    const data = await response.json();
    for (const form of forms) {
      form.addEventListener("input", () => show(form, data));
      form.addEventListener("submit", (event) => event.preventDefault());
      show(form, data);
      form.dataset.ready = "true";
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
