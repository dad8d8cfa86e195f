// The task page's stream panel: the answer its model is writing, as it is
// written, and the values its workflow wrote. It follows GET
// /api/tasks/{id}/stream from the first entry; a dropped connection resumes
// with Last-Event-ID, the offset of the last entry shown, so no piece is
// shown twice or lost. Each attempt of a model call has a block of its own:
// an attempt cut off (its worker killed) or failed is marked so, and the
// retry's text starts afresh below it, never run on into the same answer.
// The panel stays hidden while the task has written nothing to its stream.

import { follow } from "./api.js";
import { el } from "./dom.js";
import { parseJson, writeJson } from "./json.js";

const PENDING_LIMIT = 200; // entries held for one animation frame before they are drawn at once

export function streamPanel(base) {
  const attempts = el("div", { class: "stream-attempts" });
  const values = el("ul", { class: "stream-values", hidden: true });
  const state = el("span", { class: "muted stream-state" });
  const node = el(
    "section",
    { id: "stream", hidden: true },
    el("h2", {}, "Stream ", state),
    el("p", { class: "muted", text: "The model's text as it is written; each attempt of a call apart." }),
    attempts,
    values,
  );
  const blocks = new Map(); // "seq/attempt" -> its block
  const latest = new Map(); // seq -> its latest attempt's block
  let pending = [];
  let frame = null;
  let stream = null;

  function block(seq, attempt) {
    const key = `${seq}/${attempt}`;
    let found = blocks.get(key);
    if (found) return found;
    const before = latest.get(seq);
    if (before && before.dataset.state === "writing") mark(before, "cut", "cut off: what it wrote is not part of the answer");
    const head = el("div", { class: "stream-head" }, el("span", { text: seq === null ? "model call" : `model call #${seq}` }), ` · attempt ${attempt} `);
    const note = el("span", { class: "stream-note" });
    head.append(note);
    found = el("div", { class: "stream-attempt", "data-seq": seq ?? "", "data-attempt": attempt, "data-state": "writing" }, head, el("pre", { class: "stream-text" }));
    found.note = note;
    blocks.set(key, found);
    latest.set(seq, found);
    attempts.append(found);
    return found;
  }

  function mark(target, stateName, text) {
    target.dataset.state = stateName;
    target.note.textContent = text;
  }

  function take(entry) {
    node.hidden = false;
    const attempt = entry.attempt ?? 1;
    if (entry.kind === "attempt") {
      const shown = block(entry.seq, attempt);
      if (attempt > 1 && !shown.note.textContent) shown.note.textContent = `a retry: attempt ${attempt - 1} did not finish`;
    } else if (entry.kind === "text") {
      const text = typeof entry.value === "string" ? entry.value : writeJson(entry.value);
      block(entry.seq, attempt).lastElementChild.append(text); // a text node: model data is never markup
    } else if (entry.kind === "end") {
      const failed = entry.value && entry.value.outcome === "failed";
      const error = failed && entry.value.error ? `: ${entry.value.error}` : "";
      const ended = block(entry.seq, attempt);
      if (failed) mark(ended, "failed", `failed${error}`);
      else ended.dataset.state = "ended"; // a retry's note stays: it was not the first attempt
    } else if (entry.kind === "value") {
      values.hidden = false;
      values.append(
        el("li", { "data-key": entry.key ?? "", "data-offset": entry.offset }, el("code", { text: entry.key ?? "" }), ": ", el("span", { text: writeJson(entry.value) })),
      );
    }
  }

  function flush() {
    frame = null;
    const drawn = pending;
    pending = [];
    for (const entry of drawn) take(entry);
  }

  function start() {
    stream = follow(
      `${base}/stream`,
      (message) => {
        if (message.type === "done") {
          state.textContent = "ended";
          return true;
        }
        if (!["text", "attempt", "end", "value"].includes(message.type)) return false;
        pending.push(parseJson(message.data));
        if (pending.length >= PENDING_LIMIT) {
          if (frame !== null) cancelAnimationFrame(frame);
          flush();
        } else if (frame === null) frame = requestAnimationFrame(flush);
        return false;
      },
      { onState: (now) => (state.textContent = now === "live" ? "live" : now === "stopped" ? state.textContent : now) },
    );
  }

  function stop() {
    if (stream) stream.stop();
    if (frame !== null) cancelAnimationFrame(frame);
  }

  return { node, start, stop };
}
