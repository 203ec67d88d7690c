// Points Material at docs/assets/javascripts/workers/search-on-demand.js, which builds
// the search index when the reader first opens the search box, in front of Material's
// own worker, named in its address. Material reads its worker's address from the
// page's configuration (#__config) when its bundle starts: this script runs just
// before, and keeps the worker Material makes, to tell it when the box gets the focus
// (so that the index builds while the reader types).
// From a file (file://) Material already waits for the first search: nothing to do.
if (location.protocol !== "file:") {
  const element = document.getElementById("__config");
  const config = JSON.parse(element.textContent);
  const address = new URL(
    "../javascripts/workers/search-on-demand.js",
    document.currentScript.src,
  );
  address.searchParams.set("material", new URL(config.search, location.href).href);
  config.search = address.href;
  element.textContent = JSON.stringify(config);

  let search = null; // the search worker, once Material has made it
  const Native = window.Worker;
  window.Worker = class extends Native {
    constructor(url, options) {
      super(url, options);
      if (String(url) === address.href) search = this;
    }
  };
  document.addEventListener("focusin", ({ target }) => {
    if (search && target.matches(".md-search__input")) {
      search.postMessage({ type: "build" }); // the worker's own message, not Material's
    }
  });
}
