// A list the API gives a page at a time by seq (a task's calls, its events):
// the first page, then "Load more" (or by itself when its end scrolls into
// view), and the live additions once every earlier item is shown. It always
// says how many it shows of how many there are: never a silent cap.

import { api, ApiError } from "./api.js";
import { el, flash } from "./dom.js";

export class PagedList {
  /**
   * @param {object} options
   * @param {string} options.path the API path of the pages (`?after_seq=S&limit=N` is added)
   * @param {string} options.key the answer's key of the items ("calls", "events")
   * @param {Element} options.list where the items' nodes go, in seq order
   * @param {(item: object) => Element} options.render an item's node
   * @param {string} options.noun what the items are, for people ("calls")
   * @param {number} [options.start] the seq before the first item (-1 for calls, 0 for events)
   * @param {number} [options.limit] items a page
   * @param {(item: object) => boolean} [options.mayChange] whether a shown item may still change (a call running)
   */
  constructor({ path, key, list, render, noun, start = -1, limit = 200, mayChange = () => false }) {
    Object.assign(this, { path, key, list, render, noun, limit, mayChange });
    this.lastSeq = start;
    this.total = 0;
    this.complete = false;
    this.loading = null;
    this.nodes = new Map(); // seq -> the item's node
    this.items = new Map(); // seq -> the item
    this.count = el("span", { class: "page-count" });
    this.button = el("button", { type: "button", "data-action": "load-more", onclick: () => this.more() });
    this.footer = el("div", { class: "more", "data-list": key }, this.count, " ", this.button);
    // Scrolled to the end of what is shown: the next page comes by itself. What the observer says
    // may be stale by the time it is delivered (on a busy machine, the first page can be shown
    // between the two): the footer must be in view now, not only when it was observed.
    this.watcher = new IntersectionObserver((seen) => {
      const now = seen[seen.length - 1];
      if (now.isIntersecting && !this.complete && this.inView()) this.more().catch(() => {});
    });
    this.watcher.observe(this.footer);
  }

  /** Whether the footer is in the window now. */
  inView() {
    const box = this.footer.getBoundingClientRect();
    return box.bottom > 0 && box.top < (window.innerHeight || document.documentElement.clientHeight);
  }

  url(after, limit) {
    return `${this.path}${this.path.includes("?") ? "&" : "?"}after_seq=${after}&limit=${limit}`;
  }

  /** Read the next page and show it (one read at a time). */
  more() {
    if (!this.loading) {
      this.loading = this.read()
        .catch((error) => {
          if (!(error instanceof ApiError && error.status === 401)) flash(error.message);
        })
        .finally(() => {
          this.loading = null;
        });
    }
    return this.loading;
  }

  async read() {
    const page = await api(this.url(this.lastSeq, this.limit));
    this.take(page[this.key]);
    this.total = page.total;
    this.complete = page.next_after_seq === null;
    this.show();
  }

  /** Show the items of a page: a new one at the end, one shown already in its place. */
  take(items) {
    for (const item of items) {
      const seq = Number(item.seq ?? this.lastSeq + 1);
      const node = this.render(item);
      const old = this.nodes.get(seq);
      if (old) old.replaceWith(node);
      else if (seq > this.lastSeq) this.list.append(node);
      else continue;
      this.nodes.set(seq, node);
      this.items.set(seq, item);
      this.lastSeq = Math.max(this.lastSeq, seq);
    }
  }

  show() {
    const shown = this.nodes.size;
    this.count.textContent = `${shown.toLocaleString()} of ${Math.max(this.total, shown).toLocaleString()} ${this.noun}`;
    const left = Math.max(this.total - shown, 0);
    this.button.hidden = this.complete && left === 0;
    this.button.textContent = `Load ${Math.min(left || this.limit, this.limit).toLocaleString()} more`;
  }

  /** An item the live stream brought: shown at once if every earlier one is, else counted. */
  live(item) {
    const seq = Number(item.seq);
    if (this.nodes.has(seq)) return;
    this.total += 1;
    if (this.complete && seq > this.lastSeq) this.take([item]);
    else this.complete = false; // the next "load more" reads it
    this.show();
  }

  /**
   * Bring what is shown up to date: once every item is shown, read again from the first one that
   * may still change (a call still running) and add the new ones; before that, only the count.
   */
  async refresh() {
    if (this.loading) await this.loading;
    if (!this.complete) {
      const page = await api(this.url(this.lastSeq, 1));
      this.total = page.total;
      this.show();
      return;
    }
    let from = this.lastSeq;
    for (const [seq, item] of this.items) if (this.mayChange(item)) from = Math.min(from, seq - 1);
    let after = from;
    for (;;) {
      const page = await api(this.url(after, this.limit));
      this.take(page[this.key]);
      this.total = page.total;
      if (page.next_after_seq === null) break;
      after = page.next_after_seq;
    }
    this.complete = true;
    this.show();
  }

  stop() {
    this.watcher.disconnect();
  }
}
