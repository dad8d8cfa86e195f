// The call timeline: calls grouped by the step they ran in (a header row per
// step, which folds its calls away), one bar per attempt from its start to its
// end, coloured by outcome, on a time scale that cuts long waits short
// (timescale.js). Only the rows in view are drawn: a task of 10,000 calls is
// a scroll box of 10,000 rows' height holding a few dozen drawn ones.

import { api } from "./api.js";
import { duration, el, svg } from "./dom.js";
import { compressedScale, spanOf } from "./timescale.js";

const ROW = 22;
const LABEL = 200;
const MIN_WIDTH = 600;
const MIN_BAR = 2;
const AXIS = 24;
const OVERSCAN = 10;
const PAGE = 2000;

function outcome(attempt) {
  if (attempt.status === "failed" && attempt.retried) return "retried";
  return attempt.status; // started, succeeded, failed
}

function label(text, max = 30) {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Every attempt of a task's calls, read a page at a time and kept up to date (by seq). */
export class TimelineFeed {
  constructor(base) {
    this.base = base;
    this.bySeq = new Map(); // seq -> its attempts
    this.lastSeq = -1;
  }

  get attempts() {
    return [...this.bySeq.values()].flat();
  }

  /** Read from the first call that may still change (or after the last) to the end. */
  async refresh() {
    let after = this.lastSeq;
    for (const [seq, attempts] of this.bySeq) {
      const last = attempts[attempts.length - 1];
      if (!last.finished_at || last.retried) after = Math.min(after, seq - 1); // running, or tried again later
    }
    for (;;) {
      const page = await api(`${this.base}/timeline?after_seq=${after}&limit=${PAGE}`);
      const fresh = new Map();
      for (const attempt of page.attempts) {
        const seq = Number(attempt.seq);
        if (!fresh.has(seq)) fresh.set(seq, []);
        fresh.get(seq).push(attempt);
      }
      for (const [seq, attempts] of fresh) {
        this.bySeq.set(seq, attempts);
        this.lastSeq = Math.max(this.lastSeq, seq);
      }
      this.total = page.total;
      if (page.next_after_seq === null) return;
      after = page.next_after_seq;
    }
  }
}

/** The timeline drawing in `target` (the #timeline section); `update` draws it again with new data. */
export class TimelineView {
  constructor(target) {
    this.target = target;
    this.folded = new Set(); // the steps whose calls are folded away
    this.axis = svg("svg", { class: "timeline-axis", height: AXIS, role: "img", "aria-label": "Time from the first call" });
    this.rows = svg("svg", { class: "timeline-rows", role: "img", "aria-label": "When each call started and ended" });
    this.space = el("div", { class: "timeline-space" }, this.rows);
    this.scroller = el("div", { class: "timeline-scroll" }, this.space);
    this.note = el("p", { class: "muted", text: "No call yet." });
    target.append(this.note, this.axis, this.scroller);
    this.lines = [];
    let queued = false;
    this.scroller.addEventListener("scroll", () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        this.drawWindow();
      });
    });
  }

  /** Group `attempts` by step into the rows to draw: a header per step, then its calls unless folded. */
  update(attempts, steps = [], now = Date.now()) {
    this.attempts = attempts;
    this.now = now;
    const empty = attempts.length === 0;
    this.note.hidden = !empty;
    this.axis.style.display = empty ? "none" : "";
    this.scroller.hidden = empty;
    if (empty) return;
    const names = new Map(steps.map((s) => [s.step, s.name]));
    const groups = new Map();
    for (const attempt of attempts) {
      const key = attempt.step ?? 0;
      if (!groups.has(key)) groups.set(key, { step: attempt.step ?? null, calls: new Map(), start: Infinity, end: -Infinity });
      const group = groups.get(key);
      if (!group.calls.has(attempt.seq)) group.calls.set(attempt.seq, []);
      group.calls.get(attempt.seq).push(attempt);
      const [start, end] = spanOf(attempt, now);
      group.start = Math.min(group.start, start);
      group.end = Math.max(group.end, end);
    }
    this.lines = [];
    for (const group of groups.values()) {
      const title = group.step === null ? "Outside any step" : `Step ${group.step}${names.has(group.step) ? `: ${names.get(group.step)}` : ""}`;
      this.lines.push({ header: true, group, title });
      if (!this.folded.has(group.step)) for (const [seq, tries] of group.calls) this.lines.push({ seq, tries });
    }
    this.width = Math.max(this.target.clientWidth - 2, MIN_WIDTH);
    this.scale = compressedScale(attempts, { width: this.width - LABEL - 12, now });
    this.space.style.height = `${this.lines.length * ROW}px`; // CSSOM: the page's CSP refuses style attributes
    this.drawAxis();
    this.drawWindow();
  }

  x(ms) {
    return LABEL + this.scale.x(ms);
  }

  drawAxis() {
    const { first, last, gaps } = this.scale;
    const parts = [
      svg("text", { x: LABEL, y: 15, text: "0 s" }),
      svg("text", { x: this.width - 4, y: 15, "text-anchor": "end", text: duration((last - first) / 1000) }),
    ];
    for (const gap of gaps) {
      const middle = LABEL + gap.x + gap.width / 2;
      parts.push(
        svg("rect", { class: "gap", x: LABEL + gap.x, y: 2, width: gap.width, height: AXIS - 4, "data-ms": Math.round(gap.end - gap.start) }, svg("title", { text: `No call worked for ${duration((gap.end - gap.start) / 1000)}: drawn shorter` })),
        svg("text", { class: "gap-label", x: middle, y: 15, "text-anchor": "middle", text: `⋯ ${duration((gap.end - gap.start) / 1000)}` }),
      );
    }
    this.axis.setAttribute("width", this.width);
    this.axis.setAttribute("viewBox", `0 0 ${this.width} ${AXIS}`);
    this.axis.replaceChildren(...parts);
  }

  /** Draw only the rows in the scroll box's view (and a few around them). */
  drawWindow() {
    if (!this.lines.length) return;
    const top = this.scroller.scrollTop;
    const seen = this.scroller.clientHeight || 480;
    const from = Math.max(Math.floor(top / ROW) - OVERSCAN, 0);
    const to = Math.min(Math.ceil((top + seen) / ROW) + OVERSCAN, this.lines.length);
    const height = (to - from) * ROW;
    this.rows.setAttribute("width", this.width);
    this.rows.setAttribute("height", height);
    this.rows.setAttribute("viewBox", `0 ${from * ROW} ${this.width} ${height}`);
    this.rows.style.top = `${from * ROW}px`;
    const parts = this.scale.gaps.map((gap) => svg("rect", { class: "gap band", x: LABEL + gap.x, y: from * ROW, width: gap.width, height }));
    for (let index = from; index < to; index += 1) parts.push(...this.drawLine(this.lines[index], index * ROW));
    this.rows.replaceChildren(...parts);
  }

  drawLine(line, y) {
    if (line.header) return this.drawHeader(line, y);
    const [first] = line.tries;
    const parts = [
      svg("text", { x: 16, y: y + 15 }, svg("title", { text: `${first.kind} ${first.name} (call ${line.seq})` }), label(`${line.seq} ${first.name}`, 28)),
      svg("line", { class: "axis", x1: LABEL, x2: this.width - 4, y1: y + ROW - 1, y2: y + ROW - 1 }),
    ];
    for (const attempt of line.tries) {
      const [start, end] = spanOf(attempt, this.now);
      const took = attempt.duration_seconds ?? (end - start) / 1000;
      const state = attempt.finished_at ? outcome(attempt) : "running";
      const title = `${attempt.name} (call ${attempt.seq}), attempt ${attempt.attempt}: ${state}, ${duration(took)}${attempt.error ? `\n${attempt.error}` : ""}`;
      const left = this.x(start);
      parts.push(
        svg(
          "rect",
          {
            class: `call ${outcome(attempt)}`,
            x: left.toFixed(1),
            y: y + 4,
            width: Math.max(this.x(end) - left, MIN_BAR).toFixed(1),
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
    return parts;
  }

  drawHeader(line, y) {
    const { group } = line;
    const folded = this.folded.has(group.step);
    const calls = group.calls.size;
    const left = this.x(group.start);
    const toggle = () => {
      if (folded) this.folded.delete(group.step);
      else this.folded.add(group.step);
      this.update(this.attempts, this.steps, this.now);
    };
    return [
      svg(
        "g",
        { class: "step-header", "data-step": group.step ?? "", "data-calls": calls, role: "button", tabindex: 0, onclick: toggle },
        svg("rect", { class: "header-band", x: 0, y, width: this.width, height: ROW }),
        svg("text", { x: 4, y: y + 15, class: "step-title" }, `${folded ? "▸" : "▾"} ${label(line.title, 22)} (${calls})`, svg("title", { text: `${line.title}: ${calls} calls, ${duration((group.end - group.start) / 1000)}` })),
        svg("rect", { class: "step-span", x: left.toFixed(1), y: y + 8, width: Math.max(this.x(group.end) - left, MIN_BAR).toFixed(1), height: ROW - 16, rx: 2 }),
      ),
    ];
  }

  /** Remember the plan's steps (their names label the groups). */
  draw(attempts, steps) {
    this.steps = steps;
    this.update(attempts, steps);
  }
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
    key("gap", "a long wait, drawn shorter"),
  );
}
