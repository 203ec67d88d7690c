// Keyboard access to regions that scroll sideways, as the theme gives it to wide code
// blocks: a table wrapper, a bar of tab labels, a notebook code cell or a figure that
// overflows becomes focusable (the arrow keys then scroll it), one that fits does not
// (axe: scrollable-region-focusable).
// Re-checked whenever the region or its content changes size.
const SCROLLING_REGIONS =
  ".md-typeset__scrollwrap, .tabbed-labels, .highlight-ipynb, .mha-scroll";

document$.subscribe(() => {
  const observer = new ResizeObserver((entries) => {
    for (const { target } of entries) {
      const region = target.closest(SCROLLING_REGIONS);
      if (region.scrollWidth > region.clientWidth) {
        region.tabIndex = 0;
      } else {
        region.removeAttribute("tabindex");
      }
    }
  });
  for (const region of document.querySelectorAll(SCROLLING_REGIONS)) {
    observer.observe(region);
    for (const child of region.children) {
      observer.observe(child);
    }
  }
});
