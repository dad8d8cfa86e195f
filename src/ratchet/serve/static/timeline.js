// The call timeline: one row per journaled call, one bar per attempt from its
// start to its end, coloured by outcome (a retried attempt has its own colour),
// with a hover title naming the call, the attempt and how long it took.

import { duration, el, svg } from "./dom.js";

const ROW = 22;
const LABEL = 190;
const MIN_WIDTH = 600;
const TOP = 20;
const MIN_BAR = 2;

function outcome(attempt) {
  if (attempt.status === "failed" && attempt.retried) return "retried";
  return attempt.status; // started, succeeded, failed
}

/** An ISO time in milliseconds, keeping the microseconds Date.parse drops (calls can be that short). */
function instant(iso) {
  const fraction = /\.\d{3}(\d+)/.exec(iso);
  return Date.parse(iso) + (fraction ? Number(`0.${fraction[1]}`) : 0);
}

function label(text, max = 28) {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Draw GET /api/tasks/{id}/timeline into `target` (the #timeline section). */
export function drawTimeline(target, attempts, now = new Date()) {
  const old = target.querySelector("svg, p.muted");
  if (!attempts.length) {
    const note = el("p", { class: "muted", text: "No call yet." });
    if (old) old.replaceWith(note);
    else target.append(note);
    return;
  }
  const time = (iso) => (iso ? instant(iso) : null);
  const rows = [];
  const bySeq = new Map();
  let first = Infinity;
  let last = -Infinity;
  for (const attempt of attempts) {
    const end = time(attempt.finished_at) ?? now.getTime(); // still running: it runs until now
    const start = time(attempt.started_at) ?? end; // an old retry that did not record its start
    first = Math.min(first, start);
    last = Math.max(last, end);
    if (!bySeq.has(attempt.seq)) {
      bySeq.set(attempt.seq, rows.length);
      rows.push(attempt);
    }
  }
  const WIDTH = Math.max(target.clientWidth, MIN_WIDTH); // drawn at the page's width: text keeps its size
  const span = Math.max(last - first, 1);
  const scale = (WIDTH - LABEL - 10) / span;
  const height = TOP + rows.length * ROW + 6;
  const picture = svg("svg", {
    viewBox: `0 0 ${WIDTH} ${height}`,
    width: WIDTH,
    height,
    role: "img",
    "aria-label": "When each call started and ended",
    preserveAspectRatio: "xMinYMin meet",
  });
  picture.append(
    svg("text", { x: LABEL, y: 13, text: "0 s" }),
    svg("text", { x: WIDTH - 10, y: 13, "text-anchor": "end", text: duration(span / 1000) }),
    svg("line", { class: "axis", x1: LABEL, x2: LABEL, y1: TOP - 4, y2: height }),
  );
  rows.forEach((row, index) => {
    const y = TOP + index * ROW;
    picture.append(
      svg("text", { x: 4, y: y + 14 }, svg("title", { text: `${row.kind} ${row.name} (call ${row.seq})` }), label(`${row.seq} ${row.name}`)),
      svg("line", { class: "axis", x1: LABEL, x2: WIDTH - 10, y1: y + ROW - 1, y2: y + ROW - 1 }),
    );
  });
  for (const attempt of attempts) {
    const end = time(attempt.finished_at) ?? now.getTime();
    const start = time(attempt.started_at) ?? end;
    const y = TOP + bySeq.get(attempt.seq) * ROW;
    const took = attempt.duration_seconds ?? (end - start) / 1000;
    const state = attempt.finished_at ? outcome(attempt) : "running";
    const title = `${attempt.name} (call ${attempt.seq}), attempt ${attempt.attempt}: ${state}, ${duration(took)}${attempt.error ? `\n${attempt.error}` : ""}`;
    picture.append(
      svg(
        "rect",
        {
          class: `call ${outcome(attempt)}`,
          x: (LABEL + (start - first) * scale).toFixed(1),
          y: y + 4,
          width: Math.max((end - start) * scale, MIN_BAR).toFixed(1),
          height: ROW - 8,
          rx: 2,
          "data-seq": attempt.seq,
          "data-attempt": attempt.attempt,
          "data-status": attempt.status,
        },
        svg("title", { text: title }),
      ),
    );
  }
  if (old) old.replaceWith(picture);
  else target.append(picture);
}

/** The colour key under the picture. */
export function legend() {
  const key = (cls, text) => el("span", {}, el("i", { class: cls }), text);
  return el(
    "p",
    { class: "legend" },
    key("succeeded", "succeeded"),
    key("retried", "failed, tried again"),
    key("failed", "failed"),
    key("started", "running or in doubt"),
  );
}
