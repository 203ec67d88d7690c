// The evidence beside a guarded sentence (mha_site.evidence): its marker, a button,
// opens its popover on hover (with a pointer that hovers), on keyboard focus, and on
// a click or tap, beside the marker. A popover opened by hover or focus closes when
// both the pointer and the focus have left the marker and the popover; a click pins
// it open, and a second click, Escape or a click elsewhere closes it. One is open at
// a time; aria-expanded follows. The popovers are "manual" (the script dismisses
// them), so that a tap on the marker of an open one is not first a dismissal and
// then a reopening. Delegated from the document.
//
// A printed number (<m-n>, mha_site.traced) opens one shared popover on hover or
// tap: the attribute it was read from and its value's item of the foot's list of
// sources. Not a tab stop (a page prints hundreds): that list serves the keyboard.
//
// What the popovers and the list hold is in the page's evidence file, written
// beside it at build (docs/_glue/numbers.py): fetched once, on the first marker,
// number or list opened. A popover waits for it a moment, then says it is loading;
// if it cannot be read, the popover says so.
(() => {
  const MARK = "button.mha-mark";
  const NUMBER = "m-n";
  const HOVERS = window.matchMedia("(hover: hover) and (pointer: fine)");
  const openedBy = new WeakMap();
  let returning = null; // the marker Escape gives focus back to: it stays closed
  let number = null; // the number whose popover is open, or was last
  let loading = null; // the promise of the evidence file, once asked for
  let data = null; // the evidence file, once read
  let failed = null; // why it could not be read

  const FILE = "evidence.json";
  const load = () =>
    (loading ??= fetch(new URL(FILE, location.href))
      .then((response) => {
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        return response.json();
      })
      .then(
        (read) => (data = read),
        (error) => (failed = error),
      )
      .then(refresh));
  // The file, or a moment's wait for it: a popover opens whole when it is quick.
  const ready = () => Promise.race([load(), new Promise((done) => setTimeout(done, 300))]);

  // What a popover shows while the file is loading, or when it could not be read.
  function status() {
    const said = document.createElement("span");
    said.className = "mha-says";
    if (!failed) said.textContent = "Loading the evidence…";
    else {
      const link = document.createElement("a");
      link.href = FILE;
      link.textContent = FILE;
      said.append(`Could not load this page's evidence (${failed.message}): `, link, ".");
    }
    return said;
  }

  const popoverOf = (mark) => document.getElementById(`mha-ev-${mark.dataset.f}`);
  const markOf = (popover) =>
    popover.id === "mha-ev-number"
      ? number
      : document.querySelector(`${MARK}[data-f="${CSS.escape(popover.dataset.fact)}"]`);
  const isOpen = (popover) => popover.matches(":popover-open");
  const opened = () => [...document.querySelectorAll(".mha-evidence:popover-open")];

  function newPopover(id, label) {
    const popover = document.createElement("span");
    Object.assign(popover, { id, className: "mha-evidence", popover: "manual" });
    popover.setAttribute("role", "dialog");
    popover.setAttribute("aria-label", label);
    popover.dataset.searchExclude = "";
    return popover;
  }

  // A marker's popover, made the first time, right after its marker (Tab goes on
  // into it), filled from the file.
  function markPopover(mark) {
    let popover = popoverOf(mark);
    if (!popover) {
      popover = newPopover(`mha-ev-${mark.dataset.f}`, "How this sentence is checked");
      popover.dataset.fact = mark.dataset.f;
      mark.after(popover);
      mark.setAttribute("aria-controls", popover.id);
      mark.setAttribute("aria-describedby", popover.id);
    }
    const held = data?.f?.[mark.dataset.f];
    if (held !== undefined) popover.innerHTML = held;
    else if (data) popover.textContent = "This sentence is not in the page's evidence file.";
    else popover.replaceChildren(status());
    return popover;
  }

  // The foot's list of where the numbers come from, from the file.
  function fillList() {
    for (const list of document.querySelectorAll("details.mha-sources")) {
      const summary = list.querySelector(":scope > summary");
      if (data) list.innerHTML = data.s;
      else list.replaceChildren(status());
      list.prepend(summary);
    }
  }

  // Beside its marker: below it when there is room, else above, inside the screen.
  function place(popover) {
    const mark = markOf(popover);
    if (!mark) return;
    const at = mark.getBoundingClientRect();
    const gap = 8;
    const left = Math.min(Math.max(gap, at.left - 2 * gap), innerWidth - popover.offsetWidth - gap);
    const below = at.bottom + gap;
    const fits = below + popover.offsetHeight <= innerHeight - gap;
    const top = fits ? below : Math.max(gap, at.top - gap - popover.offsetHeight);
    Object.assign(popover.style, { margin: "0", inset: "auto", left: `${left}px`, top: `${top}px` });
  }

  // Once the file is read (or not): what is made of it so far, filled again.
  function refresh() {
    for (const mark of document.querySelectorAll(MARK)) if (popoverOf(mark)) markPopover(mark);
    const shared = document.getElementById("mha-ev-number");
    if (shared && number) numberPopover(number);
    fillList();
    opened().forEach(place);
  }

  // aria-expanded is set here, with the popover: the toggle event comes a task later.
  function expanded(popover, open) {
    if (popover.id !== "mha-ev-number") markOf(popover)?.setAttribute("aria-expanded", String(open));
  }

  function hide(popover) {
    if (!isOpen(popover)) return;
    popover.hidePopover();
    expanded(popover, false);
  }

  // Whether what asked for a popover still does, once the file is read.
  const still = (at, how) =>
    how === "click" || (how === "hover" ? at.matches(":hover") : at === document.activeElement);

  async function show(mark, how) {
    await ready();
    const popover = markPopover(mark);
    if (isOpen(popover) || !still(mark, how)) return;
    for (const other of opened()) hide(other);
    popover.showPopover();
    expanded(popover, true);
    place(popover);
    openedBy.set(popover, how);
  }

  // A number's entry in the file: its key, or, without one, the next entry (the
  // numbers without a key are the file's entries in order).
  function key(at) {
    if (at.hasAttribute("p")) return Number(at.getAttribute("p"));
    return [...document.querySelectorAll(`${NUMBER}:not([p])`)].indexOf(at);
  }

  // The number's popover, filled from the file and its item in the foot's list.
  function numberPopover(at) {
    let popover = document.getElementById("mha-ev-number");
    if (!popover) popover = newPopover("mha-ev-number", "Where this number comes from");
    if (popover.parentElement !== (at.closest(".md-typeset") || document.body)) {
      (at.closest(".md-typeset") || document.body).append(popover);
    }
    const path = data?.n?.[key(at)];
    if (path === undefined) {
      popover.replaceChildren(data ? "This number is not in the page's evidence file." : status());
      return popover;
    }
    const field = path.match(/^[^.[(]+/)[0];
    const item = document.querySelector(`.mha-sources li[data-f~="${CSS.escape(field)}"]`);
    const read = document.createElement("span");
    read.className = "mha-says";
    const code = document.createElement("code");
    code.textContent = `page.${path}`;
    read.append("Read at build from ", code);
    const parts = [read];
    if (item) {
      const by = item.lastElementChild.cloneNode(true);
      by.className = "mha-code";
      parts.push(by);
      const sealed = item.closest(".mha-sources").querySelector(":scope > p");
      if (sealed && by.textContent.includes("CPU-s")) parts.push(sealed.cloneNode(true));
    }
    popover.replaceChildren(...parts);
    return popover;
  }

  async function showNumber(at, how) {
    await ready();
    if (!still(at, how)) return;
    const popover = numberPopover(at);
    for (const other of opened()) hide(other);
    number = at;
    popover.showPopover();
    place(popover);
    openedBy.set(popover, how);
  }

  function hideLater(popover) {
    setTimeout(() => {
      const mark = markOf(popover);
      const held =
        popover.matches(":hover") ||
        popover.contains(document.activeElement) ||
        (mark && (mark.matches(":hover") || mark === document.activeElement));
      if (openedBy.get(popover) !== "click" && !held) hide(popover);
    }, 250);
  }

  document.addEventListener("click", (event) => {
    const at = event.target.closest?.(NUMBER);
    if (at && !at.closest(".mha-evidence")) {
      const popover = document.getElementById("mha-ev-number");
      const open = popover && isOpen(popover) && number === at;
      if (!open) showNumber(at, "click");
      else if (openedBy.get(popover) === "click") hide(popover);
      else openedBy.set(popover, "click");
      return;
    }
    const mark = event.target.closest?.(MARK);
    if (!mark) {
      if (!event.target.closest?.(".mha-evidence")) opened().forEach(hide);
      return;
    }
    const popover = popoverOf(mark);
    if (!popover || !isOpen(popover)) {
      show(mark, "click");
    } else if (openedBy.get(popover) === "click") {
      hide(popover);
    } else {
      openedBy.set(popover, "click");
    }
  });
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    for (const popover of opened()) {
      const mark = markOf(popover);
      const inside = popover.contains(document.activeElement);
      hide(popover);
      if (inside && mark?.matches(MARK)) {
        returning = mark;
        mark.focus();
      }
    }
  });
  document.addEventListener("mouseover", (event) => {
    const mark = HOVERS.matches && event.target.closest?.(MARK);
    if (mark) show(mark, "hover");
    const at = HOVERS.matches && event.target.closest?.(NUMBER);
    const popover = document.getElementById("mha-ev-number");
    if (at && !(popover && isOpen(popover) && number === at)) showNumber(at, "hover");
  });
  for (const type of ["mouseout", "focusout"]) {
    document.addEventListener(type, (event) => {
      const within = event.target.closest?.(`${MARK}, .mha-evidence, ${NUMBER}`);
      if (!within) return;
      const popover = within.matches(MARK)
        ? popoverOf(within)
        : within.matches(NUMBER)
          ? document.getElementById("mha-ev-number")
          : within;
      if (popover) hideLater(popover);
    });
  }
  document.addEventListener("focusin", (event) => {
    const mark = event.target.closest?.(MARK);
    const back = mark === returning;
    returning = null;
    if (mark && !back && mark.matches(":focus-visible")) show(mark, "focus");
  });
  // The foot's list, opened: read from the file (toggle does not bubble).
  document.addEventListener(
    "toggle",
    (event) => {
      if (event.target.matches?.("details.mha-sources") && event.target.open && !data) {
        fillList();
        load();
      }
    },
    true,
  );
  const replace = () => opened().forEach(place);
  addEventListener("scroll", replace, { passive: true });
  addEventListener("resize", replace, { passive: true });
})();
