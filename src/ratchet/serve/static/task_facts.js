// What a task is: its instruction, model(s), the version of its code, inputs, priority, deadline,
// labels, where it came from (a fork or retry of another task, its parent),
// its outcome, and its agent state (facts, open questions, artifacts, risk
// flags). Drawn from GET /api/tasks/{id} and its first events.

import { el, shown, stamp } from "./dom.js";

const link = (taskId) => el("a", { href: `/tasks/${encodeURIComponent(taskId)}`, class: "mono", text: taskId });

/** Where the task came from, told by its first events (a fork's task_forked, a retry's task_retry). */
function origin(task, firstEvents) {
  if (!task.forked_from) return null;
  const told = firstEvents.find((e) => e.kind === "task_forked" || e.kind === "task_retry");
  const data = told?.data || {};
  if (told?.kind === "task_retry") {
    const where = data.step ? ` from step ${data.step}` : data.seq !== undefined ? ` from call ${data.seq}` : "";
    return ["Retry of", el("span", { id: "task-origin", "data-kind": "retry" }, link(task.forked_from), where)];
  }
  const at = data.checkpoint ? ` at checkpoint ${data.checkpoint}` : "";
  const changed = data.changed_inputs?.length ? `, inputs ${data.changed_inputs.join(", ")} changed` : "";
  return ["Forked from", el("span", { id: "task-origin", "data-kind": "fork" }, link(task.forked_from), at, changed)];
}

function labels(task) {
  const given = task.labels;
  if (given === undefined || given === null) return null;
  const pairs = Array.isArray(given) ? given.map((item) => [String(item), null]) : Object.entries(given);
  if (!pairs.length) return null;
  return ["Labels", el("span", { id: "task-labels" }, ...pairs.map(([key, value]) => el("span", { class: "chip", "data-label": key, text: value === null ? key : `${key}=${shown(value)}` })))];
}

function models(task, used) {
  const spec = task.inputs_params?.agent?.model;
  const named = [task.model, spec].filter(Boolean);
  const answered = (used?.models || []).map((row) => `${row.model} (${row.calls} call${row.calls === 1 ? "" : "s"})`);
  const all = [...new Set(named)];
  if (!all.length && !answered.length) return null;
  return ["Model", el("span", { id: "task-models" }, all.join(", ") || "—", answered.length ? el("span", { class: "muted", text: ` · answered by ${answered.join(", ")}` }) : null)];
}

function inputs(task) {
  const { agent, ...rest } = task.inputs_params || {};
  const rows = [];
  if (Object.keys(rest).length) rows.push(["Inputs", el("pre", { id: "task-inputs", class: "json", text: shown(rest) })]);
  if (agent !== undefined) rows.push(["Agent spec", el("details", {}, el("summary", { text: agent?.name || "the agent" }), el("pre", { class: "json", text: shown(agent) }))]);
  return rows;
}

/** The facts of a task, as <dt>/<dd> pairs for the page's summary list. */
export function summary(task, firstEvents = [], used = null) {
  const rows = [
    ["Task id", el("span", { class: "mono", text: task.task_id })],
    ["Agent", task.agent],
    ["Instruction", task.instruction ? el("pre", { id: "task-instruction", class: "instruction", text: task.instruction }) : el("span", { class: "muted", text: "— (a workflow: its code and inputs say what it does)" })],
    task.goal && task.goal !== task.instruction ? ["Goal", task.goal] : null,
    models(task, used),
    task.code_version ? ["Code version", el("span", { id: "task-code-version", class: "mono", text: task.code_version })] : null,
    ...inputs(task),
    ["Priority", el("span", { id: "task-priority", text: `${task.priority}${task.priority === 5 ? " (the default; 0 goes first, 9 last)" : ""}` })],
    task.deadline ? ["Deadline", stamp(task.deadline)] : null,
    labels(task),
    origin(task, firstEvents),
    task.parent_id ? ["Parent", link(task.parent_id)] : null,
    ["Created", stamp(task.created_at)],
    ["Started", stamp(task.started_at)],
    ["Updated", stamp(task.updated_at)],
    task.result !== null && task.result !== undefined ? ["Result", el("pre", { text: shown(task.result) })] : null,
    task.error ? ["Error", el("span", { class: "error", text: task.error })] : null,
  ].filter(Boolean);
  return rows.flatMap(([name, value]) => [el("dt", { text: name }), el("dd", {}, value)]);
}

function list(id, items, draw, empty) {
  return items.length ? el("ul", { id }, ...items.map((item) => el("li", {}, ...[draw(item)].flat()))) : el("p", { id, class: "muted", text: empty });
}

/** The agent's working memory: facts, open questions, artifacts and risk flags. */
export function agentState(state) {
  const facts = state.known_facts || [];
  const empty = ["known_facts", "open_questions", "artifacts", "risk_flags"].every((key) => !(state[key] || []).length);
  if (empty) return [el("p", { class: "muted", text: "Empty: no fact, open question, artifact or risk flag recorded." })];
  return [
    el("h3", { text: `Facts (${facts.length})` }),
    facts.length
      ? el(
          "table",
          { id: "state-facts", class: "compact" },
          el("thead", {}, el("tr", {}, el("th", { text: "Key" }), el("th", { text: "Value" }), el("th", { text: "Source" }))),
          el("tbody", {}, ...facts.map((fact) => el("tr", { "data-key": fact.key }, el("td", { class: "mono", text: fact.key }), el("td", {}, el("pre", { text: shown(fact.value) })), el("td", { text: fact.source })))),
        )
      : el("p", { id: "state-facts", class: "muted", text: "No fact recorded." }),
    el("h3", { text: "Open questions" }),
    list("state-questions", state.open_questions || [], (q) => q, "None."),
    el("h3", { text: "Artifacts" }),
    list("state-artifacts", state.artifacts || [], (a) => [el("span", { class: "mono", text: a.artifact_id }), ` ${a.type}, ${Number(a.bytes).toLocaleString()} bytes: ${a.summary}`], "None."),
    el("h3", { text: "Risk flags" }),
    (state.risk_flags || []).length
      ? el("p", { id: "state-risks" }, ...state.risk_flags.map((flag) => el("span", { class: "chip risk", text: flag })))
      : el("p", { id: "state-risks", class: "muted", text: "None." }),
  ];
}
