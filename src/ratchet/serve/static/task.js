// The task page (filled in below).
import { el, put } from "./dom.js";

export async function showTask(root, taskId) {
  put(root, el("h1", { text: taskId }));
}
