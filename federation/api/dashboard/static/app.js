// fedctl dashboard: plain ES modules, no build step, nothing from elsewhere. Everything
// shown comes from the REST API (/apis/fedctl.io/v1alpha1/...), the routes the CLI uses;
// live updates come from one watch stream per tab carrying every kind shown, each event
// re-listing its kind.
//
// `state.loaded` says which lists have answered: until a view's inputs have, it says it
// is loading, never an empty table or zero counts that look like live data.

import { API, banner, call, setupToken, watchAll } from "./api.js";
import { $ } from "./dom.js";
import { loadDrills, renderDrillForm, setupDrills } from "./drills.js";
import { setupEditor } from "./editor.js";
import { renderClusters, renderQueues, renderWorkloads } from "./views.js";

const KINDS = ["clusters", "queues", "workloads", "bindings"];
const state = {
  clusters: [], queues: [], workloads: [], bindings: [], queueStatus: [], costs: null,
  workloadStatus: new Map(), // "ns/Kind.group/name" -> the propagator's aggregated status
  loaded: {}, // kind (or "queueStatus", "workloadStatus") -> true once it has answered
  failed: {}, // kind -> why its last list failed
};
const QUEUE_STATUS = "/apis/status.fedctl.io/v1alpha1/queues";
const WORKLOAD_STATUS = "/apis/status.fedctl.io/v1alpha1/workloads";
const COSTS = "/apis/status.fedctl.io/v1alpha1/costs?by=queue";

async function load(kind) {
  try {
    const listed = await call(`${API}/${kind}`);
    state[kind] = listed.items || [];
    state.loaded[kind] = true;
    delete state.failed[kind];
    banner("");
  } catch (err) {
    state.failed[kind] = err.message;
    banner(`Cannot read ${kind}: ${err.message}`);
  }
  renderAll();
}

// At most one call per `ms` (a number, or a function giving it), and always one after
// the last request: unlike a debounce, a steady stream of requests cannot put it off
// forever.
function throttle(fn, ms) {
  let last = 0;
  let timer = null;
  return () => {
    if (timer) return;
    const period = typeof ms === "function" ? ms() : ms;
    timer = setTimeout(() => {
      timer = null;
      last = Date.now();
      fn();
    }, Math.max(0, last + period - Date.now()));
  };
}

// What each queue holds is charged on the server over every admitted workload: asked at
// most once a second, after the Bindings or queues it depends on change.
// A busy registry may be answered from a kept, slightly older answer ("stale"): ask again.
const loadQueueStatus = throttle(async () => {
  try {
    const [doc, costs] = await Promise.all([call(QUEUE_STATUS), call(COSTS)]);
    state.queueStatus = doc.items || [];
    state.costs = costs;
    state.loaded.queueStatus = true;
    if (doc.stale) setTimeout(() => loadQueueStatus(), 1500);
  } catch (err) {
    console.warn(`queue status: ${err.message}`);
  }
  renderAll();
}, 1000);

// Whether each job has finished (Succeeded or Failed) is in its aggregated status, which
// the object lists do not carry: the workload status view (as `fedctl get workloads`)
// has it. Asked at most once a second after workloads or Bindings change. A view that
// cannot be read leaves the phases unknown, not the Workloads view empty.
const loadWorkloadStatus = throttle(async () => {
  try {
    const doc = await call(WORKLOAD_STATUS);
    // An object no policy selects is kept in the federation only: its card says so.
    state.workloadStatus = new Map((doc.items || []).map((i) =>
      [`${i.namespace}/${i.kind}/${i.name}`,
        i.federationOnly ? { ...(i.status || {}), federationOnly: true } : i.status || null]));
    delete state.failed.workloadStatus;
  } catch (err) {
    state.failed.workloadStatus = err.message;
  }
  state.loaded.workloadStatus = true;
  renderAll();
}, 1000);

// Each watch event asks for its kind to be listed again. A sweep keeps the scheduler
// writing Bindings without a pause, so this is paced rather than debounced (a debounce
// re-listed only once the writes stopped): at most every 250 ms, and listing a kind
// takes at most a quarter of the time, so 20,000 Bindings are not fetched back to back.
const reload = {};
const listed = {};
for (const kind of KINDS) {
  reload[kind] = throttle(async () => {
    const began = performance.now();
    if (kind !== "clusters") loadQueueStatus();
    if (kind === "workloads" || kind === "bindings") loadWorkloadStatus();
    await load(kind);
    listed[kind] = performance.now() - began;
  }, () => Math.max(250, 4 * (listed[kind] || 0)));
}

function refreshAll() {
  for (const kind of Object.keys(reload)) reload[kind]();
}

function renderAll() {
  renderClusters(state);
  renderQueues(state);
  renderWorkloads(state);
  renderDrillForm(state.clusters);
}

function show() {
  const view = (location.hash || "#clusters").slice(1);
  for (const section of document.querySelectorAll("section.view")) {
    section.hidden = section.dataset.view !== view;
  }
  for (const link of document.querySelectorAll("#nav a")) {
    link.classList.toggle("active", link.dataset.view === view);
  }
  if (view === "drills") loadDrills();
}

function start() {
  setupToken(refreshAll);
  setupEditor(refreshAll);
  setupDrills();
  window.addEventListener("hashchange", show);
  show();
  loadQueueStatus();
  loadWorkloadStatus();
  for (const kind of KINDS) load(kind);
  // A bookmark starts each kind on a (re)connected stream: list it again then too, for
  // what changed between the list above (or the last event) and the stream's start.
  watchAll(KINDS, (event) => {
    if (reload[event.resource] && event.type !== "ERROR") reload[event.resource]();
  });
  // Cluster statuses (capacity, health) are written by the monitor under their own keys;
  // the stream carries a change of one as a MODIFIED cluster, and they are re-read on a
  // slow period as well, for a stream that was down. The workload statuses that end a job
  // (it stops counting as admitted, and costs nothing more) are not on the stream: while
  // the Queues or Workloads view is shown, its view is asked on that period.
  setInterval(() => {
    if (document.hidden) return;
    reload.clusters();
    if (location.hash === "#queues") loadQueueStatus();
    if (location.hash === "#workloads") loadWorkloadStatus();
  }, 5000);
  document.body.dataset.ready = "true";
}

start();
