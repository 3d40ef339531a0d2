// fedctl dashboard: plain ES modules, no build step, nothing from elsewhere. Everything
// shown comes from the REST API (/apis/fedctl.io/v1alpha1/...), the routes the CLI uses;
// live updates come from one watch stream per tab carrying every kind shown, each event
// re-listing its kind.
//
// `state.loaded` says which lists have answered: until a view's inputs have, it says it
// is loading, never an empty table or zero counts that look like live data.
//
// A view lists only what it shows (NEEDS), from the first time it is opened: at 144
// clusters the Clusters view, which shows only the clusters, downloaded every workload
// and 1.5 MB of Bindings, and every list twice (once at start, again at the stream's
// first bookmark). Each kind is now listed once, at its first bookmark.

import { API, banner, call, isLive, setupToken, watchAll } from "./api.js";
import { $ } from "./dom.js";
import { loadDrills, renderDrillForm, setupDrills } from "./drills.js";
import { setupEditor } from "./editor.js";
import { renderClusters, renderQueues, renderWorkloads } from "./views.js";

const KINDS = ["clusters", "queues", "workloads", "bindings"];
// What each view shows: the kinds it lists and follows, and the server's status views it
// reads (queue status with the costs, whose currency the Workloads view shows too; the
// workload status). The Policy view shows none, but the stream needs a kind to follow, and
// the clusters are what the other views start from.
const NEEDS = {
  clusters: { kinds: ["clusters"] },
  drills: { kinds: ["clusters"] },
  policy: { kinds: ["clusters"] },
  queues: { kinds: ["queues", "bindings"], queueStatus: true },
  workloads: { kinds: ["workloads", "bindings"], queueStatus: true, workloadStatus: true },
};
// What the views opened so far need: followed for as long as the tab stays.
const wanted = { kinds: new Set(), queueStatus: false, workloadStatus: false };
const requested = {}; // kind -> true once a list of it has begun
let stream = null;
const state = {
  clusters: [], queues: [], workloads: [], bindings: [], queueStatus: [], costs: null,
  workloadStatus: new Map(), // "ns/Kind.group/name" -> the propagator's aggregated status
  loaded: {}, // kind (or "queueStatus", "workloadStatus") -> true once it has answered
  failed: {}, // kind -> why its last list failed
};
const QUEUE_STATUS = "/apis/status.fedctl.io/v1alpha1/queues";
// Without each item's Binding: the page lists the Bindings itself, and reads only the
// status here (3.5 MB with them at 1,500 workloads, a tenth of that without).
const WORKLOAD_STATUS = "/apis/status.fedctl.io/v1alpha1/workloads?binding=false";
const COSTS = "/apis/status.fedctl.io/v1alpha1/costs?by=queue";
// ms between status loads with nothing on the stream; `?poll=SECONDS` in the page's
// address asks for another (down to 1 s), for a wall screen that must show a job's end
// sooner, at the server's cost.
const SAFETY_POLL = pollPeriod(new URLSearchParams(location.search).get("poll"));
const TICK = Math.min(5000, SAFETY_POLL); // ms between looks at what is due

function pollPeriod(asked) {
  const seconds = Number(asked);
  return asked && Number.isFinite(seconds) && seconds >= 1 ? Math.round(seconds * 1000) : 15000;
}

async function load(kind) {
  requested[kind] = true;
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

// Calls of the async `fn`, never two at once, and always one after the last request:
// unlike a debounce, a steady stream of requests cannot put it off forever. A request
// while it runs is kept for after it; each call begins at least `least` ms after the
// previous one ended, and `factor` times as long as that one took, so a slow answer
// spaces the next ones out. Paced at a fixed period instead, a view that took 1.1 s to
// answer was asked for again every second: the loads overlapped, and could land out of
// order.
function paced(fn, { least, factor = 4 }) {
  let ended = 0;
  let took = 0;
  let timer = null;
  let running = false;
  let again = false;
  const schedule = () => {
    const wait = ended + Math.max(least, factor * took) - Date.now();
    timer = setTimeout(async () => {
      timer = null;
      running = true;
      const began = Date.now();
      try {
        await fn();
      } finally {
        running = false;
        ended = Date.now();
        took = ended - began;
        if (again) {
          again = false;
          schedule();
        }
      }
    }, Math.max(0, wait));
  };
  return () => {
    if (running) again = true;
    else if (!timer) schedule();
  };
}

// What each queue holds is charged on the server over every admitted workload: asked
// after the Bindings or queues it depends on change, one load at a time and at most once
// a second. A busy registry may be answered from a kept, slightly older answer ("stale"):
// ask again.
const loadQueueStatus = paced(async () => {
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
}, { least: 1000 });

// Whether each job has finished (Succeeded or Failed) is in its aggregated status, which
// the object lists do not carry: the workload status view (as `fedctl get workloads`)
// has it. Asked after workloads or Bindings change, one load at a time and at most once
// a second. A view that cannot be read leaves the phases unknown, not the Workloads view
// empty.
const loadWorkloadStatus = paced(async () => {
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
}, { least: 1000 });

// Each watch event asks for its kind to be listed again. A sweep keeps the scheduler
// writing Bindings without a pause, so this is paced rather than debounced (a debounce
// re-listed only once the writes stopped): at most every 250 ms, and listing a kind
// takes at most a quarter of the time, so 20,000 Bindings are not fetched back to back.
// A kind's first list is no change: the status views are loaded when their view opens,
// not once more per kind listed (the costs were asked for twice at start).
const reload = {};
for (const kind of KINDS) {
  reload[kind] = paced(async () => {
    if (state.loaded[kind]) statusesAfterChange(kind);
    await load(kind);
  }, { least: 250 });
}

function statusesAfterChange(kind) {
  if (kind !== "clusters" && wanted.queueStatus) loadQueueStatus();
  if ((kind === "workloads" || kind === "bindings") && wanted.workloadStatus) {
    loadWorkloadStatus();
  }
}

function followed() {
  return KINDS.filter((k) => wanted.kinds.has(k));
}

function refreshAll() {
  for (const kind of followed()) reload[kind]();
  if (wanted.queueStatus) loadQueueStatus();
  if (wanted.workloadStatus) loadWorkloadStatus();
}

// The view's needs added to what is followed: new kinds move the stream, whose first
// bookmarks list them; a status view not read yet is asked for now.
function want(view) {
  const needs = NEEDS[view] || NEEDS.clusters;
  const before = wanted.kinds.size;
  for (const kind of needs.kinds) wanted.kinds.add(kind);
  if (needs.queueStatus && !wanted.queueStatus) {
    wanted.queueStatus = true;
    loadQueueStatus();
  }
  if (needs.workloadStatus && !wanted.workloadStatus) {
    wanted.workloadStatus = true;
    loadWorkloadStatus();
  }
  if (stream && wanted.kinds.size !== before) stream.follow(followed());
}

// The stream could not be opened, or broke: list what no bookmark has listed yet, so a
// view is not left saying "Loading" (a 401 asks for a token; a refusal is shown).
function listUnlisted() {
  for (const kind of followed()) if (!requested[kind]) reload[kind]();
}

function shown() {
  return (location.hash || "#clusters").slice(1);
}

// Only the view on screen is drawn (each when it is shown): drawing all three on every
// answer drew 1,500 workload cards, verdict tables and all, behind the Clusters view.
const RENDER = {
  clusters: () => renderClusters(state, $("cluster-filter").value),
  queues: () => renderQueues(state),
  workloads: () => renderWorkloads(state),
  drills: () => renderDrillForm(state.clusters),
};

function renderAll() {
  const draw = RENDER[shown()];
  if (draw) draw();
}

function show() {
  const view = shown();
  for (const section of document.querySelectorAll("section.view")) {
    section.hidden = section.dataset.view !== view;
  }
  for (const link of document.querySelectorAll("#nav a")) {
    link.classList.toggle("active", link.dataset.view === view);
  }
  if (view === "drills") loadDrills();
  want(view);
  renderAll();
}

function start() {
  setupToken(refreshAll);
  setupEditor(refreshAll);
  setupDrills();
  window.addEventListener("hashchange", show);
  $("cluster-filter").addEventListener("input", () => {
    if (shown() === "clusters") renderAll();
  });
  show();
  // A bookmark starts each kind on a (re)connected stream: that is when it is listed, the
  // first time too, so nothing that changes between the list and the stream's start is
  // missed, and nothing is listed twice.
  stream = watchAll(followed(), (event) => {
    if (reload[event.resource] && event.type !== "ERROR") reload[event.resource]();
  }, listUnlisted);
  // Cluster statuses (capacity, health) are written by the monitor under their own keys;
  // the stream carries a change of one as a MODIFIED cluster. The workload statuses that
  // end a job (it stops counting as admitted, and costs nothing more) are not on the
  // stream: while the Queues or Workloads view is shown, its view is asked again every
  // SAFETY_POLL ms while the stream is live, and the clusters every 30 s, in case; every
  // 5 s while it is down. Every 5 s whatever the stream, an idle tab on the Workloads
  // view of 1,500 jobs cost the server a tenth of a core.
  let polled = 0;
  setInterval(() => {
    if (document.hidden) return;
    polled += 1;
    const live = isLive();
    const clusters = wanted.kinds.has("clusters");
    if (clusters && (!live || polled % Math.round(30000 / TICK) === 0)) reload.clusters();
    if (live && polled % Math.max(1, Math.round(SAFETY_POLL / TICK)) !== 0) return;
    if (shown() === "queues") loadQueueStatus();
    if (shown() === "workloads") loadWorkloadStatus();
  }, TICK);
  document.body.dataset.ready = "true";
}

start();
