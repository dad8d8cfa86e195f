"""Builders of valid records for tests: the defaults, changed by keyword.

Times are built from a fixed origin (`at`) so tests that pass ``now=`` to the
store control the clock exactly.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ratchet.records import (
    Artifact,
    Checkpoint,
    Event,
    Message,
    Operation,
    OpKind,
    OpStatus,
    Session,
    Step,
    Task,
    Trigger,
    utcnow,
)
from ratchet.trust.seal import SigningKey

T0 = dt.datetime(2030, 1, 1, 12, 0, tzinfo=dt.UTC)


def at(seconds: float) -> dt.datetime:
    """The time `seconds` after the tests' fixed origin `T0`."""
    return T0 + dt.timedelta(seconds=seconds)


def make_task(id: str = "t1", **changes: Any) -> Task:
    fields: dict[str, Any] = {"id": id, "name": f"task {id}", "instruction": "do the thing"}
    return Task(**{**fields, **changes})


# Every input a built-in workflow reads code from (the agent's spec, a chat's tools, a pydantic-ai agent).
CODE_INPUTS = ("agent", "compaction", "session", "source", "tool_names", "tools")


def sealed(task: Task) -> Task:
    """`task` sealed with this process's key, as the process that creates a task seals it.

    For tests of what stands behind the seal (code trust, the workspace
    root): a row sealed as if its writer held the key.
    """
    return SigningKey.from_environment().seal(task, CODE_INPUTS)


def make_step(task_id: str, index: int, **changes: Any) -> Step:
    fields: dict[str, Any] = {
        "task_id": task_id,
        "index": index,
        "name": f"step {index}",
        "action_instruction": f"act {index}",
        "validation_instruction": f"check {index}",
    }
    return Step(**{**fields, **changes})


def make_steps(task_id: str, count: int, **changes: Any) -> list[Step]:
    return [make_step(task_id, index, **changes) for index in range(count)]


def make_op(
    task_id: str,
    seq: int,
    status: OpStatus = OpStatus.STARTED,
    **changes: Any,
) -> Operation:
    fields: dict[str, Any] = {
        "task_id": task_id,
        "seq": seq,
        "kind": OpKind.TOOL,
        "name": "send_mail",
        "idempotency_key": f"{task_id}:{seq}",
        "status": status,
        "input": {"to": "a@example.com", "seq": seq},
    }
    if status is OpStatus.SUCCEEDED:
        fields["output"] = {"sent": True, "seq": seq}
    if status is OpStatus.FAILED:
        fields["error"] = "smtp timeout"
    if status is not OpStatus.STARTED:
        fields["finished_at"] = utcnow()
    return Operation(**{**fields, **changes})


def finish(op: Operation, status: OpStatus = OpStatus.SUCCEEDED, **changes: Any) -> Operation:
    """The outcome of the started `op`, as the journal records it after the call returns."""
    outcome = make_op(op.task_id, op.seq, status, started_at=op.started_at, attempt=op.attempt)
    fields = {"status": status, "output": outcome.output, "error": outcome.error}
    return op.model_copy(update={**fields, "finished_at": outcome.finished_at, **changes})


def make_message(thread_id: str, content: Any, role: str = "user", **changes: Any) -> Message:
    return Message(**{"thread_id": thread_id, "role": role, "content": content, **changes})


def make_event(task_id: str, message: str = "progress", **changes: Any) -> Event:
    return Event(**{"task_id": task_id, "kind": "step", "message": message, **changes})


def make_artifact(id: str, task_id: str, **changes: Any) -> Artifact:
    fields: dict[str, Any] = {
        "id": id,
        "task_id": task_id,
        "type": "text/plain",
        "summary": f"summary of {id}",
        "bytes": 0,
    }
    return Artifact(**{**fields, **changes})


def make_trigger(fire_at: dt.datetime = T0, **changes: Any) -> Trigger:
    return Trigger(**{"fire_at": fire_at, "kind": "start", **changes})


def make_checkpoint(task: Task, **changes: Any) -> Checkpoint:
    fields: dict[str, Any] = {"task_id": task.id, "task": task, "steps": make_steps(task.id, 2)}
    return Checkpoint(**{**fields, **changes})


def make_session(id: str = "s1", **changes: Any) -> Session:
    return Session(**{"id": id, "state": {"topic": "weather"}, **changes})
