// A model call read as a chat: the messages it sent (system, user, the
// assistant's earlier tool calls, the tools' results), then the answer (text,
// a JSON object, or tool calls), with its tokens and cost. Everything is put
// in as text; JSON is written by json.js, every number as the server sent it.

import { el } from "./dom.js";
import { parseJson, writeJson } from "./json.js";

function text(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  return writeJson(value, 2);
}

/** A message's content: a string, or parts ({type: "text", text}, images ...) each as text or JSON. */
function content(value) {
  if (Array.isArray(value)) {
    return value.map((part) => (part && part.type === "text" && typeof part.text === "string" ? part.text : text(part))).join("\n");
  }
  return text(value);
}

/** A tool call as OpenAI ({function: {name, arguments: "JSON text"}}) or Ratchet ({name, arguments}) writes it. */
function toolCall(call) {
  const name = call.function?.name ?? call.name ?? "?";
  let args = call.function?.arguments ?? call.arguments;
  if (typeof args === "string") {
    try {
      args = writeJson(parseJson(args), 2); // the model's JSON text, indented, every number as it wrote it
    } catch (_) {
      // not JSON: shown as the model wrote it
    }
  } else args = text(args);
  return el(
    "div",
    { class: "tool-call" },
    el("span", { class: "label", text: "calls " }),
    el("code", { text: name }),
    call.id ? el("span", { class: "muted", text: ` (${call.id})` }) : null,
    el("pre", { text: args }),
  );
}

function bubble(role, body, extra) {
  const said = `${role.charAt(0).toUpperCase()}${role.slice(1)}`;
  return el("li", { class: `message ${role}`, "data-role": role }, el("div", { class: "role", text: extra ? `${said} · ${extra}` : said }), ...body);
}

function message(entry) {
  const role = String(entry.role ?? "message");
  const body = [];
  const said = content(entry.content);
  if (said) body.push(el("pre", { class: "said", text: said }));
  for (const call of entry.tool_calls || []) body.push(toolCall(call));
  const extra = role === "tool" ? `result of ${entry.name ?? ""} ${entry.tool_call_id ? `(${entry.tool_call_id})` : ""}`.trim() : null;
  return bubble(role, body, extra);
}

function figure(name, value) {
  return value === null || value === undefined || value === "" ? null : el("span", { class: "figure" }, el("span", { class: "muted", text: `${name} ` }), String(value));
}

/** The chat of a model call (its whole `input` and `output`, and `meta` for usage and cost). */
export function chatView(call) {
  const request = call.input && typeof call.input === "object" ? call.input : {};
  const answer = call.output && typeof call.output === "object" ? call.output : {};
  const usage = { ...(answer.usage || {}), ...(call.meta?.usage || {}) };
  const messages = Array.isArray(request.messages) ? request.messages : [];
  const reply = [];
  const said = content(answer.content);
  if (said) reply.push(el("pre", { class: "said", text: said }));
  for (const item of answer.tool_calls || []) reply.push(toolCall(item));
  if (call.error) reply.push(el("pre", { class: "error", text: `${call.error_type || "error"}: ${call.error}` }));
  const offered = (request.tools || []).map((tool) => tool.function?.name ?? tool.name).filter(Boolean);
  const tokens = [usage.prompt_tokens, usage.completion_tokens].every((n) => n === undefined)
    ? null
    : `${usage.prompt_tokens ?? 0} in, ${usage.completion_tokens ?? 0} out`;
  return el(
    "div",
    { class: "chat", "data-seq": call.seq },
    el(
      "p",
      { class: "chat-figures" },
      figure("purpose", request.purpose),
      figure("model", request.model ?? answer.model ?? call.task_model),
      figure("tokens", tokens),
      figure("cost", usage.cost === undefined || usage.cost === null ? (tokens ? "unpriced" : null) : `$${Number(usage.cost).toFixed(6)}`),
      offered.length ? figure("tools offered", offered.join(", ")) : null,
    ),
    el("ol", { class: "messages" }, ...messages.map(message), reply.length ? bubble("answer", reply, answer.model || null) : null),
  );
}
