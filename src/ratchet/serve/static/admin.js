// The sessions page and the workers page: tables of what GET /api/sessions
// and GET /api/workers answer, read again every few seconds. A worker's times
// are relative (its start, its last heartbeat), the exact time on hover.

import { api } from "./api.js";
import { duration, el, exactly, put, stamp } from "./dom.js";
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

/** How long ago a worker was last heard from, exactly to the tenth of a second; the time itself on hover. */
function heartbeat(worker) {
  if (!worker.heartbeat_at) return el("span", { class: "muted", text: "—" });
  const age = `${duration(Math.max(worker.heartbeat_age_seconds, 0))} ago`;
  return el("time", { datetime: worker.heartbeat_at, title: exactly(worker.heartbeat_at), text: age });
}

/** Until its soonest lease expires unless renewed (below zero it stopped renewing); a dash when it holds none. */
function leaseExpiry(worker) {
  const seconds = worker.expires_in_seconds;
  if (seconds === null || seconds === undefined) return "—";
  return seconds >= 0 ? `in ${duration(seconds)}` : `${duration(-seconds)} ago`;
}

/** Slots in use of its concurrency; a process that keeps no record of itself (`ratchet run`) has no known count. */
function slots(worker) {
  const of = worker.concurrency === null || worker.concurrency === undefined ? "?" : worker.concurrency;
  return `${worker.slots_in_use} of ${of}`;
}

export function showWorkers(root) {
  return refreshing(root, async (target) => {
    const workers = await api("/api/workers");
    const rows = workers.map((w) =>
      el(
        "tr",
        {
          "data-worker": w.worker,
          "data-live": w.live ? "true" : "false",
          "data-concurrency": w.concurrency ?? "",
          "data-slots-in-use": w.slots_in_use,
        },
        el("td", { class: "worker mono", text: w.worker }),
        el("td", { class: "host", text: w.host }),
        el("td", { class: "pid mono", text: w.pid ? String(w.pid) : "—" }),
        el("td", { class: "live" }, el("span", { class: `badge ${w.live ? "running" : "failed"}`, text: w.live ? "live" : "gone" })),
        el("td", { class: "slots", text: slots(w) }),
        el(
          "td",
          { class: "leases" },
          ...w.leases.map((lease) =>
            el("a", { href: `/tasks/${encodeURIComponent(lease.task_id)}`, class: "lease mono", text: lease.task_id }),
          ),
        ),
        el("td", { class: "started" }, stamp(w.started_at)),
        el("td", { class: "heartbeat-age" }, heartbeat(w)),
        el("td", { class: "expires", text: leaseExpiry(w) }),
      ),
    );
    put(
      target,
      el("h1", { text: "Workers" }),
      el("p", {
        class: "muted",
        text:
          "Every live worker, idle or busy, and any process holding a task's lease. A worker records itself as it " +
          "starts and at each heartbeat (every third of its lease's time to live), and removes its record when it " +
          "stops; one killed counts as gone three of its lease TTLs after its last heartbeat.",
      }),
      table("workers", ["Worker", "Host", "PID", "State", "Slots", "Tasks held", "Started", "Heartbeat", "Lease expires"], rows),
      workers.length ? null : el("p", { class: "muted" }, "No live worker. ", el("code", { text: "ratchet worker" }), " starts one."),
    );
  });
}
