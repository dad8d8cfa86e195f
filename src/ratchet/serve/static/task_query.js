// The task list's view as text: its filters (named as GET /api/tasks names
// them), its sort and the cursor of the page shown. The same names make the
// page's address, the API's query and a batch action's filter, so a reloaded
// or shared address shows the same view (docs/serve.md, "The task list").

export const STATUSES = ["queued", "running", "waiting", "completed", "failed", "cancelled"];
export const ENDED = new Set(["completed", "failed", "cancelled"]);
export const WAIT_REASONS = ["approval", "input", "timer", "in_doubt", "code", "stale", "message", "children"];
export const DEFAULT_SORT = "-created"; // newest first (the API's own default is oldest first)

/** The filters given a value or several (any of them; every one for labels), in the address's order. */
const REPEATED = new Set(["status", "waiting_on", "label"]);
export const FILTER_KEYS = [
  "search",
  "status",
  "waiting_on",
  "label",
  "name",
  "agent",
  "model",
  "parent",
  "id_prefix",
  "created_after",
  "created_before",
  "min_cost",
  "max_cost",
];

export function isRepeated(key) {
  return REPEATED.has(key);
}

/**
 * The view an address's query asks for: `{filter, sort, cursor}`. A filter holds only the keys
 * given, a repeated one as a list; the server checks every value (a bad one is its one line).
 */
export function readView(search) {
  const query = new URLSearchParams(search);
  const filter = {};
  for (const key of FILTER_KEYS) {
    const values = query.getAll(key).filter((value) => value.trim() !== "");
    if (!values.length) continue;
    // A status or a reason is one word of any case to the server: the same here, to match the stream's.
    const words = key === "status" || key === "waiting_on" ? values.map((v) => v.trim().toLowerCase()) : values;
    filter[key] = REPEATED.has(key) ? [...new Set(words)] : words[0];
  }
  return { filter, sort: query.get("sort") || DEFAULT_SORT, cursor: query.get("cursor") || null };
}

function filterParams(filter) {
  const query = new URLSearchParams();
  for (const key of FILTER_KEYS) {
    const value = filter[key];
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) query.append(key, one);
  }
  return query;
}

/** The address of a view: "/?status=failed&sort=-cost", the default sort and the first page left out. */
export function viewAddress(view) {
  const query = filterParams(view.filter);
  if (view.sort !== DEFAULT_SORT) query.set("sort", view.sort);
  if (view.cursor) query.set("cursor", view.cursor);
  const text = query.toString();
  return text ? `/?${text}` : "/";
}

/** GET /api/tasks for a view's page (`changes` replaces filter keys: {status: ["failed"]}). */
export function listPath(view, { limit, changes = {} } = {}) {
  const query = filterParams({ ...view.filter, ...changes });
  query.set("sort", view.sort);
  if (view.cursor) query.set("cursor", view.cursor);
  if (limit) query.set("limit", String(limit));
  return `/api/tasks?${query}`;
}

/** A filter as a batch action takes it: the same keys, a repeated one as a list. */
export function filterBody(filter) {
  const body = {};
  for (const key of FILTER_KEYS) if (filter[key] !== undefined) body[key] = filter[key];
  return body;
}

export function hasFilter(filter) {
  return FILTER_KEYS.some((key) => filter[key] !== undefined);
}

/**
 * Whether a change of the global stream may be of a task the filter keeps. The stream tells a
 * task's status, what it waits on, name, agent and parent; what it does not tell (a search, a
 * label, a model, a time or a cost) is taken to match, so a change is never missed, only maybe
 * counted when it did not need to be.
 */
export function mayMatch(filter, change) {
  if (filter.status && !filter.status.includes(change.status)) return false;
  if (filter.waiting_on && !filter.waiting_on.includes(change.waiting_on)) return false;
  if (filter.name !== undefined && change.name !== filter.name) return false;
  if (filter.agent !== undefined && change.agent !== filter.agent) return false;
  if (filter.parent !== undefined && change.parent_id !== filter.parent) return false;
  if (filter.id_prefix !== undefined && !String(change.task_id).startsWith(filter.id_prefix)) return false;
  return true;
}

/** The sort's column and direction: "-cost" is ["cost", true]. */
export function sortParts(sort) {
  return sort.startsWith("-") ? [sort.slice(1), true] : [sort, false];
}
