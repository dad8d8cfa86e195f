// The task list (docs/serve.md, "The task list"): one page of the tasks its
// filters keep, in the order asked, with how many there are in all; the
// filters, the sort and the page in the address. The page holds only the rows
// it shows: the global stream updates those in place and counts the rest
// (task_live.js); the head of the newest-first list takes new tasks as they come.
// Tasks selected with their checkboxes open side by side with "Compare" (compare.js).
// A store with a read replica lists from it: where the page was read, and how far behind, shows beside the count.

import { ApiError, api } from "./api.js";
import { batchSummary, cancelMatching, cancelTask } from "./cancel.js";
import { MAX_COMPARED, compareAddress } from "./compare.js";
import { el, flash, go as open, put } from "./dom.js";
import { FilterBar } from "./task_filters.js";
import { LiveChanges } from "./task_live.js";
import { DEFAULT_SORT, hasFilter, listPath, mayMatch, readView, STATUSES, viewAddress } from "./task_query.js";
import { TaskTable } from "./task_table.js";

const PAGE = 50;
const FOLLOW_EVERY_MS = 1000; // the head of the list reads its page again at most this often

function button(action, text, onclick) {
  return el("button", { type: "button", "data-action": action, text, onclick });
}

/** Where a listing was read (the API's `replica`), as `ratchet tasks` says it: "from replica HOST:PORT, 0.4 s behind". */
function replicaText(replica) {
  if (replica.error) return `from the primary: replica ${replica.server} could not be read (${replica.error})`;
  if (replica.behind_seconds === null) return `from replica ${replica.server}, behind by an unknown time`;
  return `from replica ${replica.server}, ${Number(replica.behind_seconds).toFixed(1)} s behind`;
}

function refused(error) {
  if (!(error instanceof ApiError && error.status === 401)) flash(error.message); // a 401 shows the login form
}

export async function showTasks(root) {
  let view = readView(location.search);
  // The cursors of the pages before this one (null: the first), kept in the history entry, so a
  // reload, or coming back to the list, finds "Previous" where it was.
  let before = view.cursor && Array.isArray(history.state?.before) ? history.state.before : [];
  let nextCursor = null;
  let reads = 0; // which read is the latest: an earlier one that answers late is dropped
  let counted = null; // the filter (but its status) the status buttons count

  const bar = new FilterBar((filter) => go({ filter, sort: view.sort, cursor: null }, []));
  const table = new TaskTable({ onSort: (sort) => go({ ...view, sort, cursor: null }, []), onCancel: cancelOne, onSelect: selected });
  const compare = button("compare", "Compare", () => open(compareAddress([...table.selected])));
  compare.disabled = true;
  compare.title = `Select 2 to ${MAX_COMPARED} tasks to compare them side by side`;
  const count = el("span", { class: "page-count", id: "tasks-count" });
  const source = el("span", { class: "muted", id: "tasks-replica", hidden: true });
  const changed = el("button", { type: "button", id: "tasks-changed", class: "changed", hidden: true, onclick: () => load({ counts: true }) });
  const batch = button("batch-cancel", "", batchCancel);
  batch.classList.add("danger");
  batch.hidden = true; // until a page says how many match
  const notice = el("p", { id: "tasks-notice", class: "notice", hidden: true });
  const message = el("p", { id: "tasks-message", class: "muted", hidden: true });
  const unreadable = el("p", { id: "tasks-unreadable", class: "error", hidden: true });
  const first = button("first-page", "« First", () => go({ ...view, cursor: null }, []));
  const previous = button("previous-page", "‹ Previous", () => go({ ...view, cursor: before.at(-1) ?? null }, before.slice(0, -1)));
  const next = button("next-page", "Next ›", () => go({ ...view, cursor: nextCursor }, [...before, view.cursor]));
  put(
    root,
    el("h1", { text: "Tasks" }),
    bar.node,
    el("div", { class: "list-bar" }, count, source, changed, compare, batch),
    notice,
    table.node,
    message,
    unreadable,
    el("nav", { class: "pager", "aria-label": "Pages" }, first, previous, next),
  );

  const liveState = document.getElementById("live");
  const live = new LiveChanges({
    onScreen: (taskId) => table.has(taskId),
    apply: (changes) => changes.forEach((change) => table.apply(change)),
    counts: (change) => mayMatch(view.filter, change),
    follows: (change) => change.kind === "created" && !view.cursor && view.sort === DEFAULT_SORT && mayMatch(view.filter, change),
    onFollow: followHead,
    onCount: (tasks, more) => {
      changed.hidden = tasks === 0;
      const many = `${tasks.toLocaleString()}${more ? "+" : ""}`;
      changed.textContent = `${many} ${tasks === 1 && !more ? "task" : "tasks"} changed or new — refresh`;
    },
    onState: (state) => (liveState.textContent = state),
  });

  // A new task belongs at the head of the newest-first list: the page is read again, once a second at most.
  let followTimer = null;
  let followedAt = 0;
  function followHead() {
    if (followTimer !== null) return;
    followTimer = setTimeout(
      () => {
        followTimer = null;
        followedAt = Date.now();
        load({ counts: true });
      },
      Math.max(0, followedAt + FOLLOW_EVERY_MS - Date.now()),
    );
  }

  function go(nextView, nextBefore) {
    view = nextView;
    before = nextBefore;
    history.replaceState({ before }, "", viewAddress(view));
    notice.hidden = true;
    return load();
  }

  async function load({ counts = false } = {}) {
    const current = ++reads;
    bar.show(view.filter);
    table.setSort(view.sort);
    live.hold();
    let page;
    try {
      page = await api(listPath(view, { limit: PAGE }));
    } catch (error) {
      if (current !== reads) return;
      live.release();
      table.show([]);
      nextCursor = null;
      showPage({ total: 0, tasks: [], unreadable: [] }, error);
      return;
    }
    if (current !== reads) return;
    table.show(page.tasks);
    live.release();
    nextCursor = page.next_cursor;
    showPage(page, null);
    const filtered = JSON.stringify({ ...view.filter, status: undefined });
    if (counts || filtered !== counted) {
      counted = filtered;
      readCounts(current).catch(refused);
    }
  }

  function showPage(page, error) {
    const total = Number(page.total);
    const known = !view.cursor || before.length > 0; // a shared address of a later page: its place is not known
    const from = before.length * PAGE + 1;
    if (!page.tasks.length) count.textContent = total ? `No task on this page of ${total.toLocaleString()}` : "";
    else if (known && page.tasks.length === 1) count.textContent = `Task ${from.toLocaleString()} of ${total.toLocaleString()}`;
    else if (known) count.textContent = `Tasks ${from.toLocaleString()}–${(from + page.tasks.length - 1).toLocaleString()} of ${total.toLocaleString()}`;
    else count.textContent = `${page.tasks.length.toLocaleString()} tasks of ${total.toLocaleString()}`;
    source.hidden = !page.replica;
    source.textContent = page.replica ? replicaText(page.replica) : "";
    batch.hidden = !total || !hasFilter(view.filter); // a batch needs a filter: never "every task" by a slip
    batch.textContent = `Cancel all ${total.toLocaleString()} matching…`;
    message.hidden = total > 0 && !error;
    message.className = error ? "error" : "muted";
    message.textContent = error
      ? error.message
      : hasFilter(view.filter)
        ? "No task matches these filters."
        : "No task yet. Submit one with `ratchet submit` or POST /api/tasks.";
    const bad = page.unreadable || [];
    unreadable.hidden = !bad.length;
    unreadable.textContent = bad.length ? `${bad.length} task(s) of this page cannot be read: ${bad[0].task_id ?? ""} ${bad[0].unreadable}` : "";
    first.disabled = previous.disabled = !view.cursor;
    next.disabled = !nextCursor;
  }

  async function readCounts(current) {
    const head = { ...view, cursor: null };
    const totals = await Promise.all(
      ["all", ...STATUSES].map((status) =>
        api(listPath(head, { limit: 1, changes: { status: status === "all" ? undefined : [status] } })).then((answer) => [status, answer.total]),
      ),
    );
    if (current === reads) bar.setCounts(Object.fromEntries(totals));
  }

  function selected(ids) {
    compare.disabled = ids.length < 2 || ids.length > MAX_COMPARED;
    compare.textContent = ids.length ? `Compare ${ids.length}` : "Compare";
  }

  async function cancelOne(task) {
    flash("");
    try {
      await cancelTask(task); // its row shows "cancelled" when the stream says so
    } catch (error) {
      refused(error);
    }
  }

  async function batchCancel() {
    flash("");
    notice.hidden = true;
    try {
      const answer = await cancelMatching(view.filter);
      if (answer === null) return;
      notice.textContent = answer.matched ? batchSummary(answer) : "No task matches these filters now: nothing was cancelled.";
      notice.hidden = false;
    } catch (error) {
      refused(error);
    }
    await load({ counts: true });
  }

  bar.setCounts({});
  try {
    await live.start(); // the stream first, then the page: no change falls between the two
    await load({ counts: true });
  } catch (error) {
    live.stop();
    throw error;
  }
  return () => {
    live.stop();
    bar.stop();
    clearTimeout(followTimer);
  };
}
