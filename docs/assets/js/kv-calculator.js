// KV-cache calculator of docs/kv-cache.md: any model's shape -> its cache, side by
// side for the K/V heads entered, full MHA and MQA, and what fits beside the weights.
//
// Its data (the published models) is embedded in the page as JSON
// (mha.pages.kv_cache._calculator_json), so it works from a file:// too. The one
// arithmetic here is a port of two functions of the core, one function each, and a
// browser test (tests/browser/test_kv_calculator.py) compares them with the core on
// generated shapes and every published model:
//   kvCacheBytes  <- mha.accounting.kv_cache_bytes
//   whatFits      <- mha.pages.kv_cache._what_fits
// sizeText writes a size as mha.pages.kv_cache._size_text does (compared the same way).
// Sizes are BigInt: exact for any shape, as Python's integers are.
(() => {
  "use strict";

  function positive(name, value) {
    if (typeof value !== "bigint" || value < 1n) {
      throw new RangeError(`${name}: expected a positive integer, got ${value}`);
    }
    return value;
  }

  // mha.accounting.kv_cache_bytes: 2 * batch * h_kv * d_k * length * itemsize.
  function kvCacheBytes(batch, nKvHeads, dK, length, itemsize) {
    positive("batch", batch);
    positive("n_kv_heads", nKvHeads);
    positive("d_k", dK);
    positive("length", length);
    positive("itemsize", itemsize);
    return 2n * batch * nKvHeads * dK * length * itemsize;
  }

  // 0 (none) or a positive count, as mha.pages.kv_cache._count_or_zero.
  function countOrZero(name, value) {
    return value === 0n ? 0n : positive(name, value);
  }

  // mha.pages.kv_cache._what_fits: the cache, and what fits beside the weights.
  // latent > 0: a layer caches that many values per token (latent attention);
  // window > 0: `windowed` of the layers hold at most `window` tokens.
  function whatFits(layers, kvHeads, headDim, context, batch, itemsize, params, memory,
    latent = 0n, window = 0n, windowedLayers = 0n) {
    positive("layers", layers);
    positive("params", params);
    positive("memory", memory);
    latent = countOrZero("latent", latent);
    window = countOrZero("window", window);
    const windowed = window ? countOrZero("windowed_layers", windowedLayers) : 0n;
    if (windowed > layers) {
      throw new RangeError(
        `windowed_layers: expected at most the ${layers} layers, got ${windowed}`);
    }
    const unit = latent ? latent * positive("itemsize", itemsize)
      : kvCacheBytes(1n, kvHeads, headDim, 1n, itemsize);
    positive("batch", batch);
    positive("context", context);
    const sequence = (tokens) => {
      const held = windowed && tokens > window ? window : tokens;
      return unit * ((layers - windowed) * tokens + windowed * held);
    };
    const weights = params * itemsize;
    const free = memory > weights ? memory - weights : 0n;
    const perToken = batch * unit * layers;
    let longestContext;
    if (!windowed || free < batch * sequence(window)) {
      longestContext = free / perToken;
    } else if (windowed === layers) {
      longestContext = null; // every layer capped: any context fits
    } else {
      const rest = free - batch * sequence(window);
      longestContext = window + rest / (batch * unit * (layers - windowed));
    }
    return {
      cache: batch * sequence(context), weights, memory, free,
      longestContext, largestBatch: free / sequence(context),
    };
  }

  const UNITS = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

  // mha.pages.kv_cache._size_text: 3 significant figures, halves up, trailing zeros
  // dropped, in the largest unit that keeps the size at least 1; thousands separated
  // (only EiB can reach them).
  function sizeText(bytes) {
    positive("n_bytes", bytes);
    let k = 0;
    while (k < UNITS.length - 1 && bytes >= 1024n ** BigInt(k + 1)) k += 1;
    let rounded = Number((Number(bytes) / 1024 ** k).toPrecision(3));
    if (rounded >= 1000 && k < UNITS.length - 1) {
      k += 1;
      rounded = Number((Number(bytes) / 1024 ** k).toPrecision(3));
    }
    return `${rounded.toLocaleString("en-US", { maximumFractionDigits: 20 })} ${UNITS[k]}`;
  }

  const grouped = (n) => n.toLocaleString("en-US");
  const count = (n, unit) => (n === null ? "no limit (every layer windowed)"
    : `${grouped(n)} ${unit}${n === 1n ? "" : "s"}`);

  // The fields, by input name: their accessible names and what they accept.
  const WHOLE = /^[0-9]+$/;
  const DECIMAL = /^[0-9]+(\.[0-9]+)?$/;
  const FIELDS = [
    ["layers", "layers"], ["query_heads", "query heads"], ["kv_heads", "K/V heads"],
    ["head_dim", "head dim"], ["context", "context"], ["batch", "batch"],
    ["itemsize", "bytes per value"], ["params", "parameters"],
    ["memory_gib", "memory (GiB)"], ["latent", "latent width"], ["window", "window"],
    ["windowed_layers", "windowed layers"],
  ];
  const MAY_BE_ZERO = new Set(["latent", "window", "windowed_layers"]);

  function kind(h, hKv) {
    if (hKv === h) return "MHA";
    return hKv === 1n ? "MQA" : `GQA-${hKv}`;
  }

  // The inputs as numbers, or the first problem, naming its field.
  function read(form) {
    const shape = {};
    for (const [name, label] of FIELDS) {
      const text = form.elements[name].value.trim();
      if (name === "memory_gib") {
        const bytes = Math.floor(Number(text) * 2 ** 30);
        if (!DECIMAL.test(text) || !Number.isFinite(bytes) || bytes < 1) {
          return { error: `${label}: enter a positive number of GiB`, field: name };
        }
        shape.memory = BigInt(bytes);
      } else if (MAY_BE_ZERO.has(name)) {
        if (!WHOLE.test(text)) {
          return { error: `${label}: enter a whole number (0 for none)`, field: name };
        }
        shape[name] = BigInt(text);
      } else {
        if (!WHOLE.test(text) || BigInt(text) < 1n) {
          return { error: `${label}: enter a whole number of at least 1`, field: name };
        }
        shape[name] = BigInt(text);
      }
    }
    if (shape.windowed_layers > shape.layers) {
      return {
        error: `windowed layers: enter at most the ${grouped(shape.layers)} layers`,
        field: "windowed_layers",
      };
    }
    if (shape.query_heads % shape.kv_heads !== 0n) {
      return {
        error: `K/V heads: enter a divisor of the query heads (${grouped(shape.query_heads)})`,
        field: "kv_heads",
      };
    }
    return { shape };
  }

  function show(form, models) {
    const set = (id, text) => { form.querySelector(`#${id}`).textContent = text; };
    for (const [name] of FIELDS) form.elements[name].removeAttribute("aria-invalid");
    const { shape, error, field } = read(form);
    form.dataset.valid = error ? "false" : "true";
    set("kv-error", error || "");
    if (error) {
      form.elements[field].setAttribute("aria-invalid", "true");
      for (const cell of form.querySelectorAll(".kv-calculator__out")) cell.textContent = "–";
      set("kv-warning", ""); // a warning about the last valid context no longer applies
      return;
    }
    const columns = { given: shape.kv_heads, mha: shape.query_heads, mqa: 1n };
    let fit;
    for (const [column, kvHeads] of Object.entries(columns)) {
      fit = whatFits(shape.layers, kvHeads, shape.head_dim, shape.context, shape.batch,
        shape.itemsize, shape.params, shape.memory,
        column === "given" ? shape.latent : 0n, shape.window, shape.windowed_layers);
      set(`kv-heads-${column}`, grouped(kvHeads));
      set(`kv-cache-${column}`, sizeText(fit.cache));
      set(`kv-context-${column}`, count(fit.longestContext, "token"));
      set(`kv-batch-${column}`, count(fit.largestBatch, "sequence"));
    }
    set("kv-kind", shape.latent ? "MLA" : kind(shape.query_heads, shape.kv_heads));
    set("kv-weights", `Weights: ${sizeText(fit.weights)} (${grouped(shape.params)} `
      + `parameters × ${shape.itemsize} bytes) in ${sizeText(fit.memory)} of memory, `
      + (fit.free > 0n ? `which leaves ${sizeText(fit.free)} for the cache.`
        : "which they alone exceed: no cache fits."));
    const model = models.find((m) => m.name === form.elements.model.value);
    let warning = "";
    if (model && shape.context > BigInt(model.max_context)) {
      warning = `${grouped(shape.context)} tokens is past the ${grouped(model.max_context)} `
        + `tokens ${model.name} was published for (${model.context_source.title}: `
        + `${model.context_source.where}); past it, quality is unknown.`;
    }
    set("kv-warning", warning);
  }

  // Fill the shape of the chosen model (batch 1, 2 bytes per value, as published).
  function fill(form, model, defaults) {
    const values = {
      layers: model.layers, query_heads: model.query_heads, kv_heads: model.kv_heads,
      head_dim: model.head_dim, params: model.params, latent: model.latent,
      window: model.window, windowed_layers: model.windowed_layers,
      batch: defaults.batch, itemsize: defaults.itemsize,
    };
    for (const [name, value] of Object.entries(values)) {
      form.elements[name].value = String(value);
    }
  }

  function start() {
    const form = document.querySelector("form.kv-calculator");
    const source = document.getElementById("kv-calculator-data");
    if (!form || !source) return;
    const data = JSON.parse(source.textContent);
    form.addEventListener("submit", (event) => event.preventDefault());
    form.elements.model.addEventListener("change", () => {
      const model = data.models.find((m) => m.name === form.elements.model.value);
      if (model) fill(form, model, data.default);
    });
    form.addEventListener("input", () => show(form, data.models));
    form.addEventListener("change", () => show(form, data.models));
    show(form, data.models);
    form.dataset.ready = "true";
  }

  // For the browser test, which compares the port with the core.
  window.mhaKvCalculator = { kvCacheBytes, whatFits, sizeText };

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
