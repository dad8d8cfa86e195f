// The task list's live part: the global stream (GET /api/stream) read from
// before the first page, each change applied to its row only when its task is
// on screen, and the rest counted ("12 tasks changed or new"). Changes are
// kept until the next animation frame and applied together, so a worker
// finishing thousands of tasks costs the page a map lookup per message and
// one small repaint per frame, whatever the store holds.

import { follow } from "./api.js";
import { parseJson } from "./json.js";

const MAX_COUNTED = 10000; // distinct tasks the counter tells apart; past it, "10,000+"

export class LiveChanges {
  /**
   * @param {object} options
   * @param {(taskId: string) => boolean} options.onScreen whether a task's row is shown
   * @param {(changes: object[]) => void} options.apply show these changes of tasks on screen (one frame's)
   * @param {(change: object) => boolean} options.counts whether a change off screen is counted (it may
   *   be of a task the list's filter keeps)
   * @param {(change: object) => boolean} options.follows whether a change off screen is rather one the
   *   page reads again for (a new task at the head of the list): `onFollow` is called in that frame
   * @param {() => void} options.onFollow
   * @param {(count: number, more: boolean) => void} options.onCount how many tasks changed off screen
   * @param {(state: string) => void} options.onState "live", "reconnecting", "stopped"
   */
  constructor(options) {
    Object.assign(this, options);
    this.updates = new Map(); // task_id -> its latest change, for tasks on screen
    this.changed = new Set(); // tasks off screen that changed since the page was read
    this.more = false; // more changed than `changed` holds
    this.follow = false;
    this.frame = null;
    this.held = null; // while a page is read: the changes that came meanwhile
    this.stream = null;
  }

  /** Open the stream; resolves once it says where it starts, so a page read after it misses nothing. */
  start() {
    return new Promise((started) => {
      this.stream = follow(
        "/api/stream",
        (message) => {
          if (message.type === "start") started();
          else if (message.type === "message") this.take(parseJson(message.data));
          return false;
        },
        { onState: this.onState },
      );
    });
  }

  /** A page is being read: changes are held until it is shown, then sorted as of that page. */
  hold() {
    this.held = this.held || [];
  }

  /** The page read is shown: the counter starts again from zero, then the held changes are taken. */
  release() {
    const held = this.held || [];
    this.held = null;
    this.changed.clear();
    this.more = false;
    this.follow = false;
    this.updates.clear();
    for (const change of held) this.take(change);
    this.schedule();
  }

  take(change) {
    if (this.held) {
      this.held.push(change);
      return;
    }
    if (this.onScreen(change.task_id)) this.updates.set(change.task_id, change);
    else if (this.follows(change)) this.follow = true;
    else if (this.counts(change)) {
      if (this.changed.size < MAX_COUNTED) this.changed.add(change.task_id);
      else if (!this.changed.has(change.task_id)) this.more = true;
    } else return;
    this.schedule();
  }

  schedule() {
    if (this.frame === null) this.frame = requestAnimationFrame(() => this.flush());
  }

  flush() {
    this.frame = null;
    if (this.updates.size) {
      const changes = [...this.updates.values()];
      this.updates.clear();
      this.apply(changes);
    }
    this.onCount(this.changed.size, this.more);
    if (this.follow) {
      this.follow = false;
      this.onFollow();
    }
  }

  stop() {
    if (this.stream) this.stream.stop();
    if (this.frame !== null) cancelAnimationFrame(this.frame);
  }
}
