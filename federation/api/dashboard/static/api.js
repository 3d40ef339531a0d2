// Talking to the REST API: the bearer token (pasted once, kept in localStorage), JSON
// calls, and watch streams (?watch=true, one JSON event per line) that reconnect.

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
  if (!resp.ok) throw new ApiError(resp.status, parsed);
  return parsed;
}

export function banner(message) {
  const el = $("banner");
  el.textContent = message || "";
  el.hidden = !message;
}

// A watch: stream JSON lines; every event calls onEvent. Reconnects with backoff.
const streams = new Map();

function updateLive() {
  const open = [...streams.values()].filter((s) => s.open).length;
  const el = $("live");
  el.textContent = open ? `live (${open})` : "offline";
  el.className = open ? "live on" : "live off";
}

export function watch(name, path, onEvent) {
  const state = { open: false, backoff: 500 };
  streams.set(name, state);
  const run = async () => {
    try {
      const resp = await fetch(`${path}?watch=true`, { headers: headers() });
      if (resp.status === 401) askToken("The API asked for a token (401).");
      if (!resp.ok || !resp.body) throw new Error(`watch ${name}: HTTP ${resp.status}`);
      state.open = true;
      state.backoff = 500;
      updateLive();
      const reader = resp.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let nl;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl).trim();
          buffer = buffer.slice(nl + 1);
          if (!line) continue;
          try {
            onEvent(JSON.parse(line));
          } catch (err) {
            console.warn("bad watch line", name, err);
          }
        }
      }
    } catch (err) {
      console.warn(err);
    }
    state.open = false;
    updateLive();
    setTimeout(run, state.backoff);
    state.backoff = Math.min(state.backoff * 2, 10000);
  };
  run();
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
