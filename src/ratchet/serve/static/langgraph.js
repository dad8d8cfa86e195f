// A LangGraph thread's task (docs/integrations.md, "Threads as tasks"): its
// thread and graph, the writes pending on its latest checkpoint, and its
// interrupts with their answers. Its checkpoints are the plan's steps.

import { el } from "./dom.js";

/** The nodes of the thread section, from the `langgraph` part of GET /api/tasks/{id}. */
export function threadItems(thread) {
  const pending = thread.pending_writes.map((write) =>
    el("li", { "data-channel": write.channel }, el("code", { text: write.channel }), ` by ${write.node}`),
  );
  const interrupts = thread.interrupts.map((asked) =>
    el(
      "li",
      { "data-interrupt": asked.interrupt_id, "data-answered": String(asked.answered) },
      el("span", { text: asked.question }),
      " ",
      el("span", {
        class: "muted",
        text: asked.answered ? `answered${asked.answered_by ? ` by ${asked.answered_by}` : ""}: ${JSON.stringify(asked.answer)}` : "not answered yet",
      }),
    ),
  );
  return [
    el("h2", { text: "LangGraph thread" }),
    el(
      "p",
      {},
      el("code", { text: thread.thread_id }),
      thread.graph ? ` · graph ${thread.graph}` : " · no graph named: Ratchet cannot resume it",
    ),
    el("h3", { text: "Pending writes" }),
    pending.length ? el("ul", { id: "langgraph-writes" }, ...pending) : el("p", { class: "muted", text: "none" }),
    el("h3", { text: "Interrupts" }),
    interrupts.length ? el("ul", { id: "langgraph-interrupts" }, ...interrupts) : el("p", { class: "muted", text: "none" }),
  ];
}
