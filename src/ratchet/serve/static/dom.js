// Building the page's elements. Text always goes in as textContent: task goals,
// tool arguments and errors are user and model data, never markup.

import { writeJson } from "./json.js";

const SVG_NS = "http://www.w3.org/2000/svg";

function fill(node, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** An HTML element: el("td", {class: "status", text: "running"}). */
export function el(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

/** An SVG element, for the call timeline. */
export function svg(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** Replace what `node` holds with `children`. */
export function put(node, ...children) {
  node.replaceChildren();
  return fill(node, {}, children);
}

/** A time as people read it: local date and time, to the second. */
export function when(iso) {
  if (!iso) return "";
  const moment = new Date(iso);
  return Number.isNaN(moment.getTime()) ? String(iso) : moment.toLocaleString();
}

const UNITS = [
  ["year", 365 * 24 * 3600],
  ["month", 30 * 24 * 3600],
  ["week", 7 * 24 * 3600],
  ["day", 24 * 3600],
  ["hour", 3600],
  ["minute", 60],
  ["second", 1],
];
const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

/** A time relative to `now`, as people say it: "3 minutes ago", "in 2 hours", "now". */
export function ago(iso, now = Date.now()) {
  const moment = new Date(iso).getTime();
  if (Number.isNaN(moment)) return String(iso);
  const seconds = (moment - now) / 1000;
  if (Math.abs(seconds) < 5) return RELATIVE.format(0, "second");
  const [unit, size] = UNITS.find(([, size]) => Math.abs(seconds) >= size) || UNITS[UNITS.length - 1];
  return RELATIVE.format(Math.round(seconds / size), unit);
}

/** The exact time of an ISO instant: local, to the second, then UTC as the API gives it. */
export function exactly(iso) {
  const moment = new Date(iso);
  return Number.isNaN(moment.getTime()) ? String(iso) : `${moment.toLocaleString()} (${moment.toISOString()})`;
}

/** A <time> that reads "5 minutes ago" and shows the exact time on hover; `refreshTimes` keeps it current. */
export function stamp(iso) {
  if (!iso) return el("span", { class: "muted", text: "—" });
  return el("time", { datetime: iso, title: exactly(iso), "data-relative": "", text: ago(iso) });
}

/** Rewrite every relative time on the page as of now (called every few seconds). */
export function refreshTimes(root = document) {
  const now = Date.now();
  for (const node of root.querySelectorAll("time[data-relative]")) node.textContent = ago(node.getAttribute("datetime"), now);
}

/** Seconds as "0.25 ms", "850 ms", "12.3 s", "4 min 5 s", "2 h 3 min". */
export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "";
  if (seconds < 0.01) return `${(seconds * 1000).toFixed(2)} ms`;
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min`;
}

/** A JSON value (as api() reads it) as readable text, every number exact (strings as they are). */
export function shown(value) {
  if (value === null || value === undefined) return "";
  return typeof value === "string" ? value : writeJson(value, 2);
}

/** Show the one-line error of a failed action; an empty message hides it. */
export function flash(message) {
  const box = document.getElementById("flash");
  box.textContent = message || "";
  box.hidden = !message;
}

/** Open another page of the dashboard without reloading (main.js routes on popstate). */
export function go(path) {
  history.pushState(null, "", path);
  dispatchEvent(new PopStateEvent("popstate"));
}
