// The task page: where it stands (live), what it is (task_facts.js), what it
// asks of a person, its plan and agent state, its budget, its family
// (family.js), the answer its model is writing (task_stream.js), its events,
// time travel (timetravel.js), its calls over time
// (timeline.js) and its journal (journal.js). The journal and the events come
// a page at a time (paged.js); a LangGraph thread's part is langgraph.js's; the task's event stream and the global stream
// keep it all current.

import { api, ApiError, follow } from "./api.js";
import { cancelTask } from "./cancel.js";
import { showDecisions } from "./decisions.js";
import { duration, el, flash, go, put, stamp } from "./dom.js";
import { familyTree } from "./family.js";
import { journalSection } from "./journal.js";
import { threadItems } from "./langgraph.js";
import { parseJson } from "./json.js";
import { PagedList } from "./paged.js";
import { agentState, summary } from "./task_facts.js";
import { streamPanel } from "./task_stream.js";
import { legend, TimelineFeed, TimelineView } from "./timeline.js";
import { timeTravel } from "./timetravel.js";

const GAUGES = [
  ["steps", "steps", "Steps", (v) => String(v)],
  ["tokens", "llm_tokens", "Tokens", (v) => Number(v).toLocaleString()],
  ["cost", "cost", "Cost", (v) => Number(v).toFixed(4)],
  ["wall", "wall_time", "Wall time", (v) => duration(Number(v))],
];
const ENDED = new Set(["completed", "failed", "cancelled"]);
const PERSON = new Set(["approval", "input"]); // settled by the decision shown, not by a resume
const MODELS_EVERY_MS = 10000; // the models line reads the whole journal: not at every event

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
    el("span", { class: "time" }, stamp(event.time)),
    el("span", { class: "kind", text: event.kind }),
    event.display_message || event.message,
  );
}

function planItems(steps) {
  return steps.map((step) =>
    el(
      "li",
      { "data-step-status": step.status, "data-step": step.step },
      el("span", { class: "step-name", text: step.name }),
      " ",
      badge(step.status),
      step.failure_message ? el("div", { class: "error", text: step.failure_message }) : null,
    ),
  );
}

export async function showTask(root, taskId) {
  const base = `/api/tasks/${encodeURIComponent(taskId)}`;
  const status = el("span", { id: "task-status", class: "badge" });
  const waiting = el("span", { id: "task-waiting", class: "muted" });
  const title = el("h1", {}, el("span", { class: "task-name", text: taskId }), " ", status, " ", waiting);
  // What a task waiting on a timer does next: a call a person decided and it has not run yet, or when it wakes.
  const next = el("p", { id: "task-next", hidden: true });
  const facts = el("dl", { class: "summary", id: "task-facts" });
  const controls = el("div", { class: "controls" });
  const slots = { approval: el("div"), question: el("div"), inDoubt: el("div") };
  const plan = el("ol", { id: "plan" });
  const thread = el("section", { id: "langgraph", hidden: true }); // a LangGraph thread's (langgraph.js)
  const noPlan = el("p", { class: "muted", hidden: true, text: "No plan: this task runs its code step by step." });
  const state = el("div", { id: "agent-state" });
  const budget = el("div", { id: "budget" });
  const tree = el("div", { id: "tree" });
  const eventList = el("ol", { id: "events" });
  const events = new PagedList({ path: `${base}/events`, key: "events", list: eventList, render: eventItem, noun: "events", start: 0, limit: 200 });
  const travel = timeTravel(base);
  const timelineSection = el("section", { id: "timeline" }, el("h2", { text: "Calls over time" }));
  const timeline = new TimelineView(timelineSection);
  const feed = new TimelineFeed(base);
  let view = null;
  const journal = journalSection(base, { taskModel: () => view?.task.model ?? null });
  const streamed = streamPanel(base);
  put(
    root,
    title,
    next,
    facts,
    controls,
    slots.approval,
    slots.question,
    slots.inDoubt,
    thread,
    streamed.node,
    el(
      "div",
      { class: "columns" },
      el(
        "div",
        {},
        el("h2", { text: "Plan" }),
        plan,
        noPlan,
        el("h2", { text: "Agent state" }),
        state,
        el("h2", { text: "Budget" }),
        budget,
        el("h2", { text: "Task tree" }),
        tree,
      ),
      el("div", {}, el("h2", { text: "Events" }), eventList, events.footer),
    ),
    travel.node,
    timelineSection,
    legend(),
    journal.node,
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
            if (action === "retry-task" && answer.task_id && answer.task_id !== taskId) {
              go(`/tasks/${encodeURIComponent(answer.task_id)}`);
              return;
            }
          } catch (error) {
            if (!(error instanceof ApiError && error.status === 401)) flash(error.message);
          }
          await refresh();
        },
      });
    // Cancel asks first, with a reason kept with the task (cancel.js).
    const cancel = el("button", {
      type: "button",
      class: "danger",
      "data-action": "cancel",
      text: "Cancel…",
      onclick: async () => {
        flash("");
        try {
          if ((await cancelTask(task)) === null) return;
        } catch (error) {
          if (!(error instanceof ApiError && error.status === 401)) flash(error.message);
        }
        await refresh();
      },
    });
    const ended = ENDED.has(task.status);
    put(
      controls,
      ended ? null : cancel,
      ended || PERSON.has(task.waiting_on) ? null : button("resume", "Resume", "resume"),
      task.status === "failed" || task.status === "cancelled" ? button("retry-task", "Retry as a new task", "retry") : null,
    );
  }

  let models = null;
  let modelsAt = 0;
  let family = null;
  let relatives = new Set(); // the tasks of the tree below this one
  let treeDrawn = null;
  const folded = new Set(); // its branches a person folded
  let firstEvents = [];

  async function refresh({ all = false } = {}) {
    const now = Date.now();
    const wantModels = all || now - modelsAt > MODELS_EVERY_MS;
    const calls = Promise.all([feed.refresh(), journal.paged.refresh()]); // asked first: the largest reads
    calls.catch(() => {}); // awaited below; a failure of the reads before it is the one reported
    const [shown, spent, checkpoints, used] = await Promise.all([
      api(base),
      api(`${base}/budget`),
      api(`${base}/checkpoints`),
      wantModels ? api(`${base}/models`) : Promise.resolve(models),
    ]);
    view = shown;
    if (wantModels) [models, modelsAt] = [used, now];
    const task = view.task;
    title.firstElementChild.textContent = task.name;
    document.title = `${task.name} · Ratchet`;
    setStatus(task.status, task.waiting_on);
    next.textContent = view.next || "";
    next.hidden = !view.next;
    put(facts, ...summary(task, firstEvents, models));
    showControls(task);
    showDecisions(slots, view, refresh);
    put(plan, ...planItems(view.steps));
    noPlan.hidden = view.steps.length > 0;
    thread.hidden = !view.langgraph;
    put(thread, ...(view.langgraph ? threadItems(view.langgraph) : []));
    put(state, ...agentState(task.state));
    gauges(budget, spent);
    travel.update(task, view.steps, checkpoints);
    const children = JSON.stringify(view.children);
    if (all || children !== family) {
      family = children;
      const found = await api(`${base}/tree`);
      relatives = new Set();
      const walk = (node) => {
        relatives.add(node.task_id);
        node.children.forEach(walk);
      };
      walk(found.tree);
      const drawn = JSON.stringify(found);
      if (drawn !== treeDrawn) put(tree, ...familyTree(found, taskId, folded)); // unchanged: left as it is
      treeDrawn = drawn;
    }
    await calls;
    timeline.draw(feed.attempts, view.steps);
  }

  // Many events may come at once: one refresh for them all, a moment later, one at a time.
  let scheduled = null;
  let running = null;
  function refreshSoon(options) {
    if (scheduled) return;
    scheduled = setTimeout(async () => {
      if (running) await running;
      scheduled = null;
      running = refresh(options)
        .catch((error) => {
          if (!(error instanceof ApiError && error.status === 401)) flash(error.message);
        })
        .finally(() => {
          running = null;
        });
    }, 250);
  }

  // The first page of events tells where the task came from (a fork's or retry's first event).
  await events.more();
  firstEvents = [...events.items.values()].slice(0, 5);
  await journal.paged.more();
  await refresh({ all: true });
  streamed.start();
  // The stream starts after the last event shown once all are shown (none is missed), else after
  // the newest the page has seen: the pages not read yet hold the ones before it.
  const lastSeen = events.complete ? events.lastSeq : Math.max(events.lastSeq, ...view.events.map((e) => Number(e.seq) || 0));
  const taskStream = follow(
    `${base}/events/stream`,
    (message) => {
      if (message.type === "end") {
        refreshSoon({ all: true });
        return true;
      }
      events.live(parseJson(message.data));
      refreshSoon();
      return false;
    },
    { lastId: String(lastSeen) },
  );
  const live = document.getElementById("live");
  const changes = follow(
    "/api/stream",
    (message) => {
      if (message.type !== "message") return false;
      const change = parseJson(message.data);
      if (change.task_id === taskId) {
        setStatus(change.status, change.waiting_on);
        refreshSoon();
      } else if (change.parent_id === taskId || relatives.has(change.task_id) || relatives.has(change.parent_id)) {
        refreshSoon({ all: true }); // a child started or moved: its branch of the tree
      }
      return false;
    },
    { onState: (state) => (live.textContent = state) },
  );
  return () => {
    streamed.stop();
    taskStream.stop();
    changes.stop();
    events.stop();
    journal.paged.stop();
    clearTimeout(scheduled);
  };
}
