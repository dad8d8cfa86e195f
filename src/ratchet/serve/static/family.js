// A task's family as GET /api/tasks/{id}/tree gives it: the tasks above it
// (root first) and every task below it, to any depth, each with its status
// and what it spent; a branch folds and unfolds.

import { el } from "./dom.js";

const link = (node) => el("a", { href: `/tasks/${encodeURIComponent(node.task_id)}`, text: node.name || node.task_id });

function spent(node) {
  const parts = [];
  if (node.llm_tokens) parts.push(`${Number(node.llm_tokens).toLocaleString()} tokens`);
  if (Number(node.cost)) parts.push(`$${Number(node.cost).toFixed(4)}`);
  if (node.unpriced_calls) parts.push(`${node.unpriced_calls} unpriced`);
  return parts.length ? el("span", { class: "muted spent", text: ` · ${parts.join(", ")}` }) : null;
}

function branch(node, current, folded) {
  const own = node.task_id === current;
  const line = el(
    "div",
    { class: "node" },
    own ? el("strong", { text: node.name || node.task_id }) : link(node),
    " ",
    el("span", { class: `badge ${node.status}`, text: node.waiting_on ? `${node.status} (${node.waiting_on})` : node.status }),
    spent(node),
  );
  const item = el("li", { "data-task-id": node.task_id, "data-status": node.status }, line);
  if (node.children.length) {
    const below = el("ul", { hidden: folded.has(node.task_id) }, ...node.children.map((child) => branch(child, current, folded)));
    const toggle = el("button", {
      type: "button",
      class: "fold",
      title: "Fold or unfold this branch",
      text: below.hidden ? "▸" : "▾",
      onclick: () => {
        below.hidden = !below.hidden;
        toggle.textContent = below.hidden ? "▸" : "▾";
        if (below.hidden) folded.add(node.task_id);
        else folded.delete(node.task_id);
      },
    });
    line.prepend(toggle, " ");
    item.append(below);
  }
  if (node.more_children) item.append(el("p", { class: "muted", text: "More tasks below: the tree stops at 2,000 tasks." }));
  return item;
}

/** The #tree section's content for the task `current`; `folded` holds the branches folded (kept across redraws). */
export function familyTree(found, current, folded = new Set()) {
  const { ancestors, tree } = found;
  if (!ancestors.length && !tree.children.length) return [el("p", { class: "muted", text: "No parent and no child task." })];
  const above = ancestors.length
    ? el("p", { class: "ancestors" }, "Started by ", ...ancestors.flatMap((node, index) => [index ? " › " : "", node.name === null ? el("span", { class: "mono", text: node.task_id }) : link(node)]))
    : null;
  return [above, el("ul", { class: "tree" }, branch(tree, current, folded))];
}
