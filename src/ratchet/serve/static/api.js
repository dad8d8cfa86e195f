// Talking to the API: the tab's bearer token, JSON requests, and the live
// streams read with fetch() (an EventSource cannot send Authorization).
// Answers are read by json.js, so no number in them is rounded.

import { parseJson, writeJson } from "./json.js";

const TOKEN_KEY = "ratchet-token";
const MAX_BACKOFF_MS = 10000;

let onUnauthorized = () => {};

/** What to do when the API answers 401: the page shows the login form. */
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

export function keepToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

function headers(extra) {
  const all = { Accept: "application/json", ...extra };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) all.Authorization = `Bearer ${token}`;
  return all;
}

/** A failed request: its HTTP status and the API's one-line `detail`. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function detailOf(response) {
  try {
    const body = await response.json();
    if (typeof body.detail === "string") return body.detail;
    if (Array.isArray(body.detail) && body.detail.length) {
      const first = body.detail[0];
      return `${(first.loc || []).join(".")}: ${first.msg}`;
    }
  } catch (_) {
    // not JSON: the status says enough
  }
  return `${response.status} ${response.statusText}`.trim();
}

/** GET (or, with `body`, POST) a path of the API and return its JSON, every number exact; throws ApiError. */
export async function api(path, { method, body } = {}) {
  const init = { method: method || (body === undefined ? "GET" : "POST"), cache: "no-store" };
  init.headers = headers(body === undefined ? {} : { "Content-Type": "application/json" });
  if (body !== undefined) init.body = writeJson(body);
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(0, `the server does not answer (${error.message})`);
  }
  if (response.status === 401) {
    onUnauthorized();
    throw new ApiError(401, await detailOf(response));
  }
  if (!response.ok) throw new ApiError(response.status, await detailOf(response));
  return parseJson(await response.text());
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Split a text stream into SSE messages ({type, data, id}); `dispatch` gets each one. Exported for its tests. */
export class SseParser {
  constructor(dispatch) {
    this.dispatch = dispatch;
    this.buffer = "";
    this.lastEventId = undefined;
    this.reset();
  }

  reset() {
    this.type = "";
    this.data = [];
    this.id = undefined;
  }

  push(text) {
    this.buffer += text;
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (!match) return;
      // A lone "\r" at the end may be the first half of "\r\n": wait for the next chunk.
      if (match[0] === "\r" && match.index === this.buffer.length - 1) return;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      this.line(line);
    }
  }

  line(line) {
    if (line === "") {
      // As the spec says: an id with no data moves the last event id on and dispatches nothing.
      if (this.id !== undefined) this.lastEventId = this.id;
      if (this.data.length) this.dispatch({ type: this.type || "message", data: this.data.join("\n"), id: this.id });
      this.reset();
      return;
    }
    if (line.startsWith(":")) return; // a comment: the server's heartbeat
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.type = value;
    else if (field === "id" && !value.includes("\0")) this.id = value;
  }
}

/**
 * Follow an SSE stream of the API until `stop()` is called or `onMessage` returns true.
 *
 * Each connection sends the token and, after the first, `Last-Event-ID` (the
 * last id seen), so a reconnection misses no message and repeats none. A
 * dropped stream is opened again after a wait that doubles up to 10 s.
 * `onState` is told "live", "reconnecting" or "stopped".
 */
export function follow(path, onMessage, { onState = () => {}, lastId = null } = {}) {
  let stopped = false;
  let controller = null;

  async function connect() {
    let wait = 500;
    while (!stopped) {
      controller = new AbortController();
      let ended = false;
      try {
        const extra = { Accept: "text/event-stream" };
        if (lastId !== null) extra["Last-Event-ID"] = lastId;
        const response = await fetch(path, { headers: headers(extra), signal: controller.signal, cache: "no-store" });
        if (response.status === 401) {
          stopped = true;
          onState("stopped");
          onUnauthorized();
          return;
        }
        if (!response.ok) throw new ApiError(response.status, await detailOf(response));
        onState("live");
        wait = 500;
        const parser = new SseParser((message) => {
          if (ended || stopped) return;
          lastId = message.id ?? lastId;
          if (onMessage(message) === true) ended = true;
        });
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        while (!ended && !stopped) {
          const { value, done } = await reader.read();
          if (done) break;
          parser.push(value);
          lastId = parser.lastEventId ?? lastId;
        }
        reader.cancel().catch(() => {});
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) ended = true;
      }
      if (ended || stopped) break;
      onState("reconnecting");
      await sleep(wait);
      wait = Math.min(wait * 2, MAX_BACKOFF_MS);
    }
    onState("stopped");
  }

  connect();
  return {
    stop() {
      stopped = true;
      if (controller) controller.abort();
    },
  };
}
