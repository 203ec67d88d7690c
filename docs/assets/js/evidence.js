// The evidence beside a guarded sentence (mha_site.evidence): its marker, a button,
// opens its popover on hover (with a pointer that hovers), on keyboard focus, and on
// a click or tap, beside the marker. A popover opened by hover or focus closes when
// both the pointer and the focus have left the marker and the popover; a click pins
// it open, and a second click, Escape or a click elsewhere closes it. One is open at
// a time; aria-expanded follows. The popovers are "manual" (the script dismisses
// them), so that a tap on the marker of an open one is not first a dismissal and
// then a reopening. Delegated from the document, so pages loaded by instant
// navigation work too. Without JavaScript, aria-describedby still reads a popover's
// text to a screen reader.
//
// A printed number (<m-n p>, mha_site.traced) opens one shared popover on hover or
// tap: the attribute it was read from and its value's item of the foot's list of
// sources. Not a tab stop (a page prints hundreds): that list serves the keyboard.
(() => {
  const MARK = "button.mha-mark";
  const NUMBER = "m-n[p]";
  const HOVERS = window.matchMedia("(hover: hover) and (pointer: fine)");
  const openedBy = new WeakMap();
  let returning = null; // the marker Escape gives focus back to: it stays closed
  let number = null; // the number whose popover is open, or was last

  const popoverOf = (mark) => document.getElementById(mark.getAttribute("aria-controls"));
  const markOf = (popover) =>
    popover.id === "mha-ev-number"
      ? number
      : document.querySelector(`${MARK}[aria-controls="${popover.id}"]`);
  const isOpen = (popover) => popover.matches(":popover-open");
  const opened = () => [...document.querySelectorAll(".mha-evidence:popover-open")];

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

  // aria-expanded is set here, with the popover: the toggle event comes a task later.
  function expanded(popover, open) {
    if (popover.id !== "mha-ev-number") markOf(popover)?.setAttribute("aria-expanded", String(open));
  }

  function hide(popover) {
    if (!isOpen(popover)) return;
    popover.hidePopover();
    expanded(popover, false);
  }

  function show(mark, how) {
    const popover = popoverOf(mark);
    if (!popover || isOpen(popover)) return;
    for (const other of opened()) hide(other);
    popover.showPopover();
    expanded(popover, true);
    place(popover);
    openedBy.set(popover, how);
  }

  // The number's popover, filled from its item in the page's foot list.
  function numberPopover(at) {
    let popover = document.getElementById("mha-ev-number");
    if (!popover) {
      popover = document.createElement("span");
      Object.assign(popover, { id: "mha-ev-number", className: "mha-evidence", popover: "manual" });
      popover.setAttribute("role", "dialog");
      popover.setAttribute("aria-label", "Where this number comes from");
      popover.dataset.searchExclude = "";
    }
    (at.closest(".md-typeset") || document.body).append(popover);
    let path = at.getAttribute("p"); // in a table row, the part all its numbers share is the row's
    if (/^[.[]/.test(path)) path = (at.closest("tr[p]")?.getAttribute("p") ?? "") + path;
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

  function showNumber(at, how) {
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
    if (!isOpen(popover)) {
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
  const replace = () => opened().forEach(place);
  addEventListener("scroll", replace, { passive: true });
  addEventListener("resize", replace, { passive: true });
})();
