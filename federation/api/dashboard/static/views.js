// The read-only views: clusters by region (chips, capacity by chip and pod slots, prices,
// health, taints), queues (depth, admitted, share against weight, what their placed work costs an
// hour, pending reasons) and workloads
// (where each runs and why, from its Binding). Each renders from the listed objects.

import { $, fmt, h, meta, money, moneyOf, qty } from "./dom.js";

// Capacity per chip from the monitor's node flavors: CPU cores under the nodes' arch for
// every flavor (GPU nodes have cores too: `fedctl cluster list` counts them, and leaving
// them out showed 32 of ap-southeast-l4's 176), devices under the accelerator model.
function capacityByChip(status) {
  const chips = new Map();
  const add = (chip, unit, total, free, nodes) => {
    const entry = chips.get(chip) || { chip, unit, total: 0, free: 0, nodes: 0 };
    entry.total += total;
    entry.free += Math.min(free, total);
    entry.nodes += nodes;
    chips.set(chip, entry);
  };
  for (const f of (status && status.flavors) || []) {
    const count = f.nodeCount || 0;
    const of = (resource) => [
      qty((f.allocatable || {})[resource]) * count, qty((f.free || {})[resource])];
    add(f.arch, "cores", ...of("cpu"), count);
    if (f.acceleratorModel) {
      add(f.acceleratorModel, "devices", ...of(f.acceleratorResource), count);
    }
  }
  // Plain arches first, as the spec lists chips, then the accelerators.
  return [...chips.values()].sort((a, b) =>
    (a.unit === "devices") - (b.unit === "devices") || a.chip.localeCompare(b.chip));
}

// The chips as the monitor observed them, counted as `fedctl cluster list` counts them:
// devices of an accelerator model, nodes without an accelerator of a plain arch. Before
// the first observation, the spec's declared counts, saying so.
function chipBadges(spec, status) {
  const declared = new Map((spec.chips || []).map((c) => [c.model, c.count]));
  const flavors = (status && status.flavors) || [];
  if (!flavors.length) {
    return (spec.chips || []).map((c) => h("span", {
      class: "chip declared", "data-chip": c.model,
      title: "declared in the spec; not observed by the monitor yet",
    }, `${c.model} ×${c.count} declared`));
  }
  const seen = new Map();
  for (const f of flavors) {
    const accel = f.acceleratorModel && f.acceleratorResource;
    const model = accel ? f.acceleratorModel : f.arch;
    const n = accel
      ? qty((f.allocatable || {})[f.acceleratorResource]) * (f.nodeCount || 0)
      : f.nodeCount || 0;
    const entry = seen.get(model) || { model, n: 0, unit: accel ? "devices" : "nodes" };
    entry.n += n;
    seen.set(model, entry);
  }
  return [...seen.values()].map((c) => h("span", {
    class: "chip", "data-chip": c.model,
    title: c.unit === "devices"
      ? `${c.n} ${c.model} devices observed (the spec declares ${declared.get(c.model) ?? "none"})`
      : `${c.n} ${c.model} nodes without accelerators observed `
        + `(the spec declares ${declared.get(c.model) ?? "none"} ${c.model} nodes in all)`,
  }, `${c.model} ×${fmt(c.n)} ${c.unit}`));
}

export function bar(used, total, label, attrs = {}, text = null) {
  const pct = total > 0 ? Math.round((100 * used) / total) : 0;
  return h("div", { class: "bar-row", ...attrs },
    h("span", { class: "bar-label" }, label),
    h("span", { class: "bar-text" }, text ?? `${fmt(total - used)} free / ${fmt(total)}`),
    h("div", { class: "bar", title: `${fmt(used)} used of ${fmt(total)}` },
      h("div", { class: pct > 85 ? "fill hot" : "fill", style: `width:${pct}%` })));
}

// Until every list a view is drawn from has answered, the view says it is loading (or why
// a list failed): an empty table or zero counts would look like live data.
function notLoaded(root, state, kinds, what) {
  const missing = kinds.filter((k) => !state.loaded[k]);
  if (!missing.length) return false;
  const failed = missing.filter((k) => state.failed[k]);
  root.replaceChildren(h("p", { class: failed.length ? "empty error" : "empty", "data-loading": "" },
    failed.length
      ? `Cannot show ${what}: ${failed.map((k) => `${k}: ${state.failed[k]}`).join("; ")}`
      : `Loading ${what}…`));
  return true;
}

function readiness(cluster) {
  const conds = (cluster.status && cluster.status.conditions) || [];
  const ready = conds.find((c) => c.type === "Ready");
  if (!ready) return { cls: "unknown", text: "Unknown", title: "no status from the monitor yet" };
  if (ready.status === "True") return { cls: "ready", text: "Ready", title: ready.message || "" };
  return {
    cls: "notready",
    text: ready.reason || "NotReady",
    title: ready.message || ready.reason || "",
  };
}

function tableParts(table) {
  const parts = [`${table.cpu ?? 0}/core·h`, `${table.memory ?? 0}/GiB·h`];
  for (const [model, p] of Object.entries(table.accelerators || {})) parts.push(`${model} ${p}/h`);
  return parts.join(" · ");
}

// The whole spot table: a GPU's spot price is most of a spot job's bill, and only the
// spot CPU price was shown.
function priceLine(prices) {
  if (!prices) return h("div", { class: "price" }, "no prices");
  const cur = prices.currency || "USD";
  return h("div", { class: "price" },
    h("div", { "data-prices": "on-demand" }, `${cur} ${tableParts(prices.onDemand || {})}`),
    prices.spot ? h("div", { "data-prices": "spot" }, `spot ${tableParts(prices.spot)}`) : null);
}

// Pod slots of the ready nodes (their allocatable `pods`), which the scheduler counts as
// it counts cores: a member full by pod count showed a third of its cores free and no
// sign that nothing more fits. None when the nodes report no pod capacity.
function podSlots(status) {
  const totals = (status && status.totals) || {};
  const total = qty((totals.allocatable || {}).pods);
  if (!total) return null;
  const free = Math.min(qty((totals.free || {}).pods), total);
  return bar(total - free, total, "pods", { "data-capacity": "pods" });
}

function clusterCard(cluster) {
  const spec = cluster.spec || {};
  const name = meta(cluster).name;
  const r = readiness(cluster);
  const taints = [...(spec.taints || []), ...((cluster.status && cluster.status.taints) || [])];
  const caps = capacityByChip(cluster.status);
  return h("article", { class: `card cluster ${r.cls}`, "data-cluster": name },
    h("header", {},
      h("h3", {}, name),
      h("span", { class: `health ${r.cls}`, title: r.title, "data-health": r.text }, r.text)),
    h("div", { class: "sub" },
      [spec.zone, spec.provider, cluster.status && cluster.status.kubernetesVersion]
        .filter(Boolean).join(" · ")),
    h("div", { class: "chips" }, chipBadges(spec, cluster.status)),
    h("div", { class: "capacity" },
      caps.length
        ? [...caps.map((c) => bar(c.total - c.free, c.total, `${c.chip} ${c.unit}`,
            { "data-capacity": c.chip })), podSlots(cluster.status)]
        : h("p", { class: "empty" }, "capacity not reported yet")),
    priceLine(spec.prices),
    taints.length
      ? h("div", { class: "taints" }, taints.map((t) =>
          h("span", { class: `taint ${t.effect}` },
            `${t.key}${t.value ? "=" + t.value : ""}:${t.effect}`)))
      : null);
}

// What the Clusters view's filter box matches a cluster against: its name, region, zone,
// provider, chips (declared and observed, arch and accelerator model) and readiness text,
// lower-cased. At 144 clusters the view was one long scroll of cards, and "which GPU
// clusters are not Ready" took some 36 screens.
function haystack(cluster) {
  const spec = cluster.spec || {};
  const flavors = (cluster.status && cluster.status.flavors) || [];
  return [
    meta(cluster).name, spec.region, spec.zone, spec.provider, readiness(cluster).text,
    ...(spec.chips || []).map((c) => c.model),
    ...flavors.flatMap((f) => [f.arch, f.acceleratorModel]),
  ].filter(Boolean).join(" ").toLowerCase();
}

// Every whitespace-separated word of the filter must appear somewhere in the cluster's
// text: "a100 notready" finds the A100 clusters that are not Ready.
export function clusterMatches(cluster, filter) {
  const words = String(filter || "").toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return true;
  const text = haystack(cluster);
  return words.every((w) => text.includes(w));
}

// Regions the user folded, kept across redraws (every answer redraws the view).
const folded = new Set();

function regionSection(region, items, shown) {
  const ready = items.filter((c) => readiness(c).cls === "ready").length;
  const matched = shown.length === items.length ? "" : `${shown.length} of ${items.length} shown · `;
  const details = h("details", { open: !folded.has(region) },
    h("summary", { title: "Enter or Space folds or unfolds this region" },
      h("h2", {}, region, h("span", { class: "count" }, `${matched}${ready}/${items.length} ready`))),
    h("div", { class: "cards" }, shown.map(clusterCard)));
  details.addEventListener("toggle", () => {
    if (details.open) folded.delete(region);
    else folded.add(region);
  });
  return h("section", { class: "region", "data-region": region }, details);
}

export function renderClusters(state, filter = "") {
  const root = $("clusters");
  if (notLoaded(root, state, ["clusters"], "clusters")) return;
  const byRegion = new Map();
  for (const c of state.clusters) {
    const region = (c.spec && c.spec.region) || "(no region)";
    if (!byRegion.has(region)) byRegion.set(region, []);
    byRegion.get(region).push(c);
  }
  let matching = 0;
  const sections = [];
  for (const region of [...byRegion.keys()].sort()) {
    const items = byRegion.get(region).sort((a, b) => meta(a).name.localeCompare(meta(b).name));
    const shown = items.filter((c) => clusterMatches(c, filter));
    matching += shown.length;
    if (shown.length) sections.push(regionSection(region, items, shown));
  }
  const count = $("cluster-count");
  if (count) {
    count.textContent = filter.trim()
      ? `${matching} of ${state.clusters.length} clusters match`
      : `${state.clusters.length} clusters`;
  }
  let empty = null;
  if (!state.clusters.length) {
    empty = "No clusters registered. Apply Cluster objects to add some.";
  } else if (!sections.length) {
    empty = `No cluster matches "${filter.trim()}".`;
  }
  root.replaceChildren(...(empty ? [h("p", { class: "empty" }, empty)] : sections));
}

export function workloadKey(ns, apiVersion, kind, name) {
  return `${ns}/${apiVersion}/${kind}/${name}`;
}

export function workloadOf(binding) {
  const w = (binding.spec && binding.spec.workload) || {};
  return workloadKey(w.namespace, w.apiVersion, w.kind, w.name);
}

// A Namespace or ConfigMap is bound like work, but nobody queued it: a Binding that
// records no pod and no cost is not counted as admitted (as `fedctl get queues` does not).
function runsPods(binding) {
  const spec = binding.spec || {};
  return Object.keys(spec.podRequests || {}).length > 0
    || (spec.clusters || []).some((t) => t.hourlyCost !== undefined && t.hourlyCost !== null);
}

// Depth and admitted come from the queue status view (state.queueStatus), which counts them
// exactly as `fedctl get queues` does: workloads still waiting for their first Binding are
// pending, finished jobs and Bindings whose workload is gone are not admitted, a parent's
// counts are its subtree's. Counting Bindings here got all three wrong; it is only the
// fallback for a queue the view has not answered for yet. The pending reasons are the
// Pending Bindings' own, live; what each queue holds (its dominant share and usage against
// its limits) comes from the view as well, charged as the scheduler does.
export function renderQueues(state) {
  const root = $("queues");
  const viewed = Boolean(state.loaded.queueStatus);
  if (notLoaded(root, state, viewed ? ["queues"] : ["queues", "bindings"], "queues")) return;
  const reasonsIn = Boolean(state.loaded.bindings);
  const status = new Map((state.queueStatus || []).map((q) => [q.name, q]));
  const stats = new Map(state.queues.map((q) => [meta(q).name, { pending: [], admitted: 0 }]));
  for (const b of state.bindings) {
    const q = (b.spec && b.spec.queue) || "default";
    if (!stats.has(q)) stats.set(q, { pending: [], admitted: 0, unknown: true });
    const s = stats.get(q);
    if ((b.status || {}).phase !== "Scheduled") s.pending.push(b);
    else if (runsPods(b)) s.admitted += 1;
  }
  // A queue the view lists but nobody defined (where a mistyped queue's work waits), even
  // while none of its waiting workloads has a Binding yet; and the implicit `default`,
  // where work naming no queue goes, always (as `fedctl get queues` lists it).
  for (const item of state.queueStatus || []) {
    if (!item.defined && !stats.has(item.name)) {
      stats.set(item.name, { pending: [], admitted: 0, unknown: true });
    }
  }
  if (!stats.has(IMPLICIT)) stats.set(IMPLICIT, { pending: [], admitted: 0, unknown: true });
  // A parent takes no work itself: its row shows what its whole subtree holds and waits for.
  const parentOf = new Map(state.queues.map((q) => [meta(q).name, (q.spec || {}).parent || null]));
  const hasChildren = new Set([...parentOf.values()].filter(Boolean));
  // What each queue's placed work costs an hour (the costs view, as `fedctl cost`). For a
  // token that reads only some namespaces the view says which (`namespaces`): its figures
  // are that work's alone, beside counts of the whole queue.
  const costs = state.costs || { items: [], currency: "" };
  const yours = Array.isArray(costs.namespaces) ? costs.namespaces : null;
  for (const line of costs.items) {
    if (!stats.has(line.name)) stats.set(line.name, { pending: [], admitted: 0, unknown: true });
  }
  // With how many replicas each line counts and how many of them have no known price:
  // those read "unpriced", never as a cost of 0.
  const lines = new Map(costs.items.map((line) => [line.name, {
    cost: Number(line.hourlyCost), replicas: line.replicas || 0,
    unpriced: line.unpricedReplicas || 0,
  }]));
  const none = { cost: 0, replicas: 0, unpriced: 0 };
  const rolled = new Map([...stats].map(([n, s]) =>
    [n, { ...s, pending: [...s.pending], ...(lines.get(n) || none) }]));
  for (const [name, s] of stats) {
    const seen = new Set([name]);
    const line = lines.get(name) || none;
    for (let p = parentOf.get(name); p && rolled.has(p) && !seen.has(p); p = parentOf.get(p)) {
      const r = rolled.get(p);
      r.pending.push(...s.pending);
      r.admitted += s.admitted;
      r.cost += line.cost;
      r.replicas += line.replicas;
      r.unpriced += line.unpriced;
      seen.add(p);
    }
  }
  // Depth and admitted: the view's, else (not answered for this queue yet) the Bindings'.
  const counts = (name, s) => {
    const item = status.get(name);
    return item
      ? { depth: item.pending, admitted: item.admitted, by: "view" }
      : { depth: s.pending.length, admitted: s.admitted, by: "bindings" };
  };
  // The unweighted dominant share (a parent's is its subtree's, as the view reports it).
  const dominant = (name) => {
    const q = status.get(name);
    return q ? q.share * q.weight : 0;
  };
  // A queue that Bindings or the view name but nobody defined is where a mistyped queue's
  // work waits; `default` is no stored object either, but is where work naming no queue
  // runs. Neither has a weight of its own (the CLI shows "-"), so neither counts in its
  // siblings' weights; what each holds counts among theirs.
  const undefinedQueues = [...stats.keys()].filter((n) => !parentOf.has(n))
    .map((n) => ({ metadata: { name: n }, spec: {}, undefinedQueue: true }));
  const queues = state.queues.concat(undefinedQueues)
    .sort((a, b) => meta(a).name.localeCompare(meta(b).name));
  // Fair share goes level by level, so both bars compare a queue with its siblings.
  const siblings = (parent) => queues.filter((q) => ((q.spec || {}).parent || null) === parent);
  const siblingsWeight = (parent) => siblings(parent)
    .filter((q) => !q.undefinedQueue)
    .reduce((n, q) => n + ((q.spec || {}).weight || 1), 0);
  const siblingsDominant = (parent) => siblings(parent)
    .reduce((n, q) => n + dominant(meta(q).name), 0);
  const rows = queues.map((q) => {
    const spec = q.spec || {};
    const s = rolled.get(meta(q).name);
    const parent = hasChildren.has(meta(q).name);
    const weightShare = (spec.weight || 1) / (siblingsWeight(spec.parent || null) || 1);
    const around = siblingsDominant(spec.parent || null);
    const share = around > 0 ? dominant(meta(q).name) / around : 0;
    const held = status.get(meta(q).name);
    const n = counts(meta(q).name, s);
    const byBindings = n.by === "bindings"
      ? "counted from Bindings until the queue status view answers" : null;
    // Waiting workloads the scheduler has not written a Binding for yet have no reason to
    // show, but are counted: say how many, rather than a list shorter than the depth. A
    // tenant's token reads only its namespaces' Bindings, so the rest may be bound too.
    const unbound = reasonsIn ? Math.max(0, n.depth - s.pending.length) : 0;
    const unboundText = yours
      ? `${unbound} not visible to you: in namespaces your token cannot read, or with no`
        + " Binding yet"
      : `${unbound} with no Binding yet: waiting for the scheduler`;
    const budgeted = spec.maxHourlyCost !== undefined && spec.maxHourlyCost !== null;
    // A parent's budget caps its whole subtree, whose cost its row shows.
    const over = Boolean(state.costs) && budgeted && s.cost > Number(spec.maxHourlyCost);
    return h("tr", {
      "data-queue": meta(q).name, "data-counted-by": n.by, class: over ? "over-budget" : null,
    },
      h("td", {}, spec.parent ? h("span", { class: "muted" }, `${spec.parent} / `) : null,
        meta(q).name,
        q.undefinedQueue
          ? h("span", { class: "muted" }, meta(q).name === IMPLICIT ? " (implicit)" : " (not defined)")
          : null),
      h("td", { class: "num" }, q.undefinedQueue ? "-" : spec.weight || 1),
      h("td", { class: "num", "data-depth": n.depth, title: byBindings }, n.depth),
      h("td", { class: "num", "data-admitted": n.admitted, title: byBindings }, n.admitted),
      h("td", { class: "num cost", "data-cost": s.cost },
        h("div", {}, state.costs ? moneyOf(s.cost, s.replicas, s.unpriced, costs.currency) : "-"),
        budgeted
          ? h("div", { class: "muted budget", "data-budget": spec.maxHourlyCost },
            `of ${money(spec.maxHourlyCost, costs.currency)}`)
          : null,
        over
          ? h("div", { class: "over", "data-over-budget": "", title: OVER_BUDGET },
            "over budget")
          : null),
      h("td", { class: "shares", title: held ? `holds ${usageText(held)}` : "" },
        bar(Math.round(share * 100), 100, "holds", { class: "bar-row small" },
          `${Math.round(share * 100)}%`),
        q.undefinedQueue ? null : bar(Math.round(weightShare * 100), 100, "weight",
          { class: "bar-row small weight" }, `${Math.round(weightShare * 100)}%`)),
      h("td", {}, !reasonsIn
        ? h("span", { class: "muted" }, "loading…")
        : parent && n.depth
        ? h("span", { class: "muted" }, "in its child queues")
        : s.pending.length || unbound
        ? h("ul", { class: "reasons" }, s.pending.map((b) =>
            h("li", {}, h("b", {}, (b.spec.workload || {}).name || "?"), ": ",
              (b.status || {}).reason || "waiting for the scheduler")),
          unbound ? h("li", { class: "muted", "data-unbound": unbound }, unboundText) : null)
        : h("span", { class: "muted" }, "none")));
  });
  root.replaceChildren(h("table", { class: "grid queues" },
    h("thead", {}, h("tr", {}, headers(yours).map(([t, title]) => h("th", { title }, t)))),
    h("tbody", {}, rows)));
}

// The queue of work that names none (`fedctl.io/queue` unset): never stored, always there.
const IMPLICIT = "default";

// What admission does with a queue over its budget (as `fedctl describe queue` says it).
const OVER_BUDGET = "Over its budget (a lowered budget, or prices that rose): admitted work "
  + "keeps running; nothing more is admitted to it until its cost falls below the budget.";

// Column names, each with what it measures. "Holds" is not the SHARE of `fedctl get
// queues` (the queue's weighted dominant share of the whole federation): it compares the
// queue with its siblings only, as fair share does, level by level.
const HEADERS = [
  ["Queue", null],
  ["Weight", "spec.weight: its part of fair share among its siblings"],
  ["Depth", "workloads waiting to be placed (fedctl get queues: PENDING)"],
  ["Admitted", "placed workloads that run pods and have not finished (ADMITTED)"],
  ["Cost", "what its placed work costs an hour (fedctl cost), of its budget if it has one"],
  ["Holds vs weight", "holds: its part of what it and its siblings hold, each by its "
    + "dominant resource; weight: its part of its siblings' weights, which is what fair "
    + "share gives it. Not the SHARE column of fedctl get queues, which is the queue's "
    + "weighted dominant share of the whole federation."],
  ["Pending reasons", "why each waiting workload waits, from its Binding"],
];

// The columns, the cost's marked as the caller's own when the costs view covers only
// `yours` (as `fedctl get queues -o wide` heads it COST/H(USD,YOURS)): other teams' work
// read as costing nothing.
function headers(yours) {
  if (!yours) return HEADERS;
  const where = yours.length ? yours.join(", ") : "none";
  return HEADERS.map(([t, title]) => t === "Cost"
    ? ["Cost (yours)", `what the placed work in your namespaces (${where}) costs an hour`
      + " (fedctl cost), of the queue's budget if it has one; the queue's other work is not"
      + " visible to your token"]
    : [t, title]);
}

// "nvidia.com/gpu 24/32, cpu 40/-": what a queue holds against its capability.
function usageText(item) {
  const cap = item.capability || {};
  const names = [...new Set([...Object.keys(item.used || {}), ...Object.keys(cap)])].sort();
  return names.map((n) => `${n} ${(item.used || {})[n] || "0"}/${cap[n] || "-"}`).join(", ");
}

// `pods`: a plan's podCosts (what one pod costs an hour on each cluster that passed), shown
// beside the scores they ranked; a Binding's explanation has none.
export function verdictTable(verdicts, pods = null, currency = "") {
  if (!verdicts || !verdicts.length) return h("p", { class: "muted" }, "no explanation");
  const pod = (v) => pods && v.cluster in pods
    ? h("span", { class: "muted", "data-pod-cost": v.cluster }, ` pod ${money(pods[v.cluster], currency)}`)
    : null;
  return h("table", { class: "grid verdicts" },
    h("thead", {}, h("tr", {}, ["Cluster", "Verdict", "Score", "Why"].map((t) => h("th", {}, t)))),
    h("tbody", {}, verdicts.map((v) => h("tr", {
      class: v.selected ? "selected" : v.verdict, "data-verdict-cluster": v.cluster,
    },
      h("td", {}, v.cluster, v.selected ? " ✓" : ""),
      h("td", {}, v.verdict),
      h("td", { class: "num" }, v.score ?? "–"),
      h("td", {}, v.verdict === "ok"
        ? [Object.entries(v.scores || {}).map(([k, n]) => `${k}=${n}`).join(" "),
          (v.reasons || []).length ? ` (${v.reasons.join("; ")})` : "", pod(v)]
        : `${v.plugin || ""}: ${(v.reasons || []).join("; ")}`)))));
}

// What one member reports of its copy, as the READY cell of `fedctl get workloads`: a
// placement alone says nothing of whether its pods run (a crash-looping Deployment read
// as placed and well). A member that is not Ready shows `?`: its last report is no
// evidence that anything still runs there.
function memberReady(row) {
  if (!row) return { text: "not reported yet", cls: "unknown" };
  if (row.error && !row.applied && !FINISHED.has(row.phase)) {
    return { text: "error", cls: "bad", title: row.error };
  }
  if (row.stale) {
    return { text: `${row.phase || `?/${row.replicas || 0} ready`} (member not Ready)`, cls: "unknown" };
  }
  if (row.phase) return { text: row.phase, cls: HEALTH_CLASS[row.health] || "unknown" };
  return {
    text: `${row.readyReplicas || 0}/${row.replicas || 0} ready`,
    cls: HEALTH_CLASS[row.health] || "unknown",
    title: row.message || null,
  };
}

// `currency`: the costs view's (every recorded cost is in it); a finished job's targets
// show no cost, since it costs nothing more.
// `rows`: each member's report from the workload status view, by cluster: how many of
// its replicas are ready there, and whether the policy's `suspension` holds its copy back
// (marked as `fedctl get works` marks it: the copy does not follow the template).
// `pods`: the Binding places pods, so a target with no cost is unpriced (a ConfigMap's
// costs nothing and shows none) and its readiness is worth showing.
function placementList(targets, currency, finished, rows = new Map(), pods = false) {
  return h("ul", { class: "placement" }, targets.map((t) => {
    const row = rows.get(t.name);
    const ready = pods ? memberReady(row) : null;
    return h("li", { "data-target": t.name, "data-replicas": t.replicas },
      h("b", {}, t.name),
      h("span", { title: `${t.replicas} replica(s) placed on ${t.name} by the Binding` },
        ` × ${t.replicas}`),
      t.chip ? h("span", { class: "chip" }, t.chip) : null,
      (t.hourlyCost !== undefined || pods) && !finished
        ? h("span", { class: "muted", "data-target-cost": "" }, ` ${money(t.hourlyCost, currency)}`)
        : null,
      ready
        ? h("span", { class: `member-ready ${ready.cls}`, "data-ready": ready.text, title: ready.title },
          ready.text)
        : null,
      row && row.suspended
        ? h("span", { class: "muted", "data-suspended": "" }, " (dispatching suspended)")
        : null);
  }));
}

// A health badge's colour, by the aggregated health (`fedctl get workloads` HEALTH).
const HEALTH_CLASS = {
  Healthy: "ready", Progressing: "progressing", Unhealthy: "notready", Failed: "notready",
  Completed: "done", Unknown: "unknown", Suspended: "idle",
};

// The workload's health and how many of its replicas are ready in all (a job's phase
// instead), as `fedctl get workloads` shows them beside where it runs. A suspended Job's
// health is Suspended, as kubectl's STATUS says: it runs nothing, which is no fault.
function healthBadges(w, result) {
  const health = (w.spec || {}).suspend === true ? "Suspended" : result && result.health;
  if (!health) return [];
  const counted = result && (result.phase || result.replicas);
  const ready = counted
    ? result.phase || `${result.readyReplicas || 0}/${result.replicas || 0} ready`
    : null;
  return [
    ready ? h("span", { class: "muted", "data-ready": ready }, ready) : null,
    h("span", { class: `health ${HEALTH_CLASS[health] || "unknown"}`, "data-health": health },
      health),
  ];
}

// What the workload's pods reference that the federation does not hold, so its policy's
// propagateDeps cannot send it (as `fedctl describe` says it): its pods wait for it on any
// member that has no copy of its own.
function missingDependencies(result) {
  const missing = (result && result.missingDependencies) || [];
  return missing.length
    ? h("p", { class: "reason", "data-missing": "" },
      `missing dependencies: ${missing.join(", ")} (not in the federation, so`
      + " propagateDeps cannot send them: each member must have its own)")
    : null;
}

// The policy the Binding records as its workload's claimant (`fedctl.io/policy`): with
// several policies selecting a workload, which one places it is the first thing to know.
function claimant(binding) {
  const recorded = ((binding.metadata || {}).annotations || {})["fedctl.io/policy"];
  if (recorded === undefined) return "none (placed whole on the best cluster)";
  if (!recorded) return "none: the policy that claimed it is gone; it stays where it is";
  const [kind, ...name] = recorded.split("/");
  return `${kind} ${name.join("/")}`;
}

const FINISHED = new Set(["Succeeded", "Failed"]);

// A finished job's card says how it ended (as `fedctl get workloads` does), not the
// "Scheduled" its Binding keeps, and no hourly cost: it costs nothing more (`fedctl cost`).
function workloadCard(w, binding, result, currency) {
  const m = meta(w);
  const spec = (binding && binding.spec) || {};
  const status = (binding && binding.status) || {};
  const summary = Object.entries(spec.filteredSummary || {});
  const replicas = (w.spec || {}).replicas;
  const title = m.namespace ? `${m.namespace}/${m.name}` : m.name;
  const ended = result && FINISHED.has(result.phase) ? result.phase : null;
  const phase = ended || (binding ? status.phase || "Pending" : null);
  return h("article", { class: "card workload", "data-workload": title },
    h("header", {},
      h("h3", {}, title),
      h("span", { class: "muted" },
        `${w.kind}${replicas !== undefined ? ` · ${replicas} replica(s)` : ""}`),
      ended ? null : healthBadges(w, result),
      h("span", { class: `phase ${phase || "none"}`, "data-phase": phase || "",
        title: phase === "Scheduled" ? "placed by the scheduler; its health says how it runs" : null },
        phase || "not scheduled")),
    !binding
      ? h("p", { class: "muted", "data-unbound": "" }, ended
        ? "Finished; its Binding is gone."
        : result && result.federationOnly
        ? "No propagation policy selects it: kept in the federation only."
        : "No Binding yet: the scheduler has not placed this workload.")
      : [
          status.reason && !ended ? h("p", { class: "reason" }, status.reason) : null,
          h("p", { class: "muted", "data-policy": "" }, `policy: ${claimant(binding)}`),
          missingDependencies(result),
          spec.clusters && spec.clusters.length
            ? placementList(spec.clusters, currency, Boolean(ended), new Map(
              ((result && result.clusters) || []).map((c) => [c.cluster, c])),
              runsPods(binding))
            : null,
          ended
            ? h("p", { class: "muted", "data-cost": "" },
              `${ended === "Succeeded" ? "finished" : "failed"}: costs nothing more`)
            : spec.hourlyCost !== undefined || (runsPods(binding) && (spec.clusters || []).length)
            ? h("p", { class: "muted", "data-cost": "" }, `total ${money(spec.hourlyCost, currency)}`)
            : null,
          h("details", { open: !ended }, h("summary", {}, "Why here"),
            verdictTable(spec.explanation),
            summary.length ? h("p", { class: "muted" }, "filtered: " +
              summary.map(([k, n]) => `${n} by ${k}`).join(", ")) : null),
        ]);
}

// The registry's key segment of a workload kind: apps/v1 Deployment -> Deployment.apps.
function kindSegment(apiVersion, kind) {
  const slash = (apiVersion || "").lastIndexOf("/");
  return slash > 0 ? `${kind}.${apiVersion.slice(0, slash)}` : kind;
}

// A cluster-scoped workload (a Namespace) has no namespace; its Binding and status are
// keyed under "_" (federation/registry/keys.py CLUSTER_SCOPE), never "default": the API
// fills "default" in for every namespaced kind, so a workload without one is cluster-scoped.
const CLUSTER_SCOPE = "_";

export function renderWorkloads(state) {
  const root = $("workloads");
  // The status view too, or a finished job would show "Scheduled" until it answers.
  if (notLoaded(root, state, ["workloads", "bindings", "workloadStatus"], "workloads")) return;
  const bindings = new Map(state.bindings.map((b) => [workloadOf(b), b]));
  const currency = (state.costs || {}).currency || "";
  const cards = state.workloads
    .slice()
    .sort((a, b) => `${meta(a).namespace}/${meta(a).name}`.localeCompare(
      `${meta(b).namespace}/${meta(b).name}`))
    .map((w) => {
      const ns = meta(w).namespace || CLUSTER_SCOPE;
      return workloadCard(w,
        bindings.get(workloadKey(ns, w.apiVersion, w.kind, meta(w).name)),
        state.workloadStatus.get(`${ns}/${kindSegment(w.apiVersion, w.kind)}/${meta(w).name}`),
        currency);
    });
  root.replaceChildren(...(cards.length ? cards
    : [h("p", { class: "empty" }, "No workloads. Apply a Deployment or Job to see it here.")]));
}
