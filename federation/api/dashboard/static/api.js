// Talking to the REST API: the bearer token (pasted once, kept in localStorage), JSON
// calls, and the one watch stream a tab keeps (one JSON event per line), which reconnects.

import { $ } from "./dom.js";

export const API = "/apis/fedctl.io/v1alpha1";
const TOKEN_KEY = "fedctl.token";

export function token() {
  return localStorage.getItem(TOKEN_KEY) || "";
}

export function headers(extra = {}) {
  const out = { ...extra };
  if (token()) out.Authorization = `Bearer ${token()}`;
  return out;
}

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export async function call(path, { method = "GET", body, type = "application/json" } = {}) {
  const init = { method, headers: headers(body !== undefined ? { "Content-Type": type } : {}) };
  if (body !== undefined) init.body = typeof body === "string" ? body : JSON.stringify(body);
  const resp = await fetch(path, init);
  const text = await resp.text();
  let parsed = text;
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = { message: text };
  }
  if (resp.status === 401) askToken("The API asked for a token (401).");
  if (resp.status === 503 || (resp.ok && registry.down)) checkRegistry();
  if (!resp.ok) throw new ApiError(resp.status, parsed);
  return parsed;
}

// The registry's state as the badge shows it. The stream is served from the controller's
// caches, so it stayed open, and the badge green "live", while etcd did not answer and
// every view failed. A 503 makes the page ask /readyz (which reads etcd once, within a
// second); while it says the registry is unavailable the badge says so, a banner gives
// its plain sentence, and /readyz is asked again every REGISTRY_RECHECK ms until it is
// back (a call that succeeds asks at once).
const registry = { down: "", checking: false, timer: null, banner: "" };
const REGISTRY_RECHECK = 5000;

async function checkRegistry() {
  if (registry.checking) return;
  registry.checking = true;
  try {
    const resp = await fetch("/readyz");
    const text = (await resp.text()).trim();
    setRegistryDown(resp.ok ? "" : text || `the controller is not ready (HTTP ${resp.status})`);
  } catch {
    setRegistryDown("the controller does not answer");
  } finally {
    registry.checking = false;
  }
}

function setRegistryDown(why) {
  if (why === registry.down) return;
  registry.down = why;
  if (why && !registry.timer) registry.timer = setInterval(checkRegistry, REGISTRY_RECHECK);
  if (!why && registry.timer) {
    clearInterval(registry.timer);
    registry.timer = null;
  }
  const ours = $("banner").textContent === registry.banner;
  registry.banner = why
    ? `The registry is unreachable (${why}): views show what they last read until it is back.`
    : "";
  if (why || ours) banner(registry.banner);
  updateLive();
}

export function banner(message) {
  const el = $("banner");
  el.textContent = message || "";
  el.hidden = !message;
}

// The live stream: one watch carrying every kind the page shows (GET .../watch?resources=
// a,b,...), one JSON event per line, each naming its resource. One, not one per kind: a
// browser keeps six connections per host for all the tabs of a profile, and a stream holds
// one for as long as it is open; four per tab left a second tab's calls queued behind the
// streams, showing nothing. A tab that is hidden closes its stream (so background tabs hold
// no connection at all) and opens it again when shown; each (re)connection starts with a
// BOOKMARK per resource, which is when the page lists that resource again to catch up.
//
// A stream can stall without closing: a NAT, load balancer or VPN that keeps the
// connection open but carries nothing left the badge saying "live" over stale data for
// as long as the socket stayed (a browser's fetch has no read timeout). So the page asks
// for bookmarks (allowWatchBookmarks=true), which the server sends however quiet the
// stream is, at the period its X-Fedctl-Bookmark-Interval header gives, and takes a
// silence of STALL_PERIODS such periods as a dead stream: it aborts it, says
// "reconnecting", and watches (and so lists) again.
const live = { open: false, paused: false, stalled: 0, resources: [] };
const STALL_PERIODS = 2.5;
const INTERVAL_HEADER = "X-Fedctl-Bookmark-Interval";
const CONNECT_TIMEOUT = 75000; // ms an answer may take to begin: 2.5 × the default period

// Whether the stream is open: while it is, changes come on it, and the page polls less.
export function isLive() {
  return live.open;
}

function updateLive() {
  const el = $("live");
  if (registry.down) {
    el.textContent = "registry unreachable";
    el.className = "live off";
    el.dataset.resources = "";
    el.title = registry.down;
    return;
  }
  el.textContent = live.open ? "live" : live.paused ? "paused" : "reconnecting";
  el.className = live.open ? "live on" : "live off";
  el.dataset.resources = live.open ? live.resources.join(",") : "";
  el.title = live.open
    ? `one watch stream following ${live.resources.join(", ")}`
    : live.paused ? "the stream is closed while this tab is hidden"
    : live.stalled ? `the stream carried nothing for ${live.stalled} s: reconnecting…`
    : "reconnecting…";
}

// A timer that calls `onSilent` once `ms` pass without `feed()`; `stop()` ends it.
function watchdog(ms, onSilent) {
  let timer = setTimeout(onSilent, ms);
  return {
    feed(next = ms) {
      clearTimeout(timer);
      ms = next;
      timer = setTimeout(onSilent, ms);
    },
    stop() {
      clearTimeout(timer);
    },
  };
}

async function readLines(resp, onEvent, dog) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    dog.feed();
    buffer += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (!line) continue;
      try {
        onEvent(JSON.parse(line));
      } catch (err) {
        console.warn("bad watch line", err);
      }
    }
  }
}

// Follow `resources` (plurals) on one stream; every event calls onEvent(event), whose
// `resource` names its kind. Reconnects with backoff; no copy of each object is sent on
// connecting (sendInitialEvents=false): the page lists the kinds itself, when each one's
// first bookmark arrives. `onDown()` is called when a stream could not be opened or broke
// (not when it was closed on purpose), for the page to list what no bookmark listed yet.
// Returns `follow(resources)`, which moves the stream to another set of kinds: a view
// opened for the first time adds the kinds it shows, on a new stream whose bookmarks list
// them (and the kinds followed before, which the switch may have missed changes of).
export function watchAll(resources, onEvent, onDown = () => {}) {
  live.resources = resources;
  let backoff = 500;
  let abort = null;
  let timer = null;
  let moving = false;
  const url = () => `${API}/watch?resources=${live.resources.join(",")}&sendInitialEvents=false`
    + "&allowWatchBookmarks=true";
  const run = async () => {
    timer = null;
    moving = false;
    if (document.hidden) {
      live.paused = true;
      updateLive();
      return;
    }
    live.paused = false;
    const mine = new AbortController();
    abort = mine;
    let silence = CONNECT_TIMEOUT;
    const dog = watchdog(silence, () => {
      live.stalled = Math.round(silence / 1000);
      console.warn(`watch: nothing for ${live.stalled} s; reconnecting`);
      mine.abort();
    });
    try {
      const resp = await fetch(url(), { headers: headers(), signal: mine.signal });
      if (resp.status === 401) askToken("The API asked for a token (401).");
      if (!resp.ok || !resp.body) throw new Error(`watch: HTTP ${resp.status}`);
      const period = Number(resp.headers.get(INTERVAL_HEADER));
      // A server that sends no bookmarks cannot be told from a quiet one: no watchdog.
      if (period > 0) dog.feed((silence = STALL_PERIODS * period * 1000));
      else dog.stop();
      live.open = true;
      live.stalled = 0;
      backoff = 500;
      updateLive();
      // Each resource's first bookmark says it is followed from here (the page lists it
      // then); the later ones only say the stream is alive, and go no further.
      const begun = new Set();
      await readLines(resp, (event) => {
        if (event.type === "BOOKMARK") {
          if (begun.has(event.resource)) return;
          begun.add(event.resource);
        }
        onEvent(event);
      }, dog);
    } catch (err) {
      if (err.name !== "AbortError") console.warn(err);
    }
    dog.stop();
    abort = null;
    live.open = false;
    if (moving) {
      run(); // closed to follow other kinds: open the new stream at once
      return;
    }
    if (!mine.signal.aborted || live.stalled) onDown();
    updateLive();
    if (document.hidden) {
      live.paused = true;
      updateLive();
      return; // shown again: visibilitychange starts it
    }
    timer = setTimeout(run, backoff);
    backoff = Math.min(backoff * 2, 10000);
  };
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) {
      if (abort) abort.abort();
    } else if (!abort && !timer) {
      backoff = 500;
      run();
    }
  });
  run();
  return {
    follow(next) {
      if (next.join(",") === live.resources.join(",")) return;
      live.resources = next;
      if (abort) {
        moving = true;
        abort.abort();
      } else if (timer) {
        clearTimeout(timer);
        run();
      } // else hidden: the next run follows `next`
    },
  };
}

export function askToken(why) {
  const dialog = $("token-dialog");
  if (why) $("token-why").textContent = why;
  $("token-input").value = token();
  if (!dialog.open) dialog.showModal();
}

export function setupToken(onSaved) {
  $("token-button").addEventListener("click", () => askToken(
    "Paste a bearer token. It is kept in this browser only (localStorage)."));
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const action = event.submitter ? event.submitter.value : "save";
    if (action === "clear") localStorage.removeItem(TOKEN_KEY);
    else localStorage.setItem(TOKEN_KEY, $("token-input").value.trim());
    $("token-dialog").close();
    onSaved();
  });
}
