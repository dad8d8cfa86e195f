// Cancelling, as a person does it: one task (its page, or its row in the
// list) or every task a filter matches, each only after a confirmation that
// says what will stop, with a reason that is kept with each task.

import { api } from "./api.js";
import { confirmWithReason } from "./dialog.js";
import { el } from "./dom.js";
import { filterBody } from "./task_query.js";

/** Ask, then POST /api/tasks/{id}/cancel with the reason typed. The task as cancelled, or null if not asked to. */
export async function cancelTask(task) {
  const name = task.name && task.name !== task.task_id ? `${task.name} (${task.task_id})` : task.task_id;
  const reason = await confirmWithReason({
    title: "Cancel this task?",
    text: el("span", {}, "The worker running ", el("b", { text: name }), " stops at its next write, and its child tasks are cancelled too. This cannot be undone."),
    action: "Cancel the task",
    back: "Keep it running",
  });
  if (reason === null) return null;
  return api(`/api/tasks/${encodeURIComponent(task.task_id)}/cancel`, { body: reason ? { reason } : {} });
}

function plural(count, one, many) {
  return `${Number(count).toLocaleString()} ${count === 1 ? one : many}`;
}

/**
 * Cancel every task `filter` matches (POST /api/tasks/batch): first ask the server how many match,
 * then the person, then the server again with `confirm`. Its answer ({matched, done, skipped}), or
 * null when nothing matched or the person did not go on.
 */
export async function cancelMatching(filter) {
  const request = { action: "cancel", filter: filterBody(filter) };
  const { matched } = await api("/api/tasks/batch", { body: { ...request, confirm: false } });
  if (!matched) return { matched: 0, done: 0, skipped: [] };
  const reason = await confirmWithReason({
    title: `Cancel ${plural(matched, "task", "tasks")}?`,
    text: `Every task the list's filters match now is cancelled (those that have ended already are skipped), with their child tasks. This cannot be undone.`,
    action: `Cancel ${plural(matched, "task", "tasks")}`,
    back: "Keep them",
  });
  if (reason === null) return null;
  return api("/api/tasks/batch", { body: { ...request, ...(reason ? { reason } : {}), confirm: true } });
}

/** What a batch did, in a line: "Cancelled 8 of 10 tasks; 2 skipped: t-1 (already completed), …". */
export function batchSummary(answer) {
  const skipped = answer.skipped || [];
  const line = `Cancelled ${Number(answer.done).toLocaleString()} of ${plural(answer.matched, "task", "tasks")}`;
  if (!skipped.length) return `${line}.`;
  const some = skipped.slice(0, 5).map((item) => `${item.id} (${item.reason})`).join(", ");
  return `${line}; ${skipped.length.toLocaleString()} skipped: ${some}${skipped.length > 5 ? ", …" : ""}.`;
}
