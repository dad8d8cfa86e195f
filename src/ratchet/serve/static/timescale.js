// The timeline's time scale: linear while calls run, with each long stretch in
// which no call worked (a sleep, a wait for a person, a message or a child, a
// backoff) drawn as a narrow break of fixed width. A task that waited four
// minutes between two bursts of calls then shows both bursts across the page,
// not squeezed into a pixel at either end.

/** Calls that wait rather than work: their time may be cut short on the scale. */
export const WAIT_KINDS = new Set(["sleep", "receive", "question", "child"]);

/** An ISO time in milliseconds, keeping the microseconds Date.parse drops (calls can be that short). */
export function instant(iso) {
  const fraction = /\.\d{3}(\d+)/.exec(iso);
  return Date.parse(iso) + (fraction ? Number(`0.${fraction[1]}`) : 0);
}

/** Each attempt's start and end in milliseconds (a running one ends `now`; one without a start, at its end). */
export function spanOf(attempt, now) {
  const end = attempt.finished_at ? instant(attempt.finished_at) : now;
  const start = attempt.started_at ? instant(attempt.started_at) : end;
  return [start, Math.max(start, end)];
}

/** The stretches in which some working call ran, merged, in time order. */
function busyStretches(attempts, now) {
  const working = attempts.filter((a) => !WAIT_KINDS.has(a.kind));
  const spans = (working.length ? working : attempts).map((a) => spanOf(a, now)).sort((a, b) => a[0] - b[0]);
  const merged = [];
  for (const [start, end] of spans) {
    const last = merged[merged.length - 1];
    if (last && start <= last[1]) last[1] = Math.max(last[1], end);
    else merged.push([start, end]);
  }
  return merged;
}

/**
 * The scale of `attempts` over `width` pixels.
 *
 * An idle stretch is a break when it lasts at least `minGapMs` and at least `share` of the time calls
 * worked; each break takes `gapWidth` pixels (less when there are many: together at most half the
 * width), the rest of the time shares the rest of the width.
 * Returns {x(ms) -> px, first, last, gaps: [{start, end, x, width}]}.
 */
export function compressedScale(attempts, { width, gapWidth = 40, minGapMs = 1000, share = 0.05, now = Date.now() }) {
  let first = Infinity;
  let last = -Infinity;
  for (const attempt of attempts) {
    const [start, end] = spanOf(attempt, now);
    first = Math.min(first, start);
    last = Math.max(last, end);
  }
  if (!Number.isFinite(first)) [first, last] = [now, now];
  const whole = Math.max(last - first, 1);
  const busy = busyStretches(attempts, now);
  const working = busy.reduce((sum, [start, end]) => sum + (end - start), 0);
  const gapsFound = [];
  let cursor = first;
  for (const [start, end] of [...busy, [last, last]]) {
    if (start - cursor >= Math.max(minGapMs, share * working)) gapsFound.push([cursor, start]);
    cursor = Math.max(cursor, end);
  }
  const cut = gapsFound.reduce((sum, [start, end]) => sum + (end - start), 0);
  // Many breaks share at most half the width between them.
  const each = Math.min(gapWidth, (width * 0.5) / Math.max(gapsFound.length, 1));
  const room = width - gapsFound.length * each;
  const perMs = room / Math.max(whole - cut, 1);
  // Breakpoints: times and their pixels, from which x() interpolates.
  const times = [first];
  const pixels = [0];
  const gaps = [];
  for (const [start, end] of gapsFound) {
    const x = pixels[pixels.length - 1] + (start - times[times.length - 1]) * perMs;
    times.push(start, end);
    pixels.push(x, x + each);
    gaps.push({ start, end, x, width: each });
  }
  times.push(Math.max(last, times[times.length - 1]));
  pixels.push(pixels[pixels.length - 1] + (times[times.length - 1] - times[times.length - 2]) * perMs);
  function x(ms) {
    if (ms <= times[0]) return 0;
    let low = 0;
    let high = times.length - 1;
    if (ms >= times[high]) return pixels[high];
    while (high - low > 1) {
      const middle = (low + high) >> 1;
      if (times[middle] <= ms) low = middle;
      else high = middle;
    }
    const span = times[high] - times[low];
    return pixels[low] + (span ? ((ms - times[low]) / span) * (pixels[high] - pixels[low]) : 0);
  }
  return { x, first, last, gaps, width: pixels[pixels.length - 1] };
}
