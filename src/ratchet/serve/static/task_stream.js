// The task page's stream panel: the answer its model is writing, as it is
// written, and the values its workflow wrote. It follows GET
// /api/tasks/{id}/stream from the first entry; a dropped connection resumes
// with Last-Event-ID, the offset of the last entry shown, so no piece is
// shown twice or lost. Each attempt of a model call has a block of its own:
// an attempt cut off (its worker killed), stopped or failed is marked so, and
// the next attempt's text starts afresh below it, never run on into the same
// answer, also when the resuming run makes the cut attempt again with the
// same number (its mark says `restarted`).
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
  const latest = new Map(); // seq -> the block of its latest attempt
  let pending = [];
  let frame = null;
  let stream = null;

  // A new block for an attempt of call `seq`. The attempt before it, still
  // writing (no end came), was cut off.
  function open(seq, attempt) {
    const before = latest.get(seq);
    if (before && before.dataset.state === "writing") mark(before, "cut", "cut off: what it wrote is not part of the answer");
    const head = el("div", { class: "stream-head" }, el("span", { text: seq === null ? "model call" : `model call #${seq}` }), ` · attempt ${attempt} `);
    const note = el("span", { class: "stream-note" });
    head.append(note);
    const found = el("div", { class: "stream-attempt", "data-seq": seq ?? "", "data-attempt": attempt, "data-state": "writing" }, head, el("pre", { class: "stream-text" }));
    found.note = note;
    latest.set(seq, found);
    attempts.append(found);
    return found;
  }

  // The block of attempt `attempt` of call `seq`: its latest, or a new one
  // for an attempt whose mark this reader did not see.
  function block(seq, attempt) {
    const found = latest.get(seq);
    return found && found.dataset.attempt === String(attempt) ? found : open(seq, attempt);
  }

  function mark(target, stateName, text) {
    target.dataset.state = stateName;
    target.note.textContent = text;
  }

  // What the attempt before said of its end, for the note of the one after.
  function ending(before) {
    if (!before) return "did not finish";
    return { cut: "was cut off", stopped: "was stopped", failed: "failed" }[before.dataset.state] ?? "did not finish";
  }

  // The marks as docs/streaming.md says and ratchet.runtime.streams.attempts()
  // reads them: every attempt mark begins a block of its own, also one marked
  // `restarted` with the same number as the cut attempt before it.
  function take(entry) {
    node.hidden = false;
    const attempt = entry.attempt ?? 1;
    const marks = entry.value && typeof entry.value === "object" && !Array.isArray(entry.value) ? entry.value : {};
    if (entry.kind === "attempt") {
      const before = latest.get(entry.seq);
      const shown = open(entry.seq, attempt);
      if (marks.restarted === true) {
        shown.dataset.restarted = "true";
        const how = before ? ending(before) : "cut_at" in marks ? "was cut off" : "did not finish";
        shown.note.textContent = `begun again: attempt ${attempt} ${how}; what it wrote is not part of the answer`;
      } else if (attempt > 1 || before) {
        shown.note.textContent = `a retry: attempt ${before ? before.dataset.attempt : attempt - 1} ${ending(before)}`;
      }
    } else if (entry.kind === "text") {
      const text = typeof entry.value === "string" ? entry.value : writeJson(entry.value);
      block(entry.seq, attempt).lastElementChild.append(text); // a text node: model data is never markup
    } else if (entry.kind === "end") {
      const ended = block(entry.seq, attempt);
      if (marks.outcome === "succeeded") ended.dataset.state = "ended"; // a retry's note stays: it was not the first attempt
      else if (marks.outcome === "interrupted" && "cut_at" in marks) mark(ended, "cut", "cut off: what it wrote is not part of the answer");
      else if (marks.outcome === "interrupted") mark(ended, "stopped", "stopped: what it wrote is not part of the answer");
      else mark(ended, "failed", typeof marks.error_type === "string" && marks.error_type ? `failed: ${marks.error_type}` : "failed");
    } else if (entry.kind === "value") {
      values.hidden = false;
      values.append(
        el("li", { "data-key": entry.key ?? "", "data-offset": entry.offset }, el("code", { text: entry.key ?? "" }), ": ", el("span", { text: writeJson(entry.value) })),
      );
    }
    if ((entry.kind === "attempt" || entry.kind === "end") && Number.isInteger(marks.dropped) && marks.dropped > 0) {
      // N entries before this mark were lost to store writes that failed: the text has a gap.
      // (Only the engine's marks say it; a workflow's value is its own JSON.)
      const lost = `${marks.dropped} stream ${marks.dropped === 1 ? "entry" : "entries"} lost before this`;
      latest.get(entry.seq).firstElementChild.append(el("span", { class: "stream-lost", text: ` (${lost})` }));
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
