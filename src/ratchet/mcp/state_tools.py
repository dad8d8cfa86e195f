"""The write tools of `ratchet mcp`: create_task, patch_state, append_note, approve, deny, answer,
cancel, handoff and grant (docs/mcp.md, "Tools" and "Who may write").

Each tool is a thin layer over a `Runtime` method, so it writes what the CLI
and the Python API write, with the same checks and events. A connection acts
as the agent `caller` names: it may create tasks (they are its own), and write
a task only if it owns it or was granted it (trust/scope.py says why not, in one
line). Every refusal or bad input is an MCP tool error (``isError``) of one
line; nothing is written then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field, WithJsonSchema

from ..errors import RatchetError
from ..limits import MAX_COUNT, PRIORITY_DEFAULT, PRIORITY_MAX, PRIORITY_MIN
from ..records import RiskLevel, StatePatch, Task
from ..runtime import Runtime
from ..runtime.agent_request import DEFAULT_AGENT, AgentRequest, submit_agent_task
from ..trust.scope import anonymous_refusal, check_may_write
from ..views.task import load_next, what_next
from ..views.uris import task_uri

__all__ = ["register_write_tools"]

Caller = Callable[[Context[Any, Any]], "str | None"]
_T = TypeVar("_T")


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its ``$ref``s to ``$defs`` replaced by what they name (StatePatch has no cycles),
    so it can sit inside a tool's input schema."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    inlined: dict[str, Any] = walk(schema)
    return inlined


# The patch is taken as any JSON object and checked by `Runtime.patch_state` (a one-line error),
# but clients see StatePatch's exact schema.
_PATCH_SCHEMA = {
    **_inline_refs(StatePatch.model_json_schema()),
    "description": "A StatePatch: {'ops': [...]}, each op one of append_facts, replace_plan, "
    "add_open_questions, resolve_question, add_artifact, set_risk_flag; applied all or none.",
}


def _text(description: str) -> WithJsonSchema:
    """A non-empty string in the schema; checked by the tool itself, so a bad one is a one-line error."""
    return WithJsonSchema({"type": "string", "minLength": 1, "description": description})


TaskId = Annotated[str, _text("The task's id (as `ratchet tasks` lists it).")]


def _outcome(task: Task) -> dict[str, Any]:
    return {
        "task_id": task.id,
        "agent": task.agent,
        "status": task.status_text,
        "uri": task_uri(task.agent, task.id),
    }


async def _decided(runtime: Runtime, task: Task) -> dict[str, Any]:
    """`_outcome` of a person's decision, with ``next``: what the task does now (`what_next`)."""
    async with runtime.store.reading() as tx:
        decided, wakes_at = await load_next(tx, task)
    return {**_outcome(task), "next": " ".join(what_next(task, decided, wakes_at)) or None}


async def _one_line(work: Awaitable[_T]) -> _T:
    """Await `work`; a Ratchet error becomes a tool error of one line (the client reads it)."""
    try:
        return await work
    except RatchetError as error:
        lines = str(error).strip().splitlines() or [type(error).__name__]
        raise ToolError(lines[0]) from None


def register_write_tools(
    server: MCPServer, runtime: Runtime, caller: Caller, *, default_model: str | None = None
) -> None:
    """Register the write tools on `server`, writing through `runtime` (open) as `caller` says.

    Args:
        server: the MCP server to add the tools to.
        runtime: the Runtime over the store the server serves.
        caller: the agent id the connection making a request acts as, or
            None when it acts as no agent (then it may create tasks only).
        default_model: the model of a task ``create_task`` asks for without
            one; None: ``RATCHET_MODEL`` of the server.
    """

    async def may_write(ctx: Context[Any, Any], task_id: str, action: str) -> str:
        """The caller's agent id, if it may `action` the task; else a one-line tool error."""
        agent = caller(ctx)
        if agent is None:
            raise ToolError(anonymous_refusal(task_id, action))
        async with runtime.store.reading() as tx:
            await check_may_write(tx, task_id, agent, action)
        return agent

    @server.tool(
        description="Queue a new agent task, owned by the agent this connection acts as; a worker "
        "(`ratchet worker`) runs it. Returns its id and its state:// URI.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    )
    async def create_task(
        ctx: Context[Any, Any],
        instruction: Annotated[str, _text("What the agent is to do.")],
        name: Annotated[str | None, Field(description="A name for people (default: agent).")] = None,
        model: Annotated[
            str | None,
            Field(
                description="provider:name, e.g. openai:gpt-4o-mini, ollama:llama3.1, anthropic:NAME or "
                "scripted:PATH.json (default: the server's default model)."
            ),
        ] = None,
        tools: Annotated[
            list[str],
            Field(description="Tool sources: .py files with @ratchet.tool functions, or module names."),
        ] = [],  # noqa: B006 (read only; pydantic copies it)
        instructions: Annotated[str, Field(description="How the agent works, for every prompt.")] = "",
        inputs: Annotated[
            dict[str, Any] | None, Field(description="Inputs of the task (a JSON object), kept with it.")
        ] = None,
        # The numbers are taken as JSON gave them and checked by `submit_agent_task`: out of range, a
        # fraction, text or true is one line saying what to give (the SDK's own check is many lines,
        # and would read "7" or true as a number).
        priority: Annotated[
            Any,
            WithJsonSchema(
                {
                    "type": "integer",
                    "minimum": PRIORITY_MIN,
                    "maximum": PRIORITY_MAX,
                    "description": f"{PRIORITY_MIN} (most urgent) to {PRIORITY_MAX}; lowest runs first.",
                }
            ),
        ] = PRIORITY_DEFAULT,
        max_steps: Annotated[
            Any,
            WithJsonSchema(
                {
                    "type": ["integer", "null"],
                    "minimum": 1,
                    "maximum": MAX_COUNT,
                    "description": "Plan steps it may run.",
                }
            ),
        ] = None,
        deadline: Annotated[
            str | None,
            Field(description="How long it may take from now, e.g. 30m, 2h or 1d; past it, it fails."),
        ] = None,
        approval_for: Annotated[
            list[RiskLevel] | None,
            Field(
                description="The risk levels whose tool calls wait for a person's approval "
                "(default: external_action)."
            ),
        ] = None,
    ) -> dict[str, Any]:
        owner = caller(ctx) or DEFAULT_AGENT

        request = AgentRequest(
            instruction=instruction,
            name=name,
            model=model,
            tools=list(tools),
            instructions=instructions,
            inputs=inputs,
            priority=priority,
            max_steps=max_steps,
            deadline=deadline,
            approval_for=approval_for,
        )
        return _outcome(
            await _one_line(submit_agent_task(runtime, request, owner=owner, default_model=default_model))
        )

    @server.tool(
        description="Change a task's working memory (AgentState: facts, open questions, artifacts, "
        "risk flags, plan) with a StatePatch, applied atomically and evented. The running agent takes "
        "it at its next turn; a resume keeps it. Refused for a task that ended.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    )
    async def patch_state(
        ctx: Context[Any, Any],
        task_id: TaskId,
        patch: Annotated[dict[str, Any], WithJsonSchema(_PATCH_SCHEMA)],
    ) -> dict[str, Any]:
        agent = await _one_line(may_write(ctx, task_id, "patch it"))
        task = await _one_line(runtime.patch_state(task_id, patch, as_agent=agent))
        return {**_outcome(task), "state": task.state.model_dump(mode="json")}

    @server.tool(
        description="Send a note to a task: the agent working on it reads it at its next turn.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    )
    async def append_note(
        ctx: Context[Any, Any],
        task_id: TaskId,
        text: Annotated[str, _text("What the agent should know.")],
    ) -> dict[str, Any]:
        agent = await _one_line(may_write(ctx, task_id, "send it a note"))
        sent = await _one_line(runtime.note(task_id, text, as_agent=agent))
        return {"task_id": task_id, "message": sent.seq}

    @server.tool(
        description="Approve the tool call a task waits for (waiting(approval)); it then runs, with "
        "edit_args instead of the model's arguments if given. Returns the task's status and `next`: "
        "what it does now. A call decided already is refused, with when it was decided.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False),
    )
    async def approve(
        ctx: Context[Any, Any],
        task_id: TaskId,
        edit_args: Annotated[
            dict[str, Any] | None, Field(description="Run the call with these arguments instead.")
        ] = None,
    ) -> dict[str, Any]:
        await _one_line(may_write(ctx, task_id, "approve its call"))
        return await _decided(runtime, await _one_line(runtime.approve(task_id, edit_args=edit_args)))

    @server.tool(
        description="Deny the tool call a task waits for; the call fails as denied (the agent is "
        "told why) and the task goes on.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    )
    async def deny(
        ctx: Context[Any, Any],
        task_id: TaskId,
        reason: Annotated[str, _text("Why; the agent is told.")],
    ) -> dict[str, Any]:
        await _one_line(may_write(ctx, task_id, "deny its call"))
        return await _decided(runtime, await _one_line(runtime.deny(task_id, reason)))

    @server.tool(
        description="Answer the question a task waits on (waiting(input)); it goes on with the answer.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    )
    async def answer(
        ctx: Context[Any, Any],
        task_id: TaskId,
        text: Annotated[str, _text("The answer.")],
    ) -> dict[str, Any]:
        await _one_line(may_write(ctx, task_id, "answer it"))
        if not text.strip():
            raise ToolError("text: give the answer")
        return await _decided(runtime, await _one_line(runtime.answer(task_id, text)))

    @server.tool(
        description="Cancel a task that has not ended; a worker running it stops at its next write.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False),
    )
    async def cancel(
        ctx: Context[Any, Any],
        task_id: TaskId,
        reason: Annotated[str | None, Field(description="Why (kept with the task).")] = None,
    ) -> dict[str, Any]:
        agent = await _one_line(may_write(ctx, task_id, "cancel it"))
        return _outcome(
            await _one_line(runtime.cancel(task_id, reason=reason or f"cancelled by agent {agent}"))
        )

    @server.tool(
        description="Give a task to another agent id: it owns (and writes) the task from now on, and "
        "its tasks list shows it; the note reaches the task like append_note. Only the owner may.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False),
    )
    async def handoff(
        ctx: Context[Any, Any],
        task_id: TaskId,
        to_agent: Annotated[str, _text("The agent id to give the task to.")],
        note: Annotated[str, Field(description="What the new owner should know.")] = "",
    ) -> dict[str, Any]:
        agent = await _one_line(may_write(ctx, task_id, "hand it off"))
        return _outcome(await _one_line(runtime.handoff(task_id, to_agent, note=note, as_agent=agent)))

    @server.tool(
        description="Let another agent id write a task (patch, note, approve ...) without giving it "
        "away. Only the owner may.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    )
    async def grant(
        ctx: Context[Any, Any],
        task_id: TaskId,
        agent: Annotated[str, _text("The agent id that may write the task.")],
    ) -> dict[str, Any]:
        owner = await _one_line(may_write(ctx, task_id, "grant it"))
        new = await _one_line(runtime.grant(task_id, agent, as_agent=owner))
        granted = [g.agent for g in await _one_line(runtime.grants(task_id))]
        return {"task_id": task_id, "agent": agent, "new": new, "granted": granted}
