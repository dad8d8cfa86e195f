"""The JSON documents `ratchet mcp` serves, each read from the store in one consistent read.

The task document builds on what `ratchet show --json` prints
(`ratchet.views.record_json.task_view_json`), so a record has one shape in both; it
adds what an MCP client needs to follow the task: the URIs of its parent,
children, events and artifacts, and its budget as used and left.

A URI names an agent as well as a task: the agent must be the task's own (the
task's ``agent``), else the read is refused with the URI to use instead. One
URI per task keeps subscriptions simple: a client that subscribed to a
task's URI is told about every change of that task.

This module does not import the SDK; `ratchet.mcp.resources` turns its
errors into MCP errors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..engine.children import child_spending
from ..errors import ArtifactNotFound, CorruptRecord, InputError
from ..records import Artifact, Event, StepStatus, Task, utcnow
from ..store import StateStore, StoreOps
from .record_json import event_json, iso_time, task_view_json, unreadable_json
from .task import in_seq_order, load_task_view
from .uris import agent_tasks_uri, artifact_uri, events_uri, task_uri

__all__ = [
    "AGENT_TASKS_LIMIT",
    "ARTIFACT_MAX_BYTES",
    "EVENTS_LIMIT",
    "ArtifactContent",
    "agent_tasks_document",
    "artifact_content",
    "check_agent",
    "events_document",
    "recent_tasks",
    "task_agent",
    "task_document",
]

AGENT_TASKS_LIMIT = 100
"""The most tasks an agent's task list shows (newest first)."""

EVENTS_LIMIT = 50
"""The most events a task's events resource shows (its newest)."""

TASK_EVENTS = 5
"""The newest events a task's document carries (the events resource has more)."""

ARTIFACT_MAX_BYTES = 4 * 1024 * 1024
"""The largest artifact served; a larger one is refused."""


def task_agent(task: Task) -> str:
    """The agent a task belongs to: the ``{agent}`` of its URI."""
    return task.agent


def check_agent(task: Task, agent: str) -> None:
    """Refuse a URI that names the task under another agent.

    Raises:
        InputError: `agent` is not the task's; the message gives the task's URI.
    """
    owner = task_agent(task)
    if agent != owner:
        raise InputError(
            f"task {task.id!r} belongs to agent {owner!r}, not {agent!r}; read {task_uri(owner, task.id)}"
        )


async def task_document(store: StateStore, task_id: str, *, agent: str | None = None) -> dict[str, Any]:
    """A task's document: what it is, where it stands, its state, budget and family.

    Args:
        agent: the agent the URI named, checked against the task's (None: not checked).

    Raises:
        TaskNotFound: no task has that id.
        InputError: `agent` is not the task's agent.
    """
    async with store.reading() as tx:
        view = await load_task_view(tx, task_id, event_count=TASK_EVENTS)
        if agent is not None:
            check_agent(view.task, agent)
        spent = await child_spending(tx, task_id)
    shown = task_view_json(view)
    task = view.task
    owner = task_agent(task)
    state = task.state
    return {
        "uri": task_uri(owner, task.id),
        "task_id": task.id,
        "agent": owner,
        "name": task.name,
        "instruction": task.instruction,
        "status": str(task.status),
        "waiting_on": None if task.waiting_on is None else str(task.waiting_on),
        "goal": task.goal if task.goal is not None else state.goal,
        "inputs": task.inputs_params,
        "context": task.context,
        "result": task.result,
        "error": task.error,
        "plan": shown["steps"],
        "state": {
            "known_facts": [fact.model_dump(mode="json") for fact in state.known_facts],
            "open_questions": list(state.open_questions),
            "artifacts": [
                {**ref.model_dump(mode="json"), "uri": artifact_uri(task.id, ref.artifact_id)}
                for ref in state.artifacts
            ],
            "risk_flags": list(state.risk_flags),
            "plan": list(state.plan),
            "constraints": state.constraints.model_dump(mode="json"),
        },
        "budget": _budget(task, sum(step.status is not StepStatus.PENDING for step in view.steps), spent),
        "pending_approvals": shown["pending_approvals"],
        "question": shown["question"],
        "in_doubt": shown["in_doubt"],
        "pending_messages": shown["pending_messages"],
        "next": shown["next"],
        "decided_approval": shown["decided_approval"],
        "parent": None
        if task.parent_id is None
        else {"task_id": task.parent_id, "uri": await _parent_uri(store, task.parent_id)},
        "children": [
            {**row, "uri": task_uri(task_agent(child), child.id)}
            for row, child in zip(shown["children"], view.children, strict=True)
        ],
        "events": {"uri": events_uri(task.id), "recent": shown["events"]},
        "created_at": iso_time(task.created_at),
        "updated_at": iso_time(task.updated_at),
        "started_at": iso_time(task.started_at),
        "deadline": iso_time(task.deadline),
    }


async def _parent_uri(store: StateStore, parent_id: str) -> str | None:
    try:
        parent = await store.get_task(parent_id)
    except InputError:  # a parent removed by `ratchet gc`: the child still names it
        return None
    return task_uri(task_agent(parent), parent.id)


def _budget(task: Task, steps_started: int, spent: dict[str, float]) -> dict[str, Any]:
    """The task's limits, what it used (its children's spending included) and what is left."""
    budget = task.budget
    end = task.updated_at if task.status.is_terminal else utcnow()
    wall = 0.0 if task.started_at is None else max((end - task.started_at).total_seconds(), 0.0)
    used: dict[str, float] = {
        "steps": steps_started,
        "llm_tokens": int(spent["llm_tokens"]),
        "cost": spent["cost"],  # US dollars, of the calls a price was known for
        "unpriced_calls": int(spent["unpriced_calls"]),
        "wall_time": round(wall, 3),
    }
    limits: dict[str, float | None] = {
        "steps": budget.max_steps,
        "llm_tokens": budget.max_llm_tokens,
        "cost": budget.max_cost,
        "wall_time": budget.max_wall_time,
    }
    left = {name: None if limit is None else max(limit - used[name], 0) for name, limit in limits.items()}
    return {"limits": limits, "used": used, "left": left}


async def recent_tasks(tx: StoreOps, *, agent: str | None, limit: int) -> tuple[list[Task], bool]:
    """The newest `limit` tasks (of `agent` when given), newest first, and whether more exist."""
    # The store lists tasks oldest first and knows no agents: this reads every task's row.
    # A row that cannot be read is left out (`ratchet tasks` shows it), not a failed listing.
    unreadable: list[CorruptRecord] = []
    listed = await tx.list_tasks(unreadable=unreadable)
    tasks = [task for task in listed if agent is None or task_agent(task) == agent]
    tasks.reverse()
    return tasks[:limit], len(tasks) > limit


def task_row(task: Task) -> dict[str, Any]:
    """A task as a list shows it: enough to pick it, and its URI to read the rest."""
    return {
        "task_id": task.id,
        "uri": task_uri(task_agent(task), task.id),
        "name": task.name,
        "status": str(task.status),
        "waiting_on": None if task.waiting_on is None else str(task.waiting_on),
        "goal": task.goal,
        "parent_id": task.parent_id,
        "created_at": iso_time(task.created_at),
        "updated_at": iso_time(task.updated_at),
    }


async def agent_tasks_document(
    store: StateStore, agent: str, *, limit: int = AGENT_TASKS_LIMIT
) -> dict[str, Any]:
    """An agent's tasks, newest first, at most `limit` (``truncated`` says whether more exist)."""
    async with store.reading() as tx:
        tasks, truncated = await recent_tasks(tx, agent=agent, limit=limit)
    return {
        "uri": agent_tasks_uri(agent),
        "agent": agent,
        "tasks": [task_row(task) for task in tasks],
        "truncated": truncated,
    }


async def events_document(store: StateStore, task_id: str, *, limit: int = EVENTS_LIMIT) -> dict[str, Any]:
    """A task's newest events, oldest first, at most `limit` (``truncated``: older ones exist).

    Raises:
        TaskNotFound: no task has that id.
    """
    async with store.reading() as tx:
        task = await tx.get_task(task_id)
        unreadable: list[CorruptRecord] = []
        events = await tx.last_events(task_id, limit, unreadable=unreadable)
    shown = in_seq_order(events, unreadable)
    first = min((event.seq for event in events), default=1)
    return {
        "uri": events_uri(task_id),
        "task_id": task_id,
        "task_uri": task_uri(task_agent(task), task_id),
        "events": [event_json(item) if isinstance(item, Event) else unreadable_json(item) for item in shown],
        "truncated": first > 1,
    }


@dataclass(frozen=True)
class ArtifactContent:
    """An artifact's body as a resource carries it: text, or bytes, with its MIME type."""

    artifact: Artifact
    content: str | bytes
    mime_type: str


async def artifact_content(store: StateStore, task_id: str, artifact_id: str) -> ArtifactContent:
    """The artifact's body, if it is the task's.

    Raises:
        TaskNotFound: no task has that id.
        ArtifactNotFound: the task has no artifact with that id.
        InputError: the artifact is larger than `ARTIFACT_MAX_BYTES`.
    """
    async with store.reading() as tx:
        await tx.get_task(task_id)
        artifact = await tx.get_artifact(artifact_id)
        if artifact.task_id != task_id:
            raise ArtifactNotFound(artifact_id)
        if artifact.bytes > ARTIFACT_MAX_BYTES:
            raise InputError(
                f"artifact {artifact_id!r} is {artifact.bytes} bytes, more than the "
                f"{ARTIFACT_MAX_BYTES} bytes `ratchet mcp` serves whole"
            )
        body = await tx.read_artifact(artifact_id)
    return ArtifactContent(artifact, *_typed(artifact.type, body))


def _typed(kind: str, body: bytes) -> tuple[str | bytes, str]:
    """The body as text when it is UTF-8, with a MIME type: the artifact's own if it names one."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return body, kind if "/" in kind else "application/octet-stream"
    if "/" in kind:
        return text, kind
    try:
        json.loads(text)
    except ValueError:
        return text, "text/plain"
    return text, "application/json"
