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
