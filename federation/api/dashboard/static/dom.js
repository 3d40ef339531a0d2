// DOM and formatting functions shared by the views: elements are built with `h`, never
// from HTML strings, so nothing read from the API can run as markup.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") el.className = value;
    else if (name === "style") el.style.cssText = value;
    else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export const $ = (id) => document.getElementById(id);

export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

const SUFFIX = {
  m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15,
  Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, Pi: 1024 ** 5,
};

export function qty(value) {
  if (value === null || value === undefined) return 0;
  if (typeof value === "number") return value;
  const m = /^([0-9.]+)([a-zA-Z]*)$/.exec(String(value).trim());
  if (!m) return 0;
  return parseFloat(m[1]) * (SUFFIX[m[2]] ?? 1);
}

// An amount to one decimal at most, rounded down: what is shown free must be there (22.5
// free cores read "23 free / 24" when rounded to whole numbers, one core more than fits).
// The epsilon keeps 63.7 (0.1 * 3 taken from 64, 63.699999... in floating point) 63.7.
export function fmt(n) {
  const down = Math.floor(n * 10 + 1e-9) / 10;
  return Number.isInteger(down) ? String(down) : down.toFixed(1);
}

// Four places whatever the size, as the CLI and every pending reason show costs: at two,
// a queue spending 2.3144 of a 2.31 budget read "USD 2.31/h of USD 2.31/h, over budget".
export function money(value, currency = "") {
  if (value === null || value === undefined) return "unpriced";
  return `${currency ? currency + " " : ""}${Number(value).toFixed(4)}/h`;
}

// What `replicas` replicas cost when `unpriced` of them run where no price is known, as the
// CLI words it: "unpriced" when none has a price, else the priced part and how many it
// leaves out. A queue of unpriced work read "USD 0.0000/h", which reads as free.
export function moneyOf(value, replicas, unpriced, currency = "") {
  if (unpriced && unpriced >= replicas) return "unpriced";
  const shown = money(value, currency);
  return unpriced ? `${shown} (+${unpriced} unpriced)` : shown;
}

export function meta(obj) {
  return obj.metadata || {};
}
