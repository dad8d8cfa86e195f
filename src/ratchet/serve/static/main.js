// The dashboard's entry: asks for a token when the API wants one, then shows
// the page the path names. Each page is a function (page, signal) that fills
// `main#page` and returns a cleanup that stops its live streams.

import { api, ApiError, forgetToken, keepToken, whenUnauthorized } from "./api.js";
import { el, flash, put, refreshTimes } from "./dom.js";
import { showSessions, showWorkers } from "./admin.js";
import { showCompare } from "./compare.js";
import { showSchedules } from "./schedules.js";
import { showTask } from "./task.js";
import { showTasks } from "./tasks.js";

const page = document.getElementById("page");
const login = document.getElementById("login");
const loginError = document.getElementById("login-error");
let cleanup = null;
let shown = 0; // which start() is the current one: a page left while loading is stopped when it loads

function route(path) {
  const task = /^\/tasks\/([^/]+)$/.exec(path);
  if (task) return ["tasks", (root) => showTask(root, decodeURIComponent(task[1]))];
  if (path === "/compare") return ["tasks", showCompare];
  if (path === "/sessions") return ["sessions", showSessions];
  if (path === "/schedules") return ["schedules", showSchedules];
  if (path === "/workers") return ["workers", showWorkers];
  if (path === "/") return ["tasks", showTasks];
  return [null, (root) => put(root, el("p", { text: `The dashboard has no page at ${path}.` }))];
}

function stopPage() {
  if (cleanup) cleanup();
  cleanup = null;
  const asking = document.querySelector("dialog#confirm"); // a question of the page left: answered "no"
  if (asking) asking.close();
}

function askForToken(message) {
  stopPage();
  page.hidden = true;
  login.hidden = false;
  loginError.textContent = message || "";
  loginError.hidden = !message;
  document.getElementById("token").focus();
}

async function start() {
  stopPage();
  flash("");
  const [nav, show] = route(location.pathname);
  for (const link of document.querySelectorAll("nav a")) {
    link.classList.toggle("current", link.dataset.nav === nav);
  }
  login.hidden = true;
  page.hidden = false;
  document.getElementById("live").textContent = ""; // a page with live streams says how they are
  put(page, el("p", { class: "muted", text: "Loading…" }));
  const current = ++shown;
  try {
    const stop = (await show(page)) || null;
    if (current === shown) cleanup = stop;
    else if (stop) stop();
  } catch (error) {
    if (current !== shown || (error instanceof ApiError && error.status === 401)) return; // left, or the login form is up
    put(page, el("p", { class: "error", text: error.message }));
  }
}

// Several requests may meet the 401 at once: the first one with a token says why.
whenUnauthorized(() => {
  const hadToken = sessionStorage.getItem("ratchet-token") !== null;
  forgetToken();
  if (hadToken) askForToken("That token is not accepted by this server.");
  else if (login.hidden) askForToken("");
});

login.addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = document.getElementById("token");
  const token = input.value.trim();
  if (!token) return;
  keepToken(token);
  try {
    await api("/api/tasks?limit=1");
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      askForToken("That token is not accepted by this server.");
    } else {
      askForToken(error.message);
    }
    return;
  }
  input.value = "";
  start();
});

// Links inside the dashboard change the page without reloading it.
document.addEventListener("click", (event) => {
  const link = event.target.closest("a[href^='/']");
  if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  if (link.getAttribute("href").startsWith("/api/") || link.getAttribute("href").startsWith("/static/")) return;
  event.preventDefault();
  history.pushState(null, "", link.getAttribute("href"));
  start();
});
window.addEventListener("popstate", start);

// Relative times ("3 minutes ago") move on while the page stays open.
setInterval(() => refreshTimes(), 15000);

start();
