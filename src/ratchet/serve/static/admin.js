// The sessions page and the workers page: tables of what GET /api/sessions
// and GET /api/workers answer, read again every few seconds.

import { api } from "./api.js";
import { duration, el, put, stamp } from "./dom.js";
import { writeJson } from "./json.js";

const REFRESH_MS = 5000;

function table(id, headings, rows) {
  return el(
    "table",
    { id },
    el("thead", {}, el("tr", {}, ...headings.map((h) => el("th", { text: h })))),
    el("tbody", {}, ...rows),
  );
}

/** Fill `root` from `load` now and every few seconds; the cleanup stops it. */
async function refreshing(root, load) {
  await load(root);
  document.getElementById("live").textContent = `read every ${REFRESH_MS / 1000} s`;
  const timer = setInterval(() => load(root).catch(() => {}), REFRESH_MS);
  return () => clearInterval(timer);
}

// A session keeps what its code chose: a count, a structure, or nothing (null shows as a dash).
function shown(value) {
  if (value === null || value === undefined) return "—";
  return typeof value === "object" ? writeJson(value) : String(value);
}

export function showSessions(root) {
  return refreshing(root, async (target) => {
    const sessions = await api("/api/sessions");
    const rows = sessions.map((s) =>
      el(
        "tr",
        { "data-session-id": s.session_id },
        el("td", { class: "id mono", text: s.session_id }),
        el("td", { class: "tasks", text: shown(s.tasks) }),
        el("td", { class: "turns", text: shown(s.turns) }),
        el("td", { class: "version", text: s.version }),
        el("td", { class: "created" }, stamp(s.created_at)),
        el("td", { class: "updated" }, stamp(s.updated_at)),
      ),
    );
    put(
      target,
      el("h1", { text: "Sessions" }),
      table("sessions", ["Session", "Tasks", "Turns", "Version", "Created", "Updated"], rows),
      sessions.length ? null : el("p", { class: "muted", text: "No session yet." }),
    );
  });
}

/** How long ago a worker's heartbeat last renewed its leases. */
function heartbeatAge(worker) {
  if (worker.heartbeat_age_seconds === null || worker.heartbeat_age_seconds === undefined) return "";
  return `${duration(Math.max(worker.heartbeat_age_seconds, 0))} ago`;
}

export function showWorkers(root) {
  return refreshing(root, async (target) => {
    const workers = await api("/api/workers");
    const rows = workers.map((w) =>
      el(
        "tr",
        { "data-worker": w.worker, "data-live": w.live ? "true" : "false" },
        el("td", { class: "worker mono", text: w.worker }),
        el("td", { class: "host", text: `${w.host}${w.pid ? ` (pid ${w.pid})` : ""}` }),
        el("td", { class: "live" }, el("span", { class: `badge ${w.live ? "running" : "failed"}`, text: w.live ? "live" : "stopped" })),
        el("td", { class: "heartbeat-age", text: heartbeatAge(w) }),
        el("td", { class: "expires", text: w.expires_in_seconds >= 0 ? `in ${duration(w.expires_in_seconds)}` : `${duration(-w.expires_in_seconds)} ago` }),
        el(
          "td",
          { class: "leases" },
          ...w.leases.map((lease) =>
            el("a", { href: `/tasks/${encodeURIComponent(lease.task_id)}`, class: "lease mono", text: lease.task_id }),
          ),
        ),
      ),
    );
    put(
      target,
      el("h1", { text: "Workers" }),
      el("p", { class: "muted", text: "Workers holding a lease on an unfinished task. A live worker's heartbeat renews its leases." }),
      table("workers", ["Worker", "Host", "State", "Heartbeat", "Lease expires", "Tasks held"], rows),
      workers.length ? null : el("p", { class: "muted", text: "No worker holds a task now." }),
    );
  });
}
