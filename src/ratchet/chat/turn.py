"""One chat turn: the prompt, and the ``chat_turn`` workflow that answers one user message.

A turn is a durable task. It reads the session (a journaled read-only call,
so a resumed turn rebuilds the very same prompt), asks the model with the
task-list tools and the user's own (``tools``, with their ``instructions``),
runs the tools it calls, and asks again until the model answers without tool
calls (at most ``max_model_calls`` times). An answer asking for more than 64
tool calls at once runs none of them: the model is told, and asked again. The
exchange is then kept in the session's history, which the next turns'
prompts carry, shortened by the compaction middleware when they pass its
budget (`ratchet.engine.calls.compaction`). The run is bound to the session, so
the user's tools reach it as ``ctx.session``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import JsonValue

from ..agent.spec import load_tools
from ..engine.calls.compaction import DEFAULT_COMPACTION, load_compaction
from ..engine.context import Context
from ..engine.workflow import Workflow
from ..errors import InputError, OperationFailed, TaskStopped
from ..limits import MAX_TOOL_CALLS_PER_ANSWER
from ..providers import ModelResponse
from ..records import Severity
from ..store import StateStore
from ..tools import Tool
from . import tasklist
from .tools import CHAT_TOOL_NAMES, MODEL_TOOL_NAMES, session_tools

__all__ = [
    "CHAT_TURN_WORKFLOW",
    "DEFAULT_MAX_MODEL_CALLS",
    "HISTORY_TOKEN_BUDGET",
    "KEEP_RECENT_MESSAGES",
    "chat_turn",
    "prompt",
    "user_tools",
]

DEFAULT_MAX_MODEL_CALLS = 8
HISTORY_TOKEN_BUDGET = 6000  # the built-in compaction's settings for a chat turn's requests
KEEP_RECENT_MESSAGES = 6
CHAT_TURN_WORKFLOW = "ratchet.chat.turn:chat_turn"

TOO_MANY_TOOL_CALLS = """Your answer asked for {asked} tool calls at once; at most {limit} may be asked
in one answer, so none of them ran. Ask for at most {limit} at once."""

SYSTEM = """You are a task manager assistant. You keep the user's list of tasks; each task has a
description and a completion rate in percent.
The user can add a task, update how far a task is done, remove a task, and list the tasks.
Make every change with your tools (add_task, update_task, remove_task, list_tasks); tasks are
numbered from 1 as in the list below. When you are done, answer the user briefly.

Current tasks:
{tasks}"""

USER_TOOLS = """You also have these tools of the user's: {names}."""

INSTRUCTIONS = """The user's instructions:
{instructions}"""


def prompt(
    tasks: list[dict[str, Any]],
    history: list[dict[str, Any]],
    message: str,
    *,
    instructions: str = "",
    user_tools: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The messages of a turn's first model request: the list, the kept exchanges, the message.

    Every exchange the session keeps is sent; when they pass the turn's
    token budget, the compaction summarizes the older ones in the request.
    """
    system = SYSTEM.format(tasks=tasklist.describe(tasks))
    if user_tools:
        system += "\n\n" + USER_TOOLS.format(names=", ".join(user_tools))
    if instructions.strip():
        system += "\n\n" + INSTRUCTIONS.format(instructions=instructions.strip())
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for exchange in history:
        messages.append({"role": "user", "content": exchange["user"]})
        messages.append({"role": "assistant", "content": exchange["assistant"]})
    messages.append({"role": "user", "content": message})
    return messages


def _assistant(answer: ModelResponse) -> dict[str, Any]:
    said: dict[str, Any] = {"role": "assistant", "content": _text(answer.content)}
    if answer.tool_calls:
        said["tool_calls"] = [call.model_dump(mode="json") for call in answer.tool_calls]
    return said


async def _refuse_tool_calls(ctx: Context, answer: ModelResponse) -> list[dict[str, Any]]:
    asked, limit = len(answer.tool_calls), MAX_TOOL_CALLS_PER_ANSWER
    await ctx.emit(
        f"the model asked for {asked} tool calls in one answer, more than the limit of {limit}; none ran",
        kind="tool_calls_refused",
        severity=Severity.WARNING,
        data={"asked": asked, "limit": limit},
    )
    return [  # the calls are left out: each would need a reply
        {
            "role": "assistant",
            "content": _text(answer.content) or f"(an answer asking for {asked} tool calls)",
        },
        {"role": "user", "content": TOO_MANY_TOOL_CALLS.format(asked=asked, limit=limit)},
    ]


def _text(content: Any) -> str:
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def user_tools(sources: list[str]) -> list[Tool]:
    """The user's tools (``--tools``) of a chat, loaded from their modules or files.

    Raises:
        CodeRefused: the code trust the run enforces does not admit a source.
        InputError: a source does not load, or a tool takes the name of one of the chat's own.
    """
    found = load_tools(sources)
    taken = sorted(set(CHAT_TOOL_NAMES).intersection(t.name for t in found))
    if taken:
        raise InputError(f"tool name {taken[0]!r} is one of the chat's own tools; give the tool another name")
    return found


def _tools_for(task: Any, store: StateStore) -> list[Tool]:
    found = user_tools(list(task.inputs_params.get("tools") or []))
    names = task.inputs_params.get("tool_names")
    if names is not None:
        found = [t for t in found if t.name in names]
    return [*session_tools(store, str(task.inputs_params["session"])), *found]


def _middleware_for(task: Any) -> list[Any]:
    recorded = task.inputs_params.get("compaction", DEFAULT_COMPACTION)
    return load_compaction(recorded, token_budget=HISTORY_TOKEN_BUDGET, keep_recent=KEEP_RECENT_MESSAGES)


def _chat_workflow(fn: Callable[..., Awaitable[Any]]) -> Any:
    # A Workflow built by hand (the decorator has no tools_for); the task records it
    # as module:qualname, so the module-level name must be the Workflow itself.
    return Workflow(
        fn,
        name="chat turn",
        tools_for=_tools_for,
        middleware_for=_middleware_for,
        code_inputs=("tools", "tool_names", "compaction", "session"),
    )


@_chat_workflow
async def chat_turn(
    ctx: Context,
    session: str,
    message: str,
    max_model_calls: int = DEFAULT_MAX_MODEL_CALLS,
    tools: list[str] | None = None,
    tool_names: list[str] | None = None,
    instructions: str = "",
    compaction: JsonValue = DEFAULT_COMPACTION,
) -> dict[str, Any]:
    """Answer one user message of the chat on `session` (see the module's docstring).

    `tools` (modules or files of the user's tools, `tool_names` of them
    only when given), `instructions` and `compaction` (see
    `ratchet.engine.calls.compaction`) are the chat's options (`ChatOptions`);
    the tools are loaded for the task by the workflow, not here.
    """
    ctx.use_session(session)  # the user's tools reach it as ctx.session
    loaded = await ctx.call_tool("load_session")
    assert isinstance(loaded, dict)
    own = [name for name in ctx.tools if name not in CHAT_TOOL_NAMES]
    messages = prompt(
        list(loaded["tasks"]),  # type: ignore[arg-type]
        list(loaded["history"]),  # type: ignore[arg-type]
        message,
        instructions=instructions,
        user_tools=own,
    )
    offered = [*MODEL_TOOL_NAMES, *own]
    schemas = [ctx.tools[name].schema() for name in offered]
    actions: list[dict[str, Any]] = []
    for _ in range(max_model_calls):
        answer = await ctx.call_model({"purpose": "act", "messages": messages, "tools": schemas})
        if len(answer.tool_calls) > MAX_TOOL_CALLS_PER_ANSWER:  # none runs; the model is told
            messages += await _refuse_tool_calls(ctx, answer)
            continue
        messages.append(_assistant(answer))
        if not answer.tool_calls:
            text = _text(answer.content)
            await ctx.call_tool("record_exchange", {"user": message, "assistant": text})
            return {"session": session, "answer": text, "actions": actions}
        known = [call for call in answer.tool_calls if call.name in offered]
        outcomes = iter(await ctx.call_tools([(call.name, call.arguments) for call in known]))
        for call in answer.tool_calls:
            if call.name not in offered:
                reply = f"error: there is no tool {call.name!r}; the tools are {', '.join(offered)}"
            else:
                outcome = next(outcomes)
                reply = f"error: {outcome.error}" if isinstance(outcome, OperationFailed) else _text(outcome)
            actions.append({"tool": call.name, "arguments": call.arguments, "result": reply})
            messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": reply})
    raise TaskStopped(
        f"the assistant made {max_model_calls} model calls without answering; ask again more simply"
    )
