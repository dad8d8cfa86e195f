// The task list's table: a row per task of the page shown, column headers
// that sort (a click on the sorted one turns its direction), and each row
// brought up to date in place when the stream says its task moved. A row's
// checkbox selects its task to compare (compare.js); a selection outlives the
// page it was made on, so tasks of two pages can be compared.

import { el, put, stamp } from "./dom.js";
import { ENDED, sortParts } from "./task_query.js";

// [cell class, heading, the API's sort column (null: not sortable)]
const COLUMNS = [
  ["select", "", null],
  ["name", "Name", "name"],
  ["status", "Status", "status"],
  ["waiting", "Waiting on", null],
  ["agent", "Agent", null],
  ["model", "Model", null],
  ["cost", "Cost", "cost"],
  ["id", "Task id", null],
  ["created", "Created", "created"],
  ["updated", "Updated", "updated"],
  ["actions", "", null],
];
// What a person looks for first when they sort by a column: the newest, the dearest; names A to Z.
const FIRST_DESCENDING = new Set(["created", "updated", "cost"]);

function badge(status) {
  return el("span", { class: `badge ${status}`, text: status });
}

// US dollars as `ratchet tasks` writes them: to the millionth, trailing zeros dropped; "-" for nothing
// priced (an unpriced or scripted task), so a cheap call's cost is not rounded away to $0.0000.
function cost(value) {
  const dollars = Number(value ?? 0);
  if (!Number.isFinite(dollars)) return String(value);
  if (dollars === 0) return "-";
  const [whole, fraction] = dollars.toFixed(6).split(".");
  const kept = fraction.replace(/0+$/, "");
  return `$${Number(whole).toLocaleString("en-US")}${kept ? `.${kept}` : ""}`;
}

export class TaskTable {
  /**
   * @param {object} options
   * @param {(sort: string) => void} options.onSort a header was clicked: list in this order
   * @param {(task: {task_id: string, name: string}) => void} options.onCancel a row's Cancel was clicked
   * @param {(ids: string[]) => void} options.onSelect the selection changed: the ids selected, in the order chosen
   */
  constructor({ onSort, onCancel, onSelect }) {
    this.onCancel = onCancel;
    this.onSelect = onSelect;
    this.selected = new Set(); // task ids, in the order they were selected
    this.rows = new Map(); // task_id -> its row, for the tasks on screen only
    this.headers = new Map(); // sort column -> its <th>
    const headings = COLUMNS.map(([key, heading, column]) => {
      if (!column) return el("th", { class: key, text: heading });
      const button = el("button", { type: "button", class: "sort", "data-sort": column, onclick: () => onSort(this.next(column)) }, heading, el("span", { class: "arrow" }));
      const th = el("th", { class: key, "aria-sort": "none" }, button);
      this.headers.set(column, th);
      return th;
    });
    this.body = el("tbody");
    this.node = el("table", { id: "tasks" }, el("thead", {}, el("tr", {}, ...headings)), this.body);
    this.sort = "";
  }

  /** The sort a click on `column`'s header asks for: its other direction if it is the sort now. */
  next(column) {
    const [current, descending] = sortParts(this.sort);
    if (current === column) return descending ? column : `-${column}`;
    return FIRST_DESCENDING.has(column) ? `-${column}` : column;
  }

  /** Mark the header of the sort shown (aria-sort and an arrow). */
  setSort(sort) {
    this.sort = sort;
    const [column, descending] = sortParts(sort);
    for (const [name, th] of this.headers) {
      const sorted = name === column;
      th.setAttribute("aria-sort", sorted ? (descending ? "descending" : "ascending") : "none");
      th.querySelector(".arrow").textContent = sorted ? (descending ? " ▼" : " ▲") : "";
    }
  }

  /** Show a page: its rows replace the ones shown (a page is a few dozen rows). */
  show(tasks) {
    this.rows = new Map();
    for (const task of tasks) this.rows.set(task.task_id, this.row(task));
    put(this.body, ...this.rows.values());
  }

  has(taskId) {
    return this.rows.has(taskId);
  }

  row(task) {
    const tr = el("tr", { "data-task-id": task.task_id, "data-status": task.status });
    const cells = {
      select: this.checkbox(task),
      name: el("a", { href: `/tasks/${encodeURIComponent(task.task_id)}`, text: task.name || task.task_id }),
      status: badge(task.status),
      waiting: task.waiting_on || "",
      agent: task.agent || "",
      model: task.model || "",
      cost: cost(task.cost),
      id: task.task_id,
      created: stamp(task.created_at),
      updated: stamp(task.updated_at),
      actions: this.cancelButton(task),
    };
    for (const [key] of COLUMNS) tr.append(el("td", { class: key === "id" ? "id mono" : key }, cells[key]));
    return tr;
  }

  checkbox(task) {
    const box = el("input", {
      type: "checkbox",
      "data-action": "select",
      "aria-label": `Select ${task.name || task.task_id} to compare`,
      checked: this.selected.has(task.task_id),
      onchange: () => {
        if (box.checked) this.selected.add(task.task_id);
        else this.selected.delete(task.task_id);
        this.onSelect([...this.selected]);
      },
    });
    return box;
  }

  cancelButton(task) {
    const button = el("button", {
      type: "button",
      class: "danger small",
      "data-action": "cancel",
      text: "Cancel",
      onclick: () => this.onCancel({ task_id: task.task_id, name: task.name }),
    });
    button.hidden = ENDED.has(task.status);
    return button;
  }

  /** A change of the global stream for a task on screen: its row shows it, nothing else moves. */
  apply(change) {
    const tr = this.rows.get(change.task_id);
    if (!tr) return;
    tr.dataset.status = change.status;
    const cell = (key) => tr.querySelector(`td.${key}`);
    put(cell("status"), badge(change.status));
    cell("waiting").textContent = change.waiting_on || "";
    if (change.name) cell("name").firstElementChild.textContent = change.name;
    if (change.time) put(cell("updated"), stamp(change.time));
    cell("actions").querySelector("button[data-action=cancel]").hidden = ENDED.has(change.status);
  }
}
