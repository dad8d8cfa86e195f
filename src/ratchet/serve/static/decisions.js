// What a person decides on the task page: a pending approval, a question,
// calls in doubt. Each section is drawn again only when what it asks changes,
// so a refresh never wipes what someone is typing.
//
// Arguments are shown as the server's own text of them (`arguments_json`),
// and what a person types is sent as text for the server to read: no value
// goes through a JavaScript number on its way, so none is rounded.

import { api, ApiError } from "./api.js";
import { el, flash, put, shown, when } from "./dom.js";

/**
 * Post a decision; on success `done()` refreshes the page, on failure #flash shows the API's one line.
 * The button is disabled while the request runs, so a double click sends it once.
 */
async function act(button, path, body, done) {
  flash("");
  button.disabled = true;
  try {
    await api(path, { body });
    await done();
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) flash(error.message);
  } finally {
    button.disabled = false;
  }
}

/** Keep `slot` showing `build()` for `key`; null removes it. */
function keyed(slot, key, build) {
  const current = slot.firstElementChild;
  if (key === null) {
    slot.replaceChildren();
    return;
  }
  if (current && current.dataset.key === key) return;
  const section = build();
  section.dataset.key = key;
  put(slot, section);
}

function approval(taskId, pending, done) {
  const base = `/api/tasks/${encodeURIComponent(taskId)}`;
  const reason = el("input", { id: "deny-reason", type: "text", placeholder: "why (the agent is told)" });
  const editor = el("div", { class: "editor", hidden: true });
  const buttons = el(
    "div",
    { class: "buttons" },
    el("button", {
      type: "button",
      class: "primary",
      "data-action": "approve",
      text: "Approve",
      onclick: (event) => act(event.currentTarget, `${base}/approve`, { seq: pending.seq }, done),
    }),
    el("button", {
      type: "button",
      "data-action": "edit",
      text: "Edit arguments",
      onclick: () => {
        const args = el("textarea", { id: "approval-args", spellcheck: "false" });
        args.value = pending.arguments_json;
        const confirm = el("button", {
          type: "button",
          class: "primary",
          "data-action": "approve-edited",
          text: "Approve with these arguments",
          // Untouched, it is a plain approval: the call runs with its stored arguments, not a copy.
          onclick: (event) => {
            const edited = args.value === pending.arguments_json ? {} : { edit_args_json: args.value };
            act(event.currentTarget, `${base}/approve`, { seq: pending.seq, ...edited }, done);
          },
        });
        put(editor, args, confirm);
        editor.hidden = false;
        args.focus();
      },
    }),
    reason,
    el("button", {
      type: "button",
      class: "danger",
      "data-action": "deny",
      text: "Deny",
      onclick: (event) =>
        act(event.currentTarget, `${base}/deny`, { seq: pending.seq, reason: reason.value.trim() || "denied in the dashboard" }, done),
    }),
  );
  return el(
    "section",
    { id: "approval", class: "decision", "data-seq": pending.seq },
    el("h2", { text: `Approval needed: ${pending.tool}` }),
    el("p", { class: "muted", text: `Call ${pending.seq}${pending.step ? `, step ${pending.step}` : ""}, asked ${when(pending.requested_at)}` }),
    pending.why ? el("p", { class: "why", text: pending.why }) : null,
    el("pre", { class: "arguments", text: pending.arguments_json }),
    buttons,
    editor,
  );
}

function question(taskId, text, done) {
  const answer = el("textarea", { id: "answer", placeholder: "Your answer" });
  return el(
    "section",
    { id: "question", class: "decision" },
    el("h2", { text: "The task asks" }),
    el("p", { class: "question-text", text }),
    answer,
    el("button", {
      type: "button",
      class: "primary",
      "data-action": "answer",
      text: "Answer",
      onclick: (event) => {
        if (!answer.value.trim()) return flash("Write an answer first.");
        act(event.currentTarget, `/api/tasks/${encodeURIComponent(taskId)}/answer`, { text: answer.value }, done);
      },
    }),
  );
}

function inDoubt(taskId, calls, done) {
  const rows = calls.map((op) => {
    const path = `/api/tasks/${encodeURIComponent(taskId)}/in-doubt/${op.seq}`;
    const extra = el("div", { class: "editor", hidden: true });
    const button = (action, label, body) =>
      el("button", {
        type: "button",
        "data-action": action,
        text: label,
        onclick: (event) => act(event.currentTarget, path, body, done),
      });
    return el(
      "tr",
      { "data-seq": op.seq },
      el("td", { class: "mono", text: op.seq }),
      el("td", { text: `${op.kind} ${op.name}` }),
      el("td", { text: op.attempt }),
      el("td", { text: when(op.started_at) }),
      el("td", { class: "mono" }, el("pre", { text: shown(op.input) })),
      el(
        "td",
        { class: "buttons" },
        button("retry", "Retry", { action: "retry" }),
        button("skip", "Skip", { action: "skip" }),
        el("button", {
          type: "button",
          "data-action": "set-result",
          text: "Set result",
          onclick: () => {
            for (const open of document.querySelectorAll("#in-doubt .editor")) open.replaceChildren();
            const result = el("textarea", { id: "result", spellcheck: "false", placeholder: "the call's result, as JSON" });
            result.value = "null";
            put(
              extra,
              result,
              el("button", {
                type: "button",
                class: "primary",
                "data-action": "set-result-confirm",
                text: "Record this result",
                onclick: (event) => act(event.currentTarget, path, { action: "result", result_json: result.value }, done),
              }),
            );
            extra.hidden = false;
            result.focus();
          },
        }),
        extra,
      ),
    );
  });
  return el(
    "section",
    { id: "in-doubt", class: "decision" },
    el("h2", { text: "Calls in doubt" }),
    el("p", { class: "muted", text: "These calls were in flight when their worker stopped: did they happen?" }),
    el(
      "table",
      {},
      el("thead", {}, el("tr", {}, ...["Call", "What", "Attempt", "Started", "Input", "Decide"].map((h) => el("th", { text: h })))),
      el("tbody", {}, ...rows),
    ),
  );
}

/** Show what `view` (GET /api/tasks/{id}) asks of a person in `slots` ({approval, question, inDoubt}). */
export function showDecisions(slots, view, done) {
  const taskId = view.task.task_id;
  const pending = view.pending_approvals[0] || null;
  keyed(slots.approval, pending && `${pending.seq}`, () => approval(taskId, pending, done));
  keyed(slots.question, view.question ?? null, () => question(taskId, view.question, done));
  const calls = view.in_doubt || [];
  keyed(slots.inDoubt, calls.length ? calls.map((op) => `${op.seq}:${op.attempt}`).join(",") : null, () =>
    inDoubt(taskId, calls, done),
  );
}
