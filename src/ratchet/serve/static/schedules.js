// The schedules page: what GET /api/schedules answers, soonest due first, read
// again every few seconds, with a schedule's Pause, Resume and Trigger buttons.
// A row whose schedule did not change is kept as it is between reads, so a
// button being clicked or a time being hovered is not replaced under the pointer.

import { api, ApiError } from "./api.js";
import { el, flash, put, stamp } from "./dom.js";
import { writeJson } from "./json.js";

const REFRESH_MS = 5000;
const HEADINGS = ["Schedule", "Every", "Time zone", "Overlap", "Next due", "State", "Last task", "Makes", ""];
const EXAMPLE = 'ratchet submit "INSTRUCTION" --model M --every "0 9 * * *" --tz Europe/Paris';

// What each row shows, to tell a changed schedule from one that is not.
const shownAs = new WeakMap();

function taskLink(taskId) {
  if (!taskId) return el("span", { class: "muted", text: "—" });
  return el("a", { href: `/tasks/${encodeURIComponent(taskId)}`, class: "mono", text: taskId });
}

function scheduleRow(schedule, onAction) {
  const paused = schedule.paused;
  const button = (action, label) =>
    el("button", { type: "button", "data-action": action, text: label, onclick: (event) => onAction(action, schedule, event.currentTarget) });
  const row = el(
    "tr",
    { "data-schedule-id": schedule.schedule_id, "data-paused": paused ? "true" : "false" },
    el("td", { class: "id mono", text: schedule.schedule_id }),
    el("td", { class: "every mono", text: schedule.every || "once" }),
    el("td", { class: "tz", text: schedule.tz }),
    el("td", { class: "overlap", text: schedule.overlap }),
    el("td", { class: "next-due" }, stamp(schedule.next_due)), // null while paused: a dash
    el("td", { class: "state" }, el("span", { class: `badge ${paused ? "waiting" : "running"}`, text: paused ? "paused" : "active" })),
    el("td", { class: "last-task" }, taskLink(schedule.last_task)),
    el("td", { class: "makes", text: schedule.instruction || schedule.workflow || "" }),
    el(
      "td",
      { class: "buttons" },
      paused ? button("resume", "Resume") : button("pause", "Pause"),
      button("trigger", "Trigger"),
    ),
  );
  shownAs.set(row, writeJson(schedule));
  return row;
}

export function showSchedules(root) {
  const body = el("tbody");
  const note = el("p", { id: "schedule-note", class: "muted", role: "status" });
  const empty = el(
    "div",
    { id: "no-schedules", hidden: true },
    el("p", { text: "No schedule yet. A schedule makes a task at each time its cron expression matches; make one with" }),
    el("pre", { class: "mono", text: EXAMPLE }),
    el("p", { class: "muted" }, "(or ", el("code", { text: "Runtime.schedule" }), " in Python); ", el("code", { text: "ratchet schedules" }), " lists them in a terminal."),
  );
  const listed = el(
    "table",
    { id: "schedules" },
    el("thead", {}, el("tr", {}, ...HEADINGS.map((h) => el("th", { text: h })))),
    body,
  );
  put(
    root,
    el("h1", { text: "Schedules" }),
    el("p", {
      class: "muted",
      text:
        "Pause keeps a schedule from firing until it is resumed; Resume goes on from now (the due times missed " +
        "while paused are not made up); Trigger makes its task now, once, and leaves its next due time.",
    }),
    note,
    listed,
    empty,
  );

  // The row of one schedule, as an action's answer says it is now.
  function replace(schedule) {
    const old = [...body.rows].find((row) => row.dataset.scheduleId === schedule.schedule_id);
    if (old) old.replaceWith(scheduleRow(schedule, onAction));
  }

  async function onAction(action, schedule, button) {
    flash("");
    const row = button.closest("tr");
    for (const each of row.querySelectorAll("button")) each.disabled = true;
    try {
      const answer = await api(`/api/schedules/${encodeURIComponent(schedule.schedule_id)}/${action}`, { body: {} });
      if (action === "trigger") {
        replace({ ...schedule, last_task: answer.task_id });
        put(note, `${schedule.schedule_id}: task `, taskLink(answer.task_id), " queued now; its next due time stays.");
      } else {
        replace(answer);
        put(note, `${schedule.schedule_id} ${action === "pause" ? "paused" : "resumed"}.`);
      }
    } catch (error) {
      for (const each of row.querySelectorAll("button")) each.disabled = false;
      if (!(error instanceof ApiError && error.status === 401)) flash(`${action} ${schedule.schedule_id}: ${error.message}`);
    }
  }

  async function load() {
    const schedules = await api("/api/schedules");
    const kept = new Map([...body.rows].map((row) => [row.dataset.scheduleId, row]));
    const rows = schedules.map((schedule) => {
      const old = kept.get(schedule.schedule_id);
      return old && shownAs.get(old) === writeJson(schedule) ? old : scheduleRow(schedule, onAction);
    });
    const current = [...body.rows];
    if (rows.length !== current.length || rows.some((row, i) => row !== current[i])) body.replaceChildren(...rows);
    listed.hidden = !schedules.length;
    empty.hidden = schedules.length > 0;
  }

  return (async () => {
    await load();
    document.getElementById("live").textContent = `read every ${REFRESH_MS / 1000} s`;
    const timer = setInterval(() => load().catch(() => {}), REFRESH_MS);
    return () => clearInterval(timer);
  })();
}
