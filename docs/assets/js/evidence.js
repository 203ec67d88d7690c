// The evidence beside a guarded sentence (mha_site.evidence): its marker, a button,
// opens its popover on hover (with a pointer that hovers), on keyboard focus, and on
// a click or tap. A popover opened by hover or focus closes when both the pointer
// and the focus have left the marker and the popover; a click pins it open, and a
// second click, Escape or a click elsewhere closes it. aria-expanded follows.
// Delegated from the document, so pages loaded by instant navigation work too.
(() => {
  const MARK = "button.mha-mark";
  const HOVERS = window.matchMedia("(hover: hover) and (pointer: fine)");
  const openedBy = new WeakMap();

  const popoverOf = (mark) => document.getElementById(mark.getAttribute("aria-controls"));
  const markOf = (popover) => document.querySelector(`${MARK}[aria-controls="${popover.id}"]`);
  const isOpen = (popover) => popover.matches(":popover-open");

  // Beside its marker: below it when there is room, else above, inside the screen.
  function place(popover) {
    const mark = markOf(popover);
    if (!mark) return;
    const at = mark.getBoundingClientRect();
    const gap = 8;
    const width = popover.offsetWidth;
    const height = popover.offsetHeight;
    const left = Math.min(Math.max(gap, at.left - 2 * gap), innerWidth - width - gap);
    const below = at.bottom + gap;
    const top = below + height <= innerHeight - gap ? below : Math.max(gap, at.top - gap - height);
    Object.assign(popover.style, { margin: "0", inset: "auto", left: `${left}px`, top: `${top}px` });
  }

  function show(mark, how) {
    const popover = popoverOf(mark);
    if (!popover || isOpen(popover)) return;
    popover.showPopover();
    place(popover);
    openedBy.set(popover, how);
  }

  const replace = () => {
    for (const popover of document.querySelectorAll(".mha-evidence:popover-open")) place(popover);
  };
  addEventListener("scroll", replace, { passive: true });
  addEventListener("resize", replace, { passive: true });

  function hideLater(popover) {
    setTimeout(() => {
      const mark = markOf(popover);
      const held =
        popover.matches(":hover") ||
        popover.contains(document.activeElement) ||
        (mark && (mark.matches(":hover") || mark === document.activeElement));
      if (isOpen(popover) && openedBy.get(popover) !== "click" && !held) {
        popover.hidePopover();
      }
    }, 250);
  }

  // No JavaScript, no hover: the button's popovertarget still toggles it natively.
  // With this script the clicks are ours, so hover and focus can open it as well.
  document.addEventListener(
    "click",
    (event) => {
      const mark = event.target.closest(MARK);
      if (!mark) return;
      event.preventDefault();
      const popover = popoverOf(mark);
      if (!isOpen(popover)) {
        show(mark, "click");
      } else if (openedBy.get(popover) === "click") {
        popover.hidePopover();
      } else {
        openedBy.set(popover, "click");
      }
    },
    true,
  );
  document.addEventListener("mouseover", (event) => {
    const mark = HOVERS.matches && event.target.closest?.(MARK);
    if (mark) show(mark, "hover");
  });
  document.addEventListener("mouseout", (event) => {
    const within = event.target.closest?.(`${MARK}, .mha-evidence`);
    if (!within) return;
    const popover = within.matches(MARK) ? popoverOf(within) : within;
    if (popover) hideLater(popover);
  });
  document.addEventListener("focusin", (event) => {
    const mark = event.target.closest?.(MARK);
    if (mark && mark.matches(":focus-visible")) show(mark, "focus");
  });
  document.addEventListener("focusout", (event) => {
    const within = event.target.closest?.(`${MARK}, .mha-evidence`);
    if (!within) return;
    const popover = within.matches(MARK) ? popoverOf(within) : within;
    if (popover) hideLater(popover);
  });
  document.addEventListener(
    "toggle",
    (event) => {
      const popover = event.target;
      if (!popover.classList?.contains("mha-evidence")) return;
      const mark = markOf(popover);
      if (mark) mark.setAttribute("aria-expanded", String(event.newState === "open"));
    },
    true,
  );
})();
