// fedctl dashboard: plain ES modules, no build step, nothing from elsewhere. Everything
// shown comes from the REST API (/apis/fedctl.io/v1alpha1/...), the routes the CLI uses;
// live updates come from the watch streams, each event re-listing its kind.

import { API, banner, call, setupToken, watch } from "./api.js";
import { $, debounce, h, meta } from "./dom.js";
import { setupEditor } from "./editor.js";
import { renderClusters, renderQueues, renderWorkloads } from "./views.js";

const state = { clusters: [], queues: [], workloads: [], bindings: [], drills: null };

async function load(kind) {
  try {
    const listed = await call(`${API}/${kind}`);
    state[kind] = listed.items || [];
    banner("");
  } catch (err) {
    banner(`Cannot read ${kind}: ${err.message}`);
  }
  renderAll();
}

const reload = {};
for (const kind of ["clusters", "queues", "workloads", "bindings"]) {
  reload[kind] = debounce(() => load(kind), 150);
}

function refreshAll() {
  for (const kind of Object.keys(reload)) reload[kind]();
}

function renderAll() {
  renderClusters(state);
  renderQueues(state);
  renderWorkloads(state);
  renderDrillForm();
}

function drillId(report) {
  return meta(report).name || report.id || report.name;
}

function timelineOf(report) {
  return report.timeline || (report.status && report.status.timeline) || report.events
    || report.steps || [];
}

function renderDrillForm() {
  const select = $("drill-cluster");
  const names = state.clusters.map((c) => meta(c).name).sort();
  if (select.options.length !== names.length) {
    const keep = select.value;
    select.replaceChildren(...names.map((n) => h("option", { value: n }, n)));
    if (names.includes(keep)) select.value = keep;
  }
}

let selectedDrill = null;

function renderDrills() {
  const list = $("drill-list");
  const reports = state.drills || [];
  if (!reports.length) {
    list.replaceChildren();
    $("drill-timeline").replaceChildren(h("p", { class: "empty" },
      state.drills === null ? "No drills yet: this controller has no drill API."
        : "No drills yet. Start one above."));
    return;
  }
  list.replaceChildren(...reports.map((r) => h("li", {
    class: drillId(r) === selectedDrill ? "active" : "", "data-drill": drillId(r),
    onclick: () => { selectedDrill = drillId(r); renderDrills(); },
  }, h("b", {}, drillId(r)), " ", h("span", { class: "muted" },
    [r.cluster || (r.spec || {}).cluster, r.phase || (r.status || {}).phase].filter(Boolean).join(" · ")))));
  const report = reports.find((r) => drillId(r) === selectedDrill) || reports[0];
  selectedDrill = drillId(report);
  const steps = timelineOf(report);
  const summary = report.summary || (report.status && report.status.summary) || {};
  $("drill-timeline").replaceChildren(
    h("h2", {}, `Drill ${drillId(report)}`),
    Object.keys(summary).length ? h("dl", { class: "summary" }, Object.entries(summary).map(
      ([k, v]) => [h("dt", {}, k), h("dd", {}, typeof v === "object" ? JSON.stringify(v) : v)]))
      : null,
    steps.length ? h("ol", { class: "steps" }, steps.map((s) => h("li", { class: "step" },
      h("time", {}, s.time || s.at || s.timestamp || ""),
      h("b", {}, s.event || s.step || s.type || s.phase || ""),
      " ", s.message || s.detail || ""))) : h("p", { class: "empty" }, "No events yet."));
}

async function loadDrills() {
  try {
    const listed = await call(`${API}/drills`);
    state.drills = listed.items || listed.drills || [];
  } catch {
    state.drills = null;
  }
  renderDrills();
}

async function startDrill(event) {
  event.preventDefault();
  const msg = $("drill-message");
  try {
    const started = await call(`${API}/drills`, {
      method: "POST", body: { cluster: $("drill-cluster").value, fault: $("drill-fault").value },
    });
    selectedDrill = drillId(started) || selectedDrill;
    msg.textContent = `started ${selectedDrill || ""}`;
    loadDrills();
  } catch (err) {
    msg.textContent = err.status === 404 || err.status === 400
      ? "This controller has no drill API yet." : `cannot start: ${err.message}`;
  }
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

// A running drill's timeline grows while the view is open: re-read the reports meanwhile.
setInterval(() => {
  if (location.hash === "#drills" && state.drills !== null) loadDrills();
}, 2000);

function start() {
  setupToken(refreshAll);
  setupEditor(refreshAll);
  $("drill-form").addEventListener("submit", startDrill);
  window.addEventListener("hashchange", show);
  show();
  for (const kind of Object.keys(reload)) {
    load(kind);
    watch(kind, `${API}/${kind}`, (event) => {
      if (event.type !== "BOOKMARK") reload[kind]();
    });
  }
  // Cluster statuses (capacity, health) are written by the monitor under their own keys,
  // which the clusters watch does not carry: re-read them on a slow period as well.
  setInterval(() => reload.clusters(), 5000);
  document.body.dataset.ready = "true";
}

start();
