// A question a person answers before an action that cannot be undone: a modal
// <dialog> that says what will happen, takes a reason, and has the action's
// button and a way back (its button, Escape).

import { el } from "./dom.js";

/**
 * Ask before acting. Resolves to the reason typed ("" for none) when the person confirms, to null
 * when they do not.
 *
 * @param {object} options
 * @param {string} options.title what is asked: "Cancel 12 tasks?"
 * @param {string | Node} [options.text] what will happen
 * @param {string} options.action the button that acts: "Cancel 12 tasks"
 * @param {string} [options.back] the button that does not: "Keep them"
 * @param {string} [options.reasonLabel] what the reason is for
 */
export function confirmWithReason({ title, text = "", action, back = "Back", reasonLabel = "Reason (optional)" }) {
  return new Promise((resolve) => {
    const reason = el("textarea", { id: "confirm-reason", rows: 3, maxlength: 10000 });
    const confirm = el("button", { type: "submit", class: "danger", "data-action": "confirm", text: action });
    const decline = el("button", { type: "button", "data-action": "decline", text: back });
    const form = el(
      "form",
      {},
      el("h2", { text: title }),
      text ? el("p", {}, text) : null,
      el("label", { for: "confirm-reason", text: reasonLabel }),
      reason,
      el("div", { class: "buttons" }, confirm, decline),
    );
    const dialog = el("dialog", { id: "confirm", class: "confirm", "aria-label": title }, form);
    let answer = null;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      answer = reason.value.trim();
      dialog.close();
    });
    decline.addEventListener("click", () => dialog.close());
    // Closed by a button or by Escape: either way the promise is settled once, and the dialog goes.
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(answer);
    });
    document.body.append(dialog);
    dialog.showModal();
    reason.focus();
  });
}
