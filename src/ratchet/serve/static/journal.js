// The journal table of the task page: a page of calls at a time (PagedList),
// each row a preview that opens to the whole call: its input and output as
// indented JSON, fetched when opened, and a model call as a chat.

import { api, ApiError } from "./api.js";
import { chatView } from "./chat.js";
import { duration, el, put, shown, stamp } from "./dom.js";
import { PagedList } from "./paged.js";

// Each column's width: the table is laid out by them alone (table-layout: fixed), not by every row's
// content, so adding a page of rows to a journal of thousands costs as little as the rows themselves.
const COLUMNS = [
  ["", "2.2rem"],
  ["Call", "3.6rem"],
  ["Step", "3rem"],
  ["Kind", "4.4rem"],
  ["Name", "8.5rem"],
  ["Attempt", "4.8rem"],
  ["Status", "6.4rem"],
  ["Took", "5rem"],
  ["Idempotency key", "10rem"],
  ["Input", "auto"],
  ["Output or error", "auto"],
];
const HEADINGS = COLUMNS.map(([heading]) => heading);

function badge(status) {
  return el("span", { class: `badge ${status}`, text: status });
}

function marks(call) {
  const found = [];
  if (call.replayed) found.push("replayed");
  if (call.in_doubt) found.push("in doubt");
  if (call.was_in_doubt) found.push(`was in doubt: ${call.was_in_doubt}`);
  if (call.retried) found.push("retried");
  return found.length ? el("div", { class: "muted marks", text: found.join(" · ") }) : null;
}

function block(title, value, cls) {
  return el("section", { class: cls }, el("h3", { text: title }), el("pre", { class: "json", text: shown(value) }));
}

/** The whole call, as GET /journal/{seq} gives it. */
function detail(call, taskModel) {
  const parts = [];
  if (call.kind === "model") parts.push(chatView({ ...call, task_model: taskModel }));
  const raw = el(
    "div",
    { class: "payload" },
    block("Input", call.input, "input"),
    call.error ? block("Error", `${call.error_type || "error"}: ${call.error}`, "error") : block("Output", call.output, "output"),
  );
  if (call.kind === "model") parts.push(el("details", { class: "raw" }, el("summary", { text: "The call as JSON" }), raw));
  else parts.push(raw);
  const when = el(
    "p",
    { class: "muted" },
    "Started ",
    stamp(call.started_at),
    call.finished_at ? [", finished ", stamp(call.finished_at)] : null,
    call.earlier_attempts?.length ? `; ${call.earlier_attempts.length} earlier attempt(s) failed: ${call.earlier_attempts.map((a) => a.error).join("; ")}` : null,
  );
  return [when, ...parts];
}

/** The journal section: its table and its footer ("12 of 1,200 calls", Load more). */
export function journalSection(base, { taskModel = () => null } = {}) {
  const columns = COLUMNS.map(([, width]) => {
    const column = el("col");
    if (width !== "auto") column.style.width = width; // CSSOM: the page's CSP refuses style attributes
    return column;
  });
  const table = el(
    "table",
    { id: "journal" },
    el("colgroup", {}, ...columns),
    el("thead", {}, el("tr", {}, ...HEADINGS.map((h) => el("th", { text: h })))),
  );
  const open = new Set();

  async function fill(cell, seq) {
    put(cell, el("p", { class: "muted", text: "Loading the whole call…" }));
    try {
      put(cell, ...detail(await api(`${base}/journal/${seq}`), taskModel()));
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) put(cell, el("p", { class: "error", text: error.message }));
    }
  }

  function render(call) {
    const seq = Number(call.seq);
    const cell = el("td", { colspan: HEADINGS.length });
    const more = el("tr", { class: "call-detail", hidden: !open.has(seq) }, cell);
    const toggle = el("button", {
      type: "button",
      class: "expand",
      "data-action": "expand",
      "aria-expanded": String(open.has(seq)),
      title: "Show the whole call",
      text: open.has(seq) ? "▾" : "▸",
      onclick: () => {
        const opening = more.hidden;
        more.hidden = !opening;
        toggle.textContent = opening ? "▾" : "▸";
        toggle.setAttribute("aria-expanded", String(opening));
        if (opening) {
          open.add(seq);
          fill(cell, seq);
        } else open.delete(seq);
      },
    });
    if (open.has(seq)) fill(cell, seq);
    const error = call.error ? `${call.error_type || "error"}: ${call.error}` : null;
    return el(
      "tbody",
      { "data-seq": seq, "data-status": call.status, "data-kind": call.kind },
      el(
        "tr",
        { class: "call" },
        el("td", {}, toggle),
        el("td", { class: "mono", text: call.seq }),
        el("td", { text: call.step ?? "" }),
        el("td", { text: call.kind }),
        el("td", {}, call.name, marks(call)),
        el("td", { text: call.attempt }),
        el("td", {}, badge(call.status)),
        el("td", { text: duration(call.duration_seconds) }),
        el("td", { class: "mono", text: call.idempotency_key }),
        el("td", { class: "mono" }, el("pre", { text: call.input_preview ?? "" })),
        el("td", { class: "mono" }, el("pre", { text: error ?? call.output_preview ?? "" })),
      ),
      more,
    );
  }

  const paged = new PagedList({
    path: `${base}/journal`,
    key: "calls",
    list: table,
    render,
    noun: "calls",
    start: -1,
    limit: 200,
    mayChange: (call) => call.status === "started" || (call.status === "failed" && call.next_attempt_at !== null), // running, or to be tried again
  });
  return { paged, node: el("section", { id: "journal-section" }, el("h2", { text: "Journal" }), table, paged.footer) };
}
