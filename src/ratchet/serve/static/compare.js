// The compare page (docs/serve.md, "Comparing tasks"): the tasks of the
// address (/compare?task=A&task=B...) side by side, one column a task, as
// GET /api/compare gives them: what each ended with and spent, its steps, the
// tool calls each made (a row a step and position; the rows that differ are
// marked), and where their journals part. It reads once: it is not live.

import { api } from "./api.js";
import { duration, el, put, shown } from "./dom.js";

export const MAX_COMPARED = 8; // as the API's: views/compare.py

/** The page's address for these task ids, in this order. */
export function compareAddress(ids) {
  const query = new URLSearchParams();
  for (const id of ids) query.append("task", id);
  return `/compare?${query}`;
}

function badge(status) {
  return el("span", { class: `badge ${status}`, text: status });
}

function cost(task) {
  const dollars = `$${Number(task.cost).toFixed(4)}`;
  return task.unpriced_calls ? `${dollars} (${task.unpriced_calls} unpriced)` : dollars;
}

function taskLink(task) {
  return el("a", { href: `/tasks/${encodeURIComponent(task.task_id)}`, class: "mono", text: task.task_id });
}

function grid(id, headings, rows) {
  return el(
    "table",
    { id, class: "compare" },
    el("thead", {}, el("tr", {}, ...headings.map((heading) => el("th", {}, heading)))),
    el("tbody", {}, ...rows),
  );
}

function outcomes(tasks) {
  const byId = new Map(tasks.map((task, n) => [task.task_id, n]));
  const facts = [
    ["name", (task) => task.name],
    ["status", (task) => badge(task.waiting_on ? `${task.status}(${task.waiting_on})` : task.status)],
    ["forked from", (task) => (task.forked_from === null ? "" : byId.has(task.forked_from) ? `column ${byId.get(task.forked_from) + 1}` : task.forked_from)],
    ["result", (task) => (task.error !== null ? el("span", { class: "error", text: task.error }) : el("pre", { text: shown(task.result) }))],
    ["tokens in / out", (task) => `${Number(task.tokens_in).toLocaleString()} / ${Number(task.tokens_out).toLocaleString()}`],
    ["cost", cost],
    ["wall time", (task) => (task.wall_seconds === null ? "not ended" : duration(Number(task.wall_seconds)))],
    ["models", (task) => task.models.join(", ")],
    ["calls", (task) => String(task.calls)],
  ];
  return grid(
    "compare-tasks",
    ["", ...tasks.map(taskLink)],
    facts.map(([name, fact]) => el("tr", { "data-fact": name }, el("th", { text: name }), ...tasks.map((task) => el("td", {}, fact(task))))),
  );
}

function steps(rows) {
  return grid(
    "compare-steps",
    ["Step", "", ...rows[0].tasks.map((_, n) => `column ${n + 1}`)],
    rows.map((row) =>
      el(
        "tr",
        { "data-mark": row.same ? "same" : "differs", class: row.same ? "" : "differs" },
        el("th", { text: String(row.step) }),
        el("td", { class: "mark", text: row.same ? "same" : "differs" }),
        ...row.tasks.map((step) => el("td", {}, step === null ? "—" : `${step.name}: `, step === null ? null : badge(step.status))),
      ),
    ),
  );
}

function call(made) {
  if (made === null) return el("td", { class: "muted", text: "—" });
  return el(
    "td",
    { "data-seq": made.seq },
    el("div", { class: "mono", text: made.name }),
    el("pre", { text: shown(made.arguments) }),
    made.error !== null ? el("div", { class: "error", text: `→ ${made.error}` }) : el("div", { class: "mono", text: `→ ${made.result_preview ?? ""}` }),
  );
}

function toolCalls(rows, tasks) {
  if (!rows.length) return el("p", { class: "muted", text: "No task made a tool call." });
  const column = new Map(tasks.map((task, n) => [task.task_id, `column ${n + 1}`]));
  return grid(
    "compare-calls",
    ["Step.call", "", ...tasks.map((_, n) => `column ${n + 1}`)],
    rows.map((row) => {
      const mark = row.mark === "only in" ? `only in ${row.only_in.map((id) => column.get(id)).join(", ")}` : row.mark;
      return el(
        "tr",
        { "data-mark": row.mark, class: row.mark === "same" ? "" : "differs" },
        el("th", { text: `${row.step ?? "—"}.${row.position}` }),
        el("td", { class: "mark", text: mark }),
        ...row.calls.map(call),
      );
    }),
  );
}

function parting(found) {
  const text =
    found.parted_at_seq === null
      ? `Their journals are alike: ${found.shared_prefix} calls.`
      : `Their journals share their first ${found.shared_prefix} ${found.shared_prefix === 1 ? "call" : "calls"} and part at seq ${found.parted_at_seq}.`;
  return el("p", { id: "compare-parting", text });
}

export async function showCompare(root) {
  const ids = new URLSearchParams(location.search).getAll("task");
  const found = await api(`/api${compareAddress(ids)}`); // a refused address: main.js shows its one line
  put(
    root,
    el("h1", { text: `Comparing ${found.tasks.length} tasks` }),
    outcomes(found.tasks),
    parting(found),
    el("h2", { text: "Tool calls" }),
    toolCalls(found.tool_calls, found.tasks),
    found.steps.length ? el("h2", { text: "Steps" }) : null,
    found.steps.length ? steps(found.steps) : null,
  );
}
