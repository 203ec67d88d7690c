// Material's search worker, set up when the reader opens the search box instead of on
// every page load.
//
// Material hands its worker the site's search index as each page loads, and the
// worker builds its Lunr index there and then: about 0.4 CPU-s of every page view on
// a 2-core laptop, for a search most readers never make. This worker stands in front
// of Material's own, which it loads unchanged (its address is in this script's: see
// docs/assets/js/search-on-demand.js). It keeps the index and answers "ready" at once,
// answers the empty query sent as the page loads as Material does (no results), and
// hands the index to Material's worker when the page says the search box has the
// focus ({type: "build"}) or on the first real query, whichever comes first; queries
// wait for the build.
// This script sits beside Material's worker so that Material's relative paths (its
// language support, under ../lunr) resolve as they do for its own.

// Material's message types (SearchMessageType)
const SETUP = 0;
const READY = 1;
const QUERY = 2;
const RESULT = 3;
const BUILD = "build"; // ours, from the page: the reader has opened the search box

const post = self.postMessage.bind(self);
let index = null; // the SETUP message, kept until the build
let built = null; // a promise: Material's worker has built its index
let onBuilt = null; // resolves `built`
let forwarding = false; // a message on its way to Material's worker
let buildWanted = false; // the box had the focus before the index came

// Material's worker answers each message with postMessage: its READY, to the index
// handed over below, is for this script, not for the page (which already had one).
self.postMessage = (message) => {
  if (message.type === READY && onBuilt) {
    onBuilt();
    onBuilt = null;
  } else {
    post(message);
  }
};

// Material's worker listens to "message" on this global scope, as this script does
// first: dispatched here, a message reaches it alone.
function forward(data) {
  forwarding = true;
  try {
    dispatchEvent(new MessageEvent("message", { data }));
  } finally {
    forwarding = false;
  }
}

// Hand the index to Material's worker, once: the promise `built` says when it is done.
function build() {
  if (built) return;
  built = new Promise((resolve) => {
    onBuilt = resolve;
  });
  forward(index);
  index = null;
}

addEventListener("message", (event) => {
  const message = event.data;
  if (forwarding || ![BUILD, SETUP, QUERY].includes(message.type)) return;
  event.stopImmediatePropagation(); // Material's worker sees what forward() passes on
  if (message.type === BUILD) {
    buildWanted = true;
    if (index) build();
  } else if (message.type === SETUP) {
    index = message;
    built = null;
    post({ type: READY });
    if (buildWanted) build();
  } else if (!built && message.data === "") {
    post({ type: RESULT, data: { items: [] } }); // Material's answer to ""
  } else {
    build();
    built.then(() => forward(message)); // in the order the queries came
  }
});

importScripts(new URL(location.href).searchParams.get("material"));
