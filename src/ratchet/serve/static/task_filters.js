// The task list's filters: a search box (read a moment after the last key),
// status buttons with their counts, and the other filters of GET /api/tasks
// as chips: one is added by its kind and value, removed by its ×.

import { el, put } from "./dom.js";
import { FILTER_KEYS, isRepeated, STATUSES, WAIT_REASONS } from "./task_query.js";

const SEARCH_WAIT_MS = 300;

// Each chip's filter: [the API's key, what a person reads, a hint for its value].
const KINDS = [
  ["waiting_on", "waiting on", WAIT_REASONS.join(", ")],
  ["agent", "agent", "the agent's name, exactly"],
  ["model", "model", "openai:gpt-4o-mini"],
  ["label", "label", "team=billing"],
  ["parent", "parent", "the parent task's id"],
  ["name", "name", "the task's name, exactly"],
  ["id_prefix", "id starts with", "the start of its id"],
  ["created_after", "created after", "2h, 7d or 2026-11-01T09:00:00Z"],
  ["created_before", "created before", "30m or 2026-11-02"],
  ["min_cost", "cost at least $", "0.50"],
  ["max_cost", "cost at most $", "2"],
];
const LABELS = Object.fromEntries(KINDS.map(([key, label]) => [key, label]));

export class FilterBar {
  /** @param {(filter: object) => void} onChange the filter a person asked for, whole */
  constructor(onChange) {
    this.onChange = onChange;
    this.filter = {};
    this.timer = null;
    this.search = el("input", {
      id: "task-search",
      type: "search",
      placeholder: "Search names, instructions and results",
      "aria-label": "Search tasks",
      autocomplete: "off",
      oninput: () => this.searchSoon(SEARCH_WAIT_MS),
      onkeydown: (event) => event.key === "Enter" && this.searchSoon(0),
    });
    this.counts = {};
    this.statuses = el("div", { class: "filters", role: "group", "aria-label": "Filter by status" });
    for (const status of ["all", ...STATUSES]) {
      this.counts[status] = el("span", { class: "count", text: "…" });
      this.statuses.append(
        el("button", { type: "button", class: `filter ${status}`, "data-status-filter": status, onclick: () => this.pickStatus(status) }, `${status} `, this.counts[status]),
      );
    }
    this.kind = el("select", { id: "filter-kind", "aria-label": "Filter by" }, ...KINDS.map(([key, label]) => el("option", { value: key, text: label })));
    this.value = el("input", { id: "filter-value", type: "text", "aria-label": "Filter value", list: "wait-reasons", autocomplete: "off" });
    this.kind.addEventListener("change", () => this.hint());
    const adder = el(
      "form",
      { class: "add-filter", onsubmit: (event) => this.add(event) },
      this.kind,
      this.value,
      el("button", { type: "submit", "data-action": "add-filter", text: "Add filter" }),
      el("datalist", { id: "wait-reasons" }, ...WAIT_REASONS.map((reason) => el("option", { value: reason }))),
    );
    this.chips = el("div", { class: "chips", id: "filter-chips" });
    this.node = el("div", { class: "find" }, el("div", { class: "search-row" }, this.search, adder), this.statuses, this.chips);
    this.hint();
  }

  hint() {
    const [key, , example] = KINDS.find(([name]) => name === this.kind.value);
    this.value.placeholder = example;
    // The reasons a task waits on are offered as a list; any other kind is free text.
    if (key === "waiting_on") this.value.setAttribute("list", "wait-reasons");
    else this.value.removeAttribute("list");
  }

  /** Show the filter of the view (read from the address, or just asked for). */
  show(filter) {
    this.filter = filter;
    if (document.activeElement !== this.search) this.search.value = filter.search || ""; // never under a person's keys
    const statuses = filter.status || [];
    for (const button of this.statuses.querySelectorAll("button")) {
      const status = button.dataset.statusFilter;
      button.classList.toggle("current", status === "all" ? !statuses.length : statuses.includes(status));
    }
    const chips = [];
    for (const key of FILTER_KEYS) {
      if (!LABELS[key] || filter[key] === undefined) continue;
      for (const value of isRepeated(key) ? filter[key] : [filter[key]]) chips.push(this.chip(key, value));
    }
    put(this.chips, ...chips);
  }

  chip(key, value) {
    return el(
      "span",
      { class: "chip filter-chip", "data-filter": key, "data-value": value },
      el("span", { text: key.endsWith("_cost") ? LABELS[key] : `${LABELS[key]}: ` }), // "cost at least $0.50"
      el("b", { text: value }),
      el("button", { type: "button", class: "remove", "aria-label": `Remove the filter ${LABELS[key]} ${value}`, text: "×", onclick: () => this.remove(key, value) }),
    );
  }

  /** The counts of the status buttons: {all: N, queued: N, ...}; a count not known shows "…". */
  setCounts(counts) {
    for (const [status, node] of Object.entries(this.counts)) {
      node.textContent = counts[status] === undefined ? "…" : Number(counts[status]).toLocaleString();
    }
  }

  change(filter) {
    const next = {};
    for (const key of FILTER_KEYS) if (filter[key] !== undefined) next[key] = filter[key];
    this.onChange(next);
  }

  searchSoon(wait) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      const text = this.search.value.trim();
      if (text === (this.filter.search || "")) return;
      this.change({ ...this.filter, search: text || undefined });
    }, wait);
  }

  pickStatus(status) {
    this.change({ ...this.filter, status: status === "all" ? undefined : [status] });
  }

  add(event) {
    event.preventDefault();
    const key = this.kind.value;
    const value = this.value.value.trim();
    if (!value) return;
    this.value.value = "";
    if (!isRepeated(key)) this.change({ ...this.filter, [key]: value });
    else this.change({ ...this.filter, [key]: [...new Set([...(this.filter[key] || []), value])] });
  }

  remove(key, value) {
    const left = isRepeated(key) ? this.filter[key].filter((one) => one !== value) : [];
    this.change({ ...this.filter, [key]: left.length ? left : undefined });
  }

  stop() {
    clearTimeout(this.timer);
  }
}
