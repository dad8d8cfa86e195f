// The task list: every task, newest first, with status filters and their
// live counts, kept current by the global stream (GET /api/stream).

import { api, follow } from "./api.js";
import { el, put, when } from "./dom.js";
import { parseJson } from "./json.js";

export const STATUSES = ["queued", "running", "waiting", "completed", "failed", "cancelled"];
const PAGE = 500;

function row(task) {
  const link = el("a", { href: `/tasks/${encodeURIComponent(task.task_id)}`, text: task.name || task.task_id });
  return el(
    "tr",
    { "data-task-id": task.task_id, "data-status": task.status },
    el("td", { class: "name" }, link),
    el("td", { class: "status" }, el("span", { class: `badge ${task.status}`, text: task.status })),
    el("td", { class: "waiting", text: task.waiting_on || "" }),
    el("td", { class: "agent", text: task.agent || "" }),
    el("td", { class: "id mono", text: task.task_id }),
    el("td", { class: "created", text: when(task.created_at) }),
  );
}

async function allTasks() {
  const tasks = [];
  let offset = 0;
  while (offset !== null) {
    const answer = await api(`/api/tasks?limit=${PAGE}&offset=${offset}`);
    tasks.push(...answer.tasks);
    offset = answer.next_offset;
  }
  return tasks;
}

export async function showTasks(root) {
  const tasks = new Map(); // task_id -> what the list shows of it
  let filter = new URLSearchParams(location.search).get("status") || "all";
  const counts = {};
  const filters = el("div", { class: "filters", role: "group", "aria-label": "Filter by status" });
  for (const status of ["all", ...STATUSES]) {
    counts[status] = el("span", { class: "count", text: "0" });
    filters.append(
      el(
        "button",
        {
          type: "button",
          class: `filter ${status}`,
          "data-status-filter": status,
          onclick: () => {
            filter = status;
            const query = status === "all" ? "" : `?status=${status}`;
            history.replaceState(null, "", `/${query}`);
            render();
          },
        },
        `${status} `,
        counts[status],
      ),
    );
  }
  const body = el("tbody");
  const table = el(
    "table",
    { id: "tasks" },
    el(
      "thead",
      {},
      el("tr", {}, ...["Name", "Status", "Waiting on", "Agent", "Task id", "Created"].map((h) => el("th", { text: h }))),
    ),
    body,
  );
  const empty = el("p", { class: "muted", text: "No task yet. Submit one with `ratchet submit` or POST /api/tasks." });
  put(root, el("h1", { text: "Tasks" }), filters, table, empty);

  function render() {
    for (const button of filters.querySelectorAll("button")) {
      button.classList.toggle("current", button.dataset.statusFilter === filter);
    }
    const listed = [...tasks.values()].sort((a, b) => (a.created_at < b.created_at ? 1 : -1));
    for (const status of ["all", ...STATUSES]) {
      counts[status].textContent = String(
        status === "all" ? listed.length : listed.filter((task) => task.status === status).length,
      );
    }
    const shown = listed.filter((task) => filter === "all" || task.status === filter);
    put(body, ...shown.map(row));
    empty.hidden = shown.length > 0;
    empty.textContent = tasks.size ? `No ${filter} task.` : "No task yet. Submit one with `ratchet submit` or POST /api/tasks.";
  }

  function apply(change) {
    const known = tasks.get(change.task_id) || { created_at: change.time };
    tasks.set(change.task_id, {
      ...known,
      task_id: change.task_id,
      name: change.name,
      agent: change.agent,
      status: change.status,
      waiting_on: change.waiting_on,
      parent_id: change.parent_id,
    });
  }

  // The stream first, then the list: no change falls between the two (docs/serve.md, "The global stream").
  const live = document.getElementById("live");
  let loaded = false;
  const pending = [];
  let started;
  const ready = new Promise((resolve) => (started = resolve));
  const stream = follow(
    "/api/stream",
    (message) => {
      if (message.type === "start") return started();
      if (message.type !== "message") return;
      const change = parseJson(message.data);
      if (!loaded) pending.push(change);
      else {
        apply(change);
        render();
      }
    },
    { onState: (state) => (live.textContent = state) },
  );
  try {
    await ready;
    for (const task of await allTasks()) tasks.set(task.task_id, task);
  } catch (error) {
    stream.stop();
    throw error;
  }
  for (const change of pending) apply(change);
  loaded = true;
  render();
  return () => stream.stop();
}
