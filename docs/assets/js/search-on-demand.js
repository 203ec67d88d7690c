// Points Material at docs/assets/javascripts/workers/search-on-demand.js, which builds
// the search index on the reader's first search, in front of Material's own worker,
// named in its address. Material reads its worker's address from the page's
// configuration (#__config) when its bundle starts: this script runs just before.
// From a file (file://) Material already waits for the first search: nothing to do.
if (location.protocol !== "file:") {
  const element = document.getElementById("__config");
  const config = JSON.parse(element.textContent);
  const worker = new URL(
    "../javascripts/workers/search-on-demand.js",
    document.currentScript.src,
  );
  worker.searchParams.set("material", new URL(config.search, location.href).href);
  config.search = worker.href;
  element.textContent = JSON.stringify(config);
}
