"""Making a new `Task` from what names its code: a `Workflow`, an agent, or a reference string.

`Runtime.submit` and a workflow's ``ctx.start_child`` both make tasks this
way, so a child task is the same record a submitted one would be. An agent is
recognised by its shape (`AgentLike`), as the engine sits below the agent
package: it runs as the agent loop (`AGENT_LOOP`) with its spec in its inputs.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, JsonValue

from ..errors import InputError
from ..limits import (
    MAX_INSTRUCTION_BYTES,
    PRIORITY_DEFAULT,
    PRIORITY_MAX,
    PRIORITY_MIN,
    check_instruction,
    check_labels,
    check_text,
)
from ..policy import Budget
from ..records import Task, utcnow
from ..records.limit import check_queue_name
from ..trust.seal import SigningKey
from ..trust.workspace import workspace_for
from .code_version import code_version
from .interactive import INTERACTIVE
from .scripts import refuse_while_loading
from .workflow import Workflow, load_workflow, portable_reference

__all__ = ["AGENT_LOOP", "AgentLike", "check_queue", "model_chain", "new_task", "slug"]

# The agent loop's reference (ratchet.agent.loop.AGENT_WORKFLOW, the same string).
AGENT_LOOP = "ratchet.agent.loop:agent_loop"


@runtime_checkable
class AgentLike(Protocol):
    """What of a `ratchet.Agent` a task is made from."""

    @property
    def spec(self) -> BaseModel: ...

    @property
    def model(self) -> str | None: ...

    @property
    def budget(self) -> Budget: ...

    @property
    def name(self) -> str: ...


def new_task(
    target: Workflow | AgentLike | str,
    inputs: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    instruction: str = "",
    model: str | Sequence[str] | None = None,
    fallback_on_pressure: bool = False,
    deadline: float | dt.datetime | None = None,
    budget: Budget | None = None,
    task_id: str | None = None,
    approval_timeout: float | None = None,
    priority: int = PRIORITY_DEFAULT,
    max_instruction_bytes: int = MAX_INSTRUCTION_BYTES,
    parent_id: str | None = None,
    labels: Mapping[str, str] | None = None,
    queue: str | None = None,
    partition: str | None = None,
    admit: Callable[[str], None] = lambda source: None,
    key: SigningKey | None = None,
) -> Task:
    """A queued task for `target` (not stored); `admit` hears of each piece of code it names.

    `model` may be a fallback chain, a list: the task's model is its first,
    the others its ``fallback_models`` (engine/calls/fallback.py).

    It records the version of the code it is made for (``code_version``,
    `ratchet.engine.code_version`): a child task its own workflow's.

    Its code references are sealed with `key` (default: this process's,
    `SigningKey.from_environment`), so a worker can tell them from a
    database writer's.

    Raises:
        InputError: the instruction is not UTF-8 text or too large; the
            deadline or priority is out of range; the name holds a NUL; a
            label is not one (`check_labels`); the signing key is unusable;
            the queue or partition is not a name, or a partition has no queue;
            ``RATCHET_CODE_VERSION`` is set to something that is not a code
            version (`ratchet.engine.code_version`).
        InvalidInputs: the inputs do not fit the workflow's parameters.
        WorkflowNotFound: a reference names no workflow.
        StartsWhenLoaded: code is being loaded for a task (a script without
            its ``__main__`` guard starts tasks when imported).
    """
    refuse_while_loading()
    check_instruction(instruction, limit=max_instruction_bytes)
    check_labels(labels or {}, "labels")
    check_queue(queue, partition)
    if (
        isinstance(priority, bool)
        or not isinstance(priority, int)
        or not PRIORITY_MIN <= priority <= PRIORITY_MAX
    ):
        raise InputError(
            f"priority {priority!r}: give a whole number from {PRIORITY_MIN} (most urgent) "
            f"to {PRIORITY_MAX}; the default is {PRIORITY_DEFAULT}"
        )
    if isinstance(target, AgentLike) and not isinstance(target, (Workflow, str)):
        agent = target
        target = AGENT_LOOP
        inputs = {**(inputs or {}), "agent": agent.spec.model_dump(mode="json")}
        if not model:  # the agent's chain, unless the caller names the model
            model = [m for m in (agent.model, *getattr(agent, "fallback_models", ())) if m]
        fallback_on_pressure = fallback_on_pressure or bool(getattr(agent, "fallback_on_pressure", False))
        budget = budget or agent.budget
        name = name or agent.name
        for source in getattr(agent.spec, "tool_sources", ()):
            admit(source)
    reference = target.reference if isinstance(target, Workflow) else portable_reference(target)
    found = target if isinstance(target, Workflow) else load_workflow(reference)
    inputs = found.signature.check_inputs(inputs)  # before anything is made of them
    if not reference.startswith(INTERACTIVE):  # found in this process's table, never loaded
        admit(reference.rpartition(":")[0])
    name = name or found.name
    is_agent = reference == AGENT_LOOP
    agent_name = _agent_name(inputs, found.name) if is_agent else found.name
    check_text(name, "the task's name")
    check_text(agent_name, "the agent's name")
    if isinstance(deadline, (int, float)):
        try:
            deadline = utcnow() + dt.timedelta(seconds=deadline)
        except (OverflowError, ValueError):  # past year 9999, or not a number
            raise InputError(f"deadline {deadline!r}: give seconds from now, up to 100 years") from None
    task_id = task_id or f"{slug(name)}-{uuid.uuid4().hex[:8]}"
    chain = model_chain(model)
    task = Task(
        id=task_id,
        name=name,
        instruction=instruction,
        agent=agent_name,
        workflow=reference,
        model=chain[0] if chain else None,
        fallback_models=chain[1:],
        fallback_on_pressure=fallback_on_pressure,
        inputs_params=inputs,
        deadline=deadline,
        budget=budget or Budget(),
        workspace=str(workspace_for(task_id)) if is_agent else None,
        approval_timeout=approval_timeout,
        priority=priority,
        parent_id=parent_id,
        labels=dict(labels or {}),
        queue=queue,
        partition=partition,
        code_version=code_version(found, inputs),
    )
    return (key or SigningKey.from_environment()).seal(task, found.code_inputs)


def check_queue(queue: str | None, partition: str | None) -> None:
    """Refuse a queue or partition that is not a name, or a partition given without a queue.

    Raises:
        InputError: one of them is; the message says which.
    """
    if partition is not None and queue is None:
        raise InputError("a partition is of a queue: give the queue too (--queue NAME, queue=)")
    if queue is not None:
        check_queue_name(queue, "the queue")
    if partition is not None:
        check_queue_name(partition, "the partition")


def model_chain(model: str | Sequence[str] | None) -> list[str]:
    """The models `model` names, in order: one model string, or a fallback chain of them.

    Raises:
        InputError: one is not ``provider:name``, or a model is named twice.
    """
    models = [] if not model else [model] if isinstance(model, str) else list(model)
    for one in models:
        if not isinstance(one, str) or ":" not in one:
            raise InputError(f"model {one!r}: give provider:name, e.g. openai:gpt-4o-mini")
    if len(set(models)) != len(models):
        twice = next(m for m in models if models.count(m) > 1)
        raise InputError(f"model {twice!r} is named twice in the fallback chain; name each model once")
    return models


def _agent_name(inputs: dict[str, JsonValue] | None, default: str) -> str:
    """The name in an agent task's inputs (its spec, under ``agent``)."""
    spec = (inputs or {}).get("agent")
    return str(spec.get("name", default)) if isinstance(spec, dict) else default


def slug(name: str) -> str:
    """`name` as a piece of a task id: lower case letters, digits, ``-`` and ``_``."""
    cleaned = "".join(c if c.isalnum() or c in "-_" else "-" for c in name.lower()).strip("-")
    return cleaned[:40] or "task"
