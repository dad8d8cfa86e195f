// Time travel on the task page: its checkpoints, "Fork from here" (a new task
// from a checkpoint, with changed inputs if given), "Retry from step N" for a
// failed or cancelled task, and what changed in the agent state between two
// checkpoints (or one and now). Each action is the API's own fork or retry;
// the page then opens the new task.
//
// Changed inputs are sent as the text typed (`inputs_json`), for the server
// to read: no number goes through a JavaScript double on its way.

import { api, ApiError } from "./api.js";
import { el, flash, go, put, shown, stamp } from "./dom.js";

const DONE = new Set(["completed", "skipped"]);

async function start(button, path, body) {
  flash("");
  button.disabled = true;
  try {
    const made = await api(path, { body });
    go(`/tasks/${encodeURIComponent(made.task_id)}`);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) flash(error.message);
    button.disabled = false;
  }
}

function forkForm(base, number) {
  const inputs = el("textarea", { id: "fork-inputs", spellcheck: "false", placeholder: '{"key": "a new value"}' });
  inputs.value = "{}";
  return el(
    "div",
    { class: "fork-form", "data-checkpoint": number },
    el("h3", { text: `Fork from checkpoint ${number}` }),
    el("p", { class: "muted", text: "A new task replays this task's calls up to the checkpoint, then runs live. Change inputs here (a JSON object; {} keeps them all)." }),
    inputs,
    el("button", {
      type: "button",
      class: "primary",
      "data-action": "fork-confirm",
      text: "Fork",
      onclick: (event) => {
        const typed = inputs.value.trim();
        const body = { checkpoint: number };
        if (typed && typed !== "{}") body.inputs_json = typed;
        start(event.currentTarget, `${base}/fork`, body);
      },
    }),
  );
}

function change(sign, text, cls) {
  return el("li", { class: cls }, el("span", { class: "sign", text: sign }), el("pre", { text }));
}

/** The diff GET /state-diff gives, as lists of what was added (+), removed (-) and changed (~). */
function diffView(diff) {
  if (diff.same) return el("p", { id: "state-diff", class: "muted", text: "No change in the agent state." });
  const parts = [];
  if (diff.goal) parts.push(el("h4", { text: "Goal" }), el("ul", {}, change("~", `${diff.goal.from ?? "—"} → ${diff.goal.to ?? "—"}`, "changed")));
  const titles = { known_facts: "Facts", open_questions: "Open questions", artifacts: "Artifacts", risk_flags: "Risk flags", plan: "Plan" };
  for (const [key, title] of Object.entries(titles)) {
    const part = diff[key];
    const items = [
      ...(part.changed || []).map((c) => change("~", `${c.key}: ${shown(c.from)} → ${shown(c.to)}`, "changed")),
      ...part.added.map((item) => change("+", key === "known_facts" ? `${item.key}: ${shown(item.value)}` : shown(item), "added")),
      ...part.removed.map((item) => change("-", key === "known_facts" ? `${item.key}: ${shown(item.value)}` : shown(item), "removed")),
    ];
    if (items.length) parts.push(el("h4", { text: title }), el("ul", { "data-part": key }, ...items));
  }
  return el("div", { id: "state-diff" }, ...parts);
}

/** The time-travel section; `update(task, steps, checkpoints)` draws it again when they change. */
export function timeTravel(base) {
  const table = el("div");
  const form = el("div");
  const compare = el("div");
  const retry = el("div", { id: "retry-from" });
  const node = el("section", { id: "time-travel" }, el("h2", { text: "Time travel" }), retry, table, form, compare);
  let shownKey = null;

  let retryKey = null;

  function drawRetry(task, steps) {
    const key = JSON.stringify([task.status, steps.map((s) => s.status)]);
    if (key === retryKey) return; // a step being chosen stays chosen
    retryKey = key;
    if (task.status !== "failed" && task.status !== "cancelled") {
      retry.replaceChildren();
      return;
    }
    const stopped = steps.findIndex((s) => !DONE.has(s.status));
    const reached = steps.length ? Math.min((stopped < 0 ? steps.length : stopped) + 1, steps.length) : 0;
    if (!reached) {
      retry.replaceChildren();
      return;
    }
    const choice = el("select", { id: "retry-step" }, ...steps.slice(0, reached).map((s) => el("option", { value: s.step, text: `step ${s.step}: ${s.name}` })));
    choice.value = String(reached);
    put(
      retry,
      el("label", { for: "retry-step", text: "Retry as a new task from " }),
      choice,
      " ",
      el("button", { type: "button", "data-action": "retry-from-step", text: "Retry from this step", onclick: (event) => start(event.currentTarget, `${base}/retry`, { from_step: Number(choice.value) }) }),
    );
  }

  function drawCheckpoints(checkpoints) {
    if (!checkpoints.length) {
      put(table, el("p", { class: "muted", text: "No checkpoint yet: a task saves one as each step ends (by default)." }));
      compare.replaceChildren();
      return;
    }
    put(
      table,
      el(
        "table",
        { id: "checkpoints", class: "compact" },
        el("thead", {}, el("tr", {}, ...["Checkpoint", "Saved", "Last call", "Status then", "Steps done", ""].map((h) => el("th", { text: h })))),
        el(
          "tbody",
          {},
          ...checkpoints.map((saved) =>
            el(
              "tr",
              { "data-checkpoint": saved.checkpoint },
              el("td", { text: saved.checkpoint }),
              el("td", {}, stamp(saved.created_at)),
              el("td", { text: saved.last_seq }),
              el("td", { text: saved.status }),
              el("td", { text: saved.steps_completed }),
              el("td", {}, el("button", { type: "button", "data-action": "fork", text: "Fork from here", onclick: () => put(form, forkForm(base, saved.checkpoint)) })),
            ),
          ),
        ),
      ),
    );
    const options = (selected) => checkpoints.map((c) => el("option", { value: c.checkpoint, text: `checkpoint ${c.checkpoint}`, selected: c.checkpoint === selected }));
    const from = el("select", { id: "diff-from" }, ...options(checkpoints[0].checkpoint));
    const to = el("select", { id: "diff-to" }, ...options(checkpoints.length > 1 ? checkpoints[checkpoints.length - 1].checkpoint : null), el("option", { value: "", text: "now", selected: checkpoints.length === 1 }));
    const result = el("div");
    put(
      compare,
      el("h3", { text: "What changed in the agent state" }),
      el("p", {}, "From ", from, " to ", to, " ", el("button", {
        type: "button",
        "data-action": "diff",
        text: "Show changes",
        onclick: async () => {
          try {
            const query = `from=${from.value}${to.value ? `&to=${to.value}` : ""}`;
            put(result, diffView(await api(`${base}/state-diff?${query}`)));
          } catch (error) {
            if (!(error instanceof ApiError && error.status === 401)) flash(error.message);
          }
        },
      })),
      result,
    );
  }

  function update(task, steps, checkpoints) {
    drawRetry(task, steps);
    const key = JSON.stringify([task.status, checkpoints.map((c) => c.checkpoint)]);
    if (key === shownKey) return; // drawn already: a form being filled in stays as it is
    shownKey = key;
    drawCheckpoints(checkpoints);
  }

  return { node, update };
}
