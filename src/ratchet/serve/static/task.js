// The task page: where it stands (live), its plan, its events as they come,
// its budget, its family, what it asks of a person, and its calls (the
// timeline and the journal). Its event stream and the global stream drive it.

import { api, ApiError, follow } from "./api.js";
import { showDecisions } from "./decisions.js";
import { duration, el, flash, put, shown, when } from "./dom.js";
import { parseJson } from "./json.js";
import { drawTimeline, legend } from "./timeline.js";

const GAUGES = [
  ["steps", "steps", "Steps", (v) => String(v)],
  ["tokens", "llm_tokens", "Tokens", (v) => Number(v).toLocaleString()],
  ["cost", "cost", "Cost", (v) => Number(v).toFixed(4)],
  ["wall", "wall_time", "Wall time", (v) => duration(Number(v))],
];
const ENDED = new Set(["completed", "failed", "cancelled"]);
const PERSON = new Set(["approval", "input"]); // settled by the decision shown, not by a resume

function badge(status) {
  return el("span", { class: `badge ${status}`, text: status });
}

function gauges(target, budget) {
  put(
    target,
    ...GAUGES.map(([name, key, title, format]) => {
      const used = budget.used[key] ?? 0;
      const limit = budget.limits[key];
      const share = limit ? Math.min(used / limit, 1) : 0;
      const state = limit === null || limit === undefined ? "unlimited" : share >= 1 ? "over" : share >= 0.8 ? "high" : "";
      const fill = el("div", { class: "fill" });
      fill.style.width = `${(share * 100).toFixed(1)}%`; // CSSOM, which the page's CSP allows (a style attribute it refuses)
      return el(
        "div",
        { class: `gauge ${state}`, "data-budget": name, "data-used": used, "data-limit": limit ?? "" },
        el("div", { class: "label" }, el("span", { text: title }), el("span", { class: "figures", text: `${format(used)} / ${limit === null || limit === undefined ? "no limit" : format(limit)}` })),
        el("div", { class: "bar", role: "meter", "aria-label": title, "aria-valuenow": used, "aria-valuemax": limit ?? "" }, fill),
      );
    }),
  );
}

function eventItem(event) {
  if (event.unreadable !== undefined) {
    return el("li", { "data-seq": event.seq ?? "", class: "error" }, el("span", { class: "kind", text: "unreadable" }), event.unreadable);
  }
  return el(
    "li",
    { "data-seq": event.seq, "data-kind": event.kind, class: event.severity },
    el("span", { class: "time", text: when(event.time) }),
    el("span", { class: "kind", text: event.kind }),
    event.display_message || event.message,
  );
}

function journalRow(op) {
  return el(
    "tr",
    { "data-seq": op.seq, "data-status": op.status },
    el("td", { class: "mono", text: op.seq }),
    el("td", { text: op.kind }),
    el("td", { text: op.name }),
    el("td", { text: op.attempt }),
    el("td", {}, badge(op.status)),
    el("td", { text: duration(op.duration_seconds) }),
    el("td", { class: "mono", text: op.idempotency_key }),
    el("td", { class: "mono" }, el("pre", { text: op.input_preview ?? "" })),
    el("td", { class: "mono" }, el("pre", { text: op.error ? `${op.error_type || "error"}: ${op.error}` : op.output_preview ?? "" })),
  );
}

function summary(task) {
  const rows = [
    ["Task id", el("span", { class: "mono", text: task.task_id })],
    ["Agent", task.agent],
    task.goal || task.instruction ? ["Goal", task.goal || task.instruction] : null,
    ["Created", when(task.created_at)],
    ["Started", when(task.started_at)],
    ["Updated", when(task.updated_at)],
    task.result !== null && task.result !== undefined ? ["Result", el("pre", { text: shown(task.result) })] : null,
    task.error ? ["Error", el("span", { class: "error", text: task.error })] : null,
  ].filter(Boolean);
  return rows.flatMap(([name, value]) => [el("dt", { text: name }), el("dd", {}, value)]);
}

export async function showTask(root, taskId) {
  const base = `/api/tasks/${encodeURIComponent(taskId)}`;
  const status = el("span", { id: "task-status", class: "badge" });
  const waiting = el("span", { id: "task-waiting", class: "muted" });
  const title = el("h1", {}, el("span", { class: "task-name", text: taskId }), " ", status, " ", waiting);
  // What a task waiting on a timer does next: a call a person decided and it has not run yet, or when it wakes.
  const next = el("p", { id: "task-next", hidden: true });
  const facts = el("dl", { class: "summary" });
  const controls = el("div", { class: "controls" });
  const slots = { approval: el("div"), question: el("div"), inDoubt: el("div") };
  const plan = el("ol", { id: "plan" });
  const noPlan = el("p", { class: "muted", hidden: true, text: "No plan: this task runs its code step by step." });
  const events = el("ol", { id: "events" });
  const budget = el("div", { id: "budget" });
  const tree = el("div", { id: "tree" });
  const timeline = el("section", { id: "timeline" }, el("h2", { text: "Calls over time" }));
  const journal = el("tbody");
  put(
    root,
    title,
    next,
    facts,
    controls,
    slots.approval,
    slots.question,
    slots.inDoubt,
    el(
      "div",
      { class: "columns" },
      el("div", {}, el("h2", { text: "Plan" }), plan, noPlan, el("h2", { text: "Budget" }), budget, el("h2", { text: "Task tree" }), tree),
      el("div", {}, el("h2", { text: "Events" }), events),
    ),
    timeline,
    legend(),
    el("h2", { text: "Journal" }),
    el(
      "table",
      { id: "journal" },
      el("thead", {}, el("tr", {}, ...["Call", "Kind", "Name", "Attempt", "Status", "Took", "Idempotency key", "Input", "Output or error"].map((h) => el("th", { text: h })))),
      journal,
    ),
  );

  function setStatus(value, waitingOn) {
    status.textContent = value;
    status.className = `badge ${value}`;
    waiting.textContent = waitingOn ? `on ${waitingOn}` : "";
  }

  function showControls(task) {
    const button = (action, label, path) =>
      el("button", {
        type: "button",
        "data-action": action,
        text: label,
        onclick: async (event) => {
          flash("");
          event.currentTarget.disabled = true;
          try {
            const answer = await api(`${base}/${path}`, { body: {} });
            if (action === "retry" && answer.task_id && answer.task_id !== taskId) {
              history.pushState(null, "", `/tasks/${encodeURIComponent(answer.task_id)}`);
              dispatchEvent(new PopStateEvent("popstate"));
              return;
            }
          } catch (error) {
            if (!(error instanceof ApiError && error.status === 401)) flash(error.message);
          }
          await refresh();
        },
      });
    const ended = ENDED.has(task.status);
    put(
      controls,
      ended ? null : button("cancel", "Cancel", "cancel"),
      ended || PERSON.has(task.waiting_on) ? null : button("resume", "Resume", "resume"),
      task.status === "failed" || task.status === "cancelled" ? button("retry-task", "Retry as a new task", "retry") : null,
    );
  }

  async function refresh() {
    const [view, journalPage, spent, timelinePage] = await Promise.all([
      api(base),
      api(`${base}/journal?limit=1000`),
      api(`${base}/budget`),
      api(`${base}/timeline`),
    ]);
    const [ops, attempts] = [journalPage.calls, timelinePage.attempts];
    const task = view.task;
    title.firstElementChild.textContent = task.name;
    document.title = `${task.name} · Ratchet`;
    setStatus(task.status, task.waiting_on);
    next.textContent = view.next || "";
    next.hidden = !view.next;
    put(facts, ...summary(task));
    showControls(task);
    showDecisions(slots, view, refresh);
    put(
      plan,
      ...view.steps.map((step) =>
        el(
          "li",
          { "data-step-status": step.status, "data-step": step.step },
          el("span", { class: "step-name", text: step.name }),
          " ",
          badge(step.status),
          step.failure_message ? el("div", { class: "error", text: step.failure_message }) : null,
        ),
      ),
    );
    noPlan.hidden = view.steps.length > 0;
    gauges(budget, spent);
    const family = [];
    if (task.parent_id) family.push(el("p", {}, "Started by ", el("a", { href: `/tasks/${encodeURIComponent(task.parent_id)}`, text: task.parent_id })));
    if (view.children.length) {
      family.push(
        el(
          "ul",
          { class: "children" },
          ...view.children.map((child) =>
            el("li", { "data-task-id": child.task_id }, el("a", { href: `/tasks/${encodeURIComponent(child.task_id)}`, text: child.name }), " ", badge(child.status)),
          ),
        ),
      );
    }
    put(tree, ...(family.length ? family : [el("p", { class: "muted", text: "No parent and no child task." })]));
    put(journal, ...ops.map(journalRow));
    drawTimeline(timeline, attempts);
  }

  // Many events may come at once: one refresh for them all, a moment later.
  let scheduled = null;
  function refreshSoon() {
    if (scheduled) return;
    scheduled = setTimeout(async () => {
      scheduled = null;
      try {
        await refresh();
      } catch (error) {
        if (!(error instanceof ApiError && error.status === 401)) flash(error.message);
      }
    }, 250);
  }

  await refresh();
  let lastSeq = 0;
  const taskStream = follow(`${base}/events/stream`, (message) => {
    if (message.type === "end") {
      refreshSoon();
      return true;
    }
    const event = parseJson(message.data);
    const seq = Number(message.id ?? event.seq);
    if (seq && seq <= lastSeq) return false; // seen already
    if (seq) lastSeq = seq;
    events.append(eventItem(event));
    events.scrollTop = events.scrollHeight;
    refreshSoon();
    return false;
  });
  const live = document.getElementById("live");
  const changes = follow(
    "/api/stream",
    (message) => {
      if (message.type !== "message") return false;
      const change = parseJson(message.data);
      if (change.task_id === taskId) {
        setStatus(change.status, change.waiting_on);
        refreshSoon();
      }
      return false;
    },
    { onState: (state) => (live.textContent = state) },
  );
  return () => {
    taskStream.stop();
    changes.stop();
    clearTimeout(scheduled);
  };
}
