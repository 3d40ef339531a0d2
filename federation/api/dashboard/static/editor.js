// The policy editor: YAML with line numbers; as the user types (debounced) the text is
// validated and every finding is marked at its line; a valid text gets the what-if plan
// of the workloads it affects and a diff against the live objects; then Apply.

import { API, call } from "./api.js";
import { $, debounce, h, money } from "./dom.js";
import { verdictTable } from "./views.js";

const LINE_HEIGHT = 20;
let onApplied = () => {};

const editor = { seq: 0, valid: false, objects: 0 };

function renderGutter(text, findings) {
  const lines = text.split("\n").length;
  const byLine = new Map();
  for (const f of findings) {
    const line = f.line || 1;
    if (!byLine.has(line)) byLine.set(line, []);
    byLine.get(line).push(f);
  }
  const gutter = [];
  for (let i = 1; i <= Math.max(lines, 1); i++) {
    const found = byLine.get(i) || [];
    const sev = found.some((f) => f.severity === "error") ? "err" : found.length ? "warn" : "";
    gutter.push(h("div", {
      class: `ln ${sev}`, "data-line": i,
      title: found.map((f) => f.message).join("\n") || null,
    }, i));
  }
  $("gutter").replaceChildren(...gutter);
  $("marks").replaceChildren(...[...byLine.entries()].map(([line, found]) => {
    const sev = found.some((f) => f.severity === "error") ? "err" : "warn";
    return h("div", { class: `mark ${sev}`, style: `top:${(line - 1) * LINE_HEIGHT + 8}px` },
      h("span", { class: "inline-msg", "data-line": line },
        found.map((f) => `${f.path ? f.path + ": " : ""}${f.message}`).join(" · ")));
  }));
  syncScroll();
}

function syncScroll() {
  const area = $("yaml");
  $("gutter").style.transform = `translateY(${-area.scrollTop}px)`;
  $("marks").style.transform = `translate(${-area.scrollLeft}px, ${-area.scrollTop}px)`;
}

// Each finding is a button (reachable with Tab, pressed with Enter or Space) that puts
// the cursor on its line: a clickable list item could not be reached from the keyboard.
function renderFindings(findings) {
  $("findings").replaceChildren(...findings.map((f) =>
    h("li", { class: f.severity, "data-line": f.line },
      h("button", { type: "button", class: "finding", onclick: () => gotoLine(f.line) },
        h("b", {}, `line ${f.line}${f.col ? ":" + f.col : ""}`),
        ` ${f.path ? f.path + ": " : ""}`, f.message))));
}

function gotoLine(line) {
  const area = $("yaml");
  const lines = area.value.split("\n");
  const offset = lines.slice(0, Math.max(line - 1, 0)).join("\n").length + (line > 1 ? 1 : 0);
  area.focus();
  area.setSelectionRange(offset, offset);
  area.scrollTop = Math.max(0, (line - 3) * LINE_HEIGHT);
  syncScroll();
}

function planPlacement(plan) {
  const entries = Object.entries((plan && plan.placement) || {});
  if (!entries.length) return h("span", { class: "pending" }, `pending: ${plan.reason || "no fit"}`);
  return h("ul", { class: "placement" }, entries.map(([name, replicas]) =>
    h("li", { "data-target": name, "data-replicas": replicas }, h("b", {}, name), ` × ${replicas}`,
      plan.chips[name] ? h("span", { class: "chip" }, plan.chips[name]) : null,
      h("span", { class: "muted" }, ` ${money(plan.costs[name], plan.currency)}`))));
}

function samePlacement(a, b) {
  return JSON.stringify(a && a.placement) === JSON.stringify(b && b.placement);
}

function renderNotes(notes) {
  // Policies that claim less than they select: what a plan of nothing would otherwise hide.
  return notes.length
    ? h("ul", { class: "findings notes" }, notes.map((n) => h("li", { class: "warning", "data-note": "" }, n)))
    : null;
}

function renderPlan(result) {
  const plans = result.plans || [];
  const notes = result.notes || [];
  const empty = notes.length ? [] : [h("p", { class: "empty" }, "No workload is affected by these objects.")];
  $("plan").replaceChildren(...[renderNotes(notes)].filter(Boolean), ...(plans.length ? plans.map((p) => {
    const after = p.after;
    const changed = !p.before || !samePlacement(p.before, after);
    return h("article", { class: "card plan", "data-plan": after.workload },
      h("header", {}, h("h3", {}, after.workload),
        h("span", { class: changed ? "phase changed" : "phase same" },
          p.before ? (changed ? "placement changes" : "placement unchanged") : "new workload")),
      h("div", { class: "muted" }, `policy: ${after.policy || "(none: best single cluster)"}`),
      h("div", { class: "before-after" },
        p.before ? h("div", { class: "before" }, h("h4", {}, "now"), planPlacement(p.before)) : null,
        h("div", { class: "after" }, h("h4", {}, "after apply"), planPlacement(after))),
      after.totalCost !== null ? h("div", { class: "muted" }, `total ${money(after.totalCost, after.currency)}`) : null,
      h("details", {}, h("summary", {}, "every cluster's verdict"), verdictTable(after.verdicts, after.podCosts, after.currency)));
  }) : empty));
  $("diff").replaceChildren(...((result.diff || []).map((d) =>
    h("div", { class: "diff-entry", "data-diff": d.key },
      h("div", {}, h("span", { class: `result ${d.result}` }, d.result), " ",
        `${d.kind} ${d.namespace ? d.namespace + "/" : ""}${d.name}`),
      d.diff ? h("pre", { class: "diff" }, d.diff.split("\n").map((line) =>
        h("span", { class: line.startsWith("+") ? "add" : line.startsWith("-") ? "del"
          : line.startsWith("@@") ? "hunk" : "" }, line + "\n"))) : null))));
}

async function checkEditor() {
  const text = $("yaml").value;
  const seq = ++editor.seq;
  const status = $("editor-status");
  if (!text.trim()) {
    renderGutter(text, []);
    renderFindings([]);
    editor.valid = false;
    $("apply").disabled = true;
    status.textContent = "Type or paste YAML: it is checked as you type.";
    return;
  }
  status.textContent = "checking…";
  let checked;
  try {
    checked = await call(`${API}/validate`, { method: "POST", body: text, type: "application/yaml" });
  } catch (err) {
    if (seq === editor.seq) status.textContent = `cannot validate: ${err.message}`;
    return;
  }
  if (seq !== editor.seq) return;
  const findings = checked.findings || [];
  renderGutter(text, findings);
  renderFindings(findings);
  const errors = findings.filter((f) => f.severity === "error").length;
  editor.valid = checked.valid && (checked.objects || []).length > 0;
  $("apply").disabled = !editor.valid;
  status.className = errors ? "editor-status bad" : "editor-status good";
  status.textContent = errors
    ? `${errors} error(s): fix them to see the plan`
    : `valid: ${(checked.objects || []).length} object(s)`;
  if (!editor.valid) {
    $("plan").replaceChildren(h("p", { class: "empty" }, "Fix the errors to see the plan."));
    return;
  }
  try {
    const planned = await call(`${API}/plan`, { method: "POST", body: text, type: "application/yaml" });
    if (seq === editor.seq) renderPlan(planned);
  } catch (err) {
    if (seq === editor.seq) {
      $("plan").replaceChildren(h("p", { class: "error" }, `plan failed: ${err.message}`));
    }
  }
}

async function applyEditor() {
  const out = $("apply-result");
  out.textContent = "applying…";
  try {
    const applied = await call(`${API}/apply`, {
      method: "POST", body: $("yaml").value, type: "application/yaml",
    });
    out.replaceChildren(...(applied.results || []).map((r) =>
      h("span", { class: `result ${r.result}`, "data-applied": r.name },
        `${r.kind} ${r.name} ${r.result}`)), ...[renderNotes(applied.warnings || [])].filter(Boolean));
    onApplied();
    checkEditor();
  } catch (err) {
    out.textContent = `apply failed: ${err.message}`;
  }
}

// Tab indents and Shift+Tab outdents the cursor's line, as in a code editor; Escape then
// Tab (or Shift+Tab) moves the focus on, as it does in CodeMirror and Monaco. Every Tab
// used to be taken, so a keyboard user who entered the text could not leave it. The
// hint under the editor (its aria-describedby) says so.
function indentKeys(area) {
  let escaped = false;
  area.addEventListener("blur", () => { escaped = false; });
  return (event) => {
    if (event.key === "Escape") {
      escaped = true;
      return;
    }
    if (MODIFIERS.has(event.key)) return; // Shift of Shift+Tab comes first, on its own
    const leave = escaped || event.ctrlKey || event.metaKey || event.altKey;
    escaped = false;
    if (event.key !== "Tab" || leave) return;
    event.preventDefault();
    if (event.shiftKey) outdent(area);
    else area.setRangeText("  ", area.selectionStart, area.selectionEnd, "end");
    area.dispatchEvent(new Event("input"));
  };
}

const MODIFIERS = new Set(["Shift", "Control", "Alt", "Meta"]);

// Up to two spaces off the start of the cursor's line, the cursor kept on its text.
function outdent(area) {
  const start = area.value.lastIndexOf("\n", area.selectionStart - 1) + 1;
  const spaces = /^ {0,2}/.exec(area.value.slice(start))[0].length;
  if (!spaces) return;
  const [from, to] = [area.selectionStart, area.selectionEnd];
  area.setRangeText("", start, start + spaces, "preserve");
  area.setSelectionRange(Math.max(start, from - spaces), Math.max(start, to - spaces));
}

export function setupEditor(applied) {
  onApplied = applied;
  const area = $("yaml");
  const check = debounce(checkEditor, 300);
  area.addEventListener("input", () => {
    renderGutter(area.value, []);
    check();
  });
  area.addEventListener("scroll", syncScroll);
  area.addEventListener("keydown", indentKeys(area));
  $("apply").addEventListener("click", applyEditor);
  renderGutter("", []);
}
