// The Drills view: start a drill, watch it run, open past reports. Everything comes from
// the controller's drill API (GET/POST /apis/fedctl.io/v1alpha1/drills, GET .../{id}); a
// running drill is re-read every second while the view is open, so its timeline and the
// live chart of its samples grow as the controller samples the registry. A finished
// drill shows the report's own SVG timeline, fetched with the token and shown as an image
// (an SVG in an <img> cannot run script) next to its summary and per-workload outcomes,
// at its own size (scrolled, never shrunk: at 820 px it was scaled to 6 px text). The form
// says how long this controller takes to detect a dead member and evict its work, which a
// fault must be held longer than for anything to move (the hold defaults to 90 s, as
// `fedctl drill run`'s).

import { API, call, headers } from "./api.js";
import { $, h } from "./dom.js";

const DRILLS = `${API}/drills`;
const SVG_NS = "http://www.w3.org/2000/svg";
const MEASURES = [
  ["detect", "time to detect", (r) => secs(r.detect)],
  ["replace", "time to re-place", (r) => secs(r.replace)],
  ["rto", "RTO (all ready elsewhere)", (r) => secs(r.rto)],
  ["healed", "fault healed at", (r) => secs(r.healed_at)],
  ["affected", "workloads affected", (r) => r.affected],
  ["lost", "lost (must be 0)", (r) => r.lost],
  ["double-runs", "double-runs (must be 0)", (r) => r.double_runs],
  ["shortfall", "capacity shortfall", (r) => Object.keys(r.shortfall || {}).length],
  ["not-back", "services not back on the member", (r) => (r.not_back || []).length],
];

const drills = {
  list: [], unreadable: [], selected: null, detail: null, chart: { id: null, url: null },
  timing: null, // this controller's {detectSeconds, evictionGraceSeconds}, from GET /drills
  clusters: [],
};

function secs(value) {
  return value === null || value === undefined ? "–" : `${Number(value).toFixed(1)}s`;
}

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) {
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }
  return el;
}

// The live chart: affected workloads moved off the member (amber) and ready elsewhere
// (green) over time, with the stretches the member was seen down shaded red.
function liveChart(samples) {
  const width = 640, height = 140, left = 34, right = 10, top = 10, bottom = 22;
  const t0 = Math.min(0, ...samples.map((s) => s.t));
  const t1 = Math.max(t0 + 1, ...samples.map((s) => s.t));
  const total = Math.max(1, ...samples.map((s) => s.affected));
  const x = (t) => left + ((t - t0) / (t1 - t0)) * (width - left - right);
  const y = (n) => top + (1 - n / total) * (height - top - bottom);
  const down = [];
  samples.forEach((s, i) => {
    if (!s.memberDown) return;
    const next = samples[i + 1] ? samples[i + 1].t : s.t;
    down.push(svg("rect", { x: x(s.t), y: top, width: Math.max(1, x(next) - x(s.t)),
      height: height - top - bottom, class: "down" }));
  });
  const line = (key, cls) => svg("polyline", { class: cls, fill: "none",
    points: samples.map((s) => `${x(s.t).toFixed(1)},${y(s[key]).toFixed(1)}`).join(" ") });
  return svg("svg", { class: "live-chart", viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": "drill progress" },
    down,
    svg("line", { x1: x(0), x2: x(0), y1: top, y2: height - bottom, class: "fault" }),
    line("moved", "moved"), line("ready", "ready"),
    svg("text", { x: 2, y: top + 8 }, total),
    svg("text", { x: 2, y: height - bottom }, 0),
    svg("text", { x: left, y: height - 6 }, `${t0.toFixed(1)}s`),
    svg("text", { x: width - right, y: height - 6, "text-anchor": "end" }, `${t1.toFixed(1)}s`));
}

function summary(report) {
  return h("dl", { class: "summary" }, MEASURES.map(([key, label, value]) => [
    h("dt", {}, label),
    h("dd", { "data-measure": key }, value(report)),
  ]));
}

function step(event) {
  const what = [event.workload, event.message].filter(Boolean).join(": ");
  return h("li", { class: `step ${event.event}`, "data-event": event.event },
    h("time", {}, `+${Number(event.t).toFixed(1)}s`), h("b", {}, event.event), " ", what);
}

function outcomes(report) {
  const rows = report.workloads || [];
  if (!rows.length) return h("p", { class: "muted" }, "No workload ran on the member.");
  return h("table", { class: "grid outcomes" },
    h("thead", {}, h("tr", {}, ["Workload", "Re-placed", "Ready", "Outcome"]
      .map((t) => h("th", {}, t)))),
    h("tbody", {}, rows.map((w) => h("tr", { "data-workload": w.workload },
      h("td", {}, w.workload), h("td", { class: "num" }, secs(w.replaced)),
      h("td", { class: "num" }, secs(w.ready)), h("td", {}, w.outcome)))));
}

function progressLine(report) {
  const last = (report.samples || []).at(-1);
  // Any replica records the drill; the leading one runs it (and may not have yet).
  if (report.stage === "pending") {
    return h("p", { class: "muted" }, "Waiting for the leading controller to start it…");
  }
  if (!last) return h("p", { class: "muted" }, "Taking the first sample…");
  return h("p", { class: "progress", "data-progress": "" },
    `stage ${report.stage} · member ${last.memberDown ? "down" : "up"} · `
    + `${last.moved}/${last.affected} moved · ${last.ready}/${last.affected} ready elsewhere`);
}

// When a drill started, in the viewer's time zone and short ("7 Dec 2026, 08:00"), with
// the stored UTC value (to the microsecond) in its title: the raw ISO string was in UTC,
// which few read as their own time.
function startedAt(iso) {
  const when = new Date(iso);
  const shown = Number.isNaN(when.getTime()) ? iso
    : when.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
  return h("time", { datetime: iso, title: iso, "data-started": "" }, shown);
}

function renderDetail() {
  const root = $("drill-timeline");
  const report = drills.detail;
  if (!report) {
    root.replaceChildren(h("p", { class: "empty" },
      drills.list.length ? "Pick a drill." : "No drills yet. Start one above."));
    return;
  }
  const running = report.phase === "Running";
  root.replaceChildren(h("div", { class: "drill-detail", "data-drill-detail": report.id },
    h("header", { class: "drill-head" },
      h("h2", {}, `Drill ${report.id}`),
      h("span", { class: `phase ${report.phase}`, "data-phase": report.phase }, report.phase)),
    h("p", { class: "sub" }, `${report.fault} on ${report.cluster} · held ${report.duration}s`
      + " · started ", startedAt(report.started)),
    report.error ? h("p", { class: "error drill-error" }, report.error) : null,
    running ? [progressLine(report), liveChart(report.samples || [])] : null,
    !running && drills.chart.id === report.id && drills.chart.url
      ? h("div", { class: "drill-chart-box" },
        h("img", { class: "drill-chart", src: drills.chart.url, alt: `timeline of ${report.id}` }))
      : null,
    summary(report),
    h("h3", {}, "Timeline"),
    h("ol", { class: "steps" }, (report.timeline || []).map(step)),
    h("h3", {}, "Workloads"),
    outcomes(report)));
}

// A stored report this controller cannot read (a newer release wrote it) is listed, with
// why, rather than hidden: it cannot be opened, but it is there. Each report is opened by
// a button, so the keyboard reaches every one (a clickable item reached none but the
// latest, opened on its own); the list is redrawn every second while a drill runs, so
// the button that had the focus is given it back.
function renderList() {
  const list = $("drill-list");
  const focused = list.contains(document.activeElement)
    ? document.activeElement.closest("[data-drill]") : null;
  list.replaceChildren(...drills.list.map((r) => h("li", {
    class: r.id === drills.selected ? "active" : "", "data-drill": r.id,
  }, h("button", {
    type: "button", class: "drill-entry", onclick: () => select(r.id),
    "aria-current": r.id === drills.selected ? "true" : null,
  }, h("b", {}, r.id), h("br"),
  h("span", { class: `phase ${r.phase}` }, r.phase), " ",
  h("span", { class: "muted" }, `${r.fault} · RTO ${secs(r.rto)} · lost ${r.lost}`)))),
  ...drills.unreadable.map((u) => h("li", {
    class: "unreadable", "data-unreadable": u.id, title: u.error,
  }, h("b", {}, u.id), h("br"),
  h("span", { class: "phase Failed" }, "unreadable"), " ",
  h("span", { class: "muted" }, u.error))));
  if (focused) {
    const again = list.querySelector(`[data-drill="${CSS.escape(focused.dataset.drill)}"] button`);
    if (again) again.focus();
  }
}

async function loadChart(report) {
  if (report.phase === "Running" || drills.chart.id === report.id) return;
  const resp = await fetch(`${DRILLS}/${encodeURIComponent(report.id)}?format=svg`,
    { headers: headers() });
  if (!resp.ok) return;
  const text = await resp.text();
  drills.chart = { id: report.id, url: `data:image/svg+xml;charset=utf-8,${encodeURIComponent(text)}` };
}

async function loadDetail() {
  if (!drills.selected) {
    drills.detail = null;
  } else {
    try {
      drills.detail = await call(`${DRILLS}/${encodeURIComponent(drills.selected)}`);
      await loadChart(drills.detail);
    } catch (err) {
      drills.detail = null;
      $("drill-message").textContent = `cannot read ${drills.selected}: ${err.message}`;
    }
  }
  renderDetail();
}

export async function loadDrills() {
  try {
    const doc = await call(DRILLS);
    drills.list = doc.items || [];
    drills.unreadable = doc.unreadable || [];
    drills.timing = doc.timing || null;
  } catch (err) {
    drills.list = [];
    drills.unreadable = [];
    $("drill-message").textContent = `cannot list drills: ${err.message}`;
  }
  renderTiming();
  if (!drills.list.some((r) => r.id === drills.selected)) {
    drills.selected = drills.list.length ? drills.list[0].id : null;
  }
  renderList();
  await loadDetail();
}

function select(id) {
  drills.selected = id;
  renderList();
  loadDetail();
}

// "90s", "2m", "1h", "500ms" or a bare number of seconds; NaN when it is none of these.
function seconds(text) {
  const m = /^\s*([0-9.]+)\s*(ms|s|m|h)?\s*$/.exec(text || "");
  if (!m) return NaN;
  return parseFloat(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2] || "s"];
}

// What the hold must outlast for a dead member's work to move, on this controller: the
// monitor's detection, then the eviction grace (the chosen cluster's own, if it sets
// one). A shorter hold is allowed (it measures detection alone) but said to move nothing.
function renderTiming() {
  const el = $("drill-timing");
  const t = drills.timing;
  if (!t) return;
  const cluster = drills.clusters.find((c) => (c.metadata || {}).name === $("drill-cluster").value);
  const own = cluster && (cluster.spec || {}).evictionGraceSeconds;
  const grace = own ?? t.evictionGraceSeconds;
  const needed = t.detectSeconds + grace;
  const held = seconds($("drill-duration").value);
  const losing = ["down", "blackhole"].includes($("drill-fault").value);
  const short = losing && held < needed;
  el.className = short ? "hint timing warn" : "hint timing";
  el.dataset.short = short ? "true" : "false";
  el.textContent = `This controller marks a member down about ${Math.round(t.detectSeconds)} s`
    + " after it stops answering, and evicts its work"
    + ` ${Math.round(grace)} s later${own !== undefined && own !== null ? " (this cluster's own grace)" : ""}`
    + `: a down or blackhole fault must be held over ${Math.round(needed)} s for work to move.`
    + (short ? ` Held ${$("drill-duration").value.trim()}, it would measure detection only.` : "");
}

// The options follow the set of cluster names, not their count: a cluster replaced by
// another (one deleted, one added) left the old name offered, and a drill started on it
// was refused as not found. Rebuilt only when the names change, so an open list stays.
export function renderDrillForm(clusters) {
  drills.clusters = clusters;
  const select = $("drill-cluster");
  const names = clusters.map((c) => (c.metadata || {}).name).sort();
  const offered = [...select.options].map((o) => o.value);
  if (offered.join("\n") !== names.join("\n")) {
    const keep = select.value;
    select.replaceChildren(...names.map((n) => h("option", { value: n }, n)));
    if (names.includes(keep)) select.value = keep;
  }
  renderTiming();
}

async function startDrill(event) {
  event.preventDefault();
  const msg = $("drill-message");
  msg.textContent = "starting…";
  try {
    const started = await call(DRILLS, {
      method: "POST",
      body: {
        cluster: $("drill-cluster").value,
        fault: $("drill-fault").value,
        duration: $("drill-duration").value.trim(),
        settle: $("drill-settle").value.trim(),
      },
    });
    drills.selected = started.id;
    msg.textContent = started.message || `started ${started.id}`;
    await loadDrills();
  } catch (err) {
    msg.textContent = `cannot start: ${err.message}`;
  }
}

function viewOpen() {
  return (location.hash || "#clusters") === "#drills";
}

export function setupDrills() {
  $("drill-form").addEventListener("submit", startDrill);
  for (const id of ["drill-cluster", "drill-fault", "drill-duration"]) {
    $(id).addEventListener("input", renderTiming);
  }
  // A running drill grows while the view is open: its detail every second, the list with it.
  let tick = 0;
  setInterval(() => {
    if (!viewOpen()) return;
    tick += 1;
    const running = drills.detail && drills.detail.phase === "Running";
    if (running || drills.list.some((r) => r.phase === "Running") || tick % 5 === 0) {
      loadDrills();
    }
  }, 1000);
}
