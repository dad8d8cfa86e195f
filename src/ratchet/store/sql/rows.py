"""Records to SQL rows and back, for the SQL stores; the one place that does it.

Times are integer microseconds since the Unix epoch (UTC), exact both ways.
JSON values are stored as JSON text.

A row that does not decode (its JSON does not validate, a column holds what
no record has) raises `CorruptRecord`, naming the record and what is wrong
on one line; `decode_each` leaves such rows out of a listing instead, for
the listings that must go on past one bad row (docs/stores.md).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from pydantic import ValidationError

from ...errors import CorruptRecord
from ...limits import PRIORITY_DEFAULT
from ...records import (
    Approval,
    Artifact,
    Checkpoint,
    Event,
    InboxMessage,
    Lease,
    Message,
    Operation,
    Session,
    Step,
    StepStatus,
    StreamEntry,
    Task,
    TaskChange,
    TaskStatus,
    Trigger,
)
from ...records.compact_json import encode as _encode

_R = TypeVar("_R")
_Row = TypeVar("_Row")
# What decoding a bad row raises: pydantic's ValidationError and json's
# JSONDecodeError are ValueErrors; a column of the wrong type gives a TypeError
# or (a time beyond year 9999) an OverflowError.
_UNDECODABLE = (ValueError, TypeError, OverflowError)
_PROBLEM_LENGTH = 200

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND = dt.timedelta(microseconds=1)


def to_micros(value: dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return (value - _EPOCH) // _MICROSECOND


def from_micros(value: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(microseconds=value)


def _dump(value: Any) -> str | None:
    return None if value is None else _encode(value)


def _load(text: str | None, column: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{column}: not JSON ({exc})") from exc


def _text(value: str | None) -> str | None:
    """Free text (an error, an event's message) as a column keeps it: a NUL, which PostgreSQL's
    text cannot hold, as U+FFFD on every SQL store, so a tool's error quoting binary bytes is recorded."""
    return value.replace("\x00", "\ufffd") if value and "\x00" in value else value


def _maybe_micros(value: dt.datetime | None) -> int | None:
    return None if value is None else to_micros(value)


OP_COLUMNS = (
    "task_id",
    "seq",
    "kind",
    "name",
    "attempt",
    "idempotency_key",
    "status",
    "input",
    "output",
    "error",
    "started_at",
    "finished_at",
    "error_type",
    "next_attempt_at",
    "meta",
)
"""The columns of an operation row, in the order `op_values` gives them."""


def op_values(op: Operation, input_json: str | None = None) -> tuple[Any, ...]:
    """The operation's row, positionally in `OP_COLUMNS` order (the journal writes bind these).

    `input_json`, when given, is ``op.input`` already encoded (an intent's, for its outcome).
    """
    if input_json is None and op.input is not None:
        input_json = _encode(op.input)
    return (
        op.task_id,
        op.seq,
        op.kind._value_,  # not .value: a property, and this runs twice per call
        op.name,
        op.attempt,
        op.idempotency_key,
        op.status._value_,
        input_json,
        None if op.output is None else _encode(op.output),
        _text(op.error),
        to_micros(op.started_at),
        None if op.finished_at is None else to_micros(op.finished_at),
        op.error_type,
        None if op.next_attempt_at is None else to_micros(op.next_attempt_at),
        _encode(op.meta) if op.meta else "{}",
    )


def op_from_row(row: Sequence[Any]) -> Operation:
    try:
        return _op(row)
    except _UNDECODABLE as exc:
        raise _corrupt(f"operation {row[1]} of task {row[0]}", "operations", (row[0], row[1]), exc) from exc


def _op(row: Sequence[Any]) -> Operation:
    (
        task_id,
        seq,
        kind,
        name,
        attempt,
        key,
        status,
        input_,
        output,
        error,
        started,
        finished,
        error_type,
        next_attempt_at,
        meta,
    ) = row
    return Operation(
        task_id=task_id,
        seq=seq,
        kind=kind,
        name=name,
        attempt=attempt,
        idempotency_key=key,
        status=status,
        input=_load(input_, "input"),
        output=_load(output, "output"),
        error=error,
        started_at=from_micros(started),
        finished_at=None if finished is None else from_micros(finished),
        error_type=error_type,
        next_attempt_at=None if next_attempt_at is None else from_micros(next_attempt_at),
        meta=_load(meta, "meta"),
    )


def event_params(event: Event) -> dict[str, Any]:
    return {
        "task_id": event.task_id,
        "time": to_micros(event.time),
        "kind": event.kind,
        "severity": str(event.severity),
        "message": _text(event.message),
        "display_message": _text(event.display_message),
        "data": _dump(event.data),
    }


def event_from_row(row: Sequence[Any]) -> Event:
    task_id, seq, time, kind, severity, message, display_message, data = row
    try:
        return Event(
            task_id=task_id,
            seq=seq,
            time=from_micros(time),
            kind=kind,
            severity=severity,
            message=message,
            display_message=display_message,
            data=_load(data, "data"),
        )
    except _UNDECODABLE as exc:
        raise _corrupt(f"event {seq} of task {task_id}", "events", (task_id, seq), exc) from exc


def artifact_params(artifact: Artifact, content: bytes) -> dict[str, Any]:
    return {
        "id": artifact.id,
        "task_id": artifact.task_id,
        "type": artifact.type,
        "summary": _text(artifact.summary),
        "bytes": len(content),
        "created_at": to_micros(artifact.created_at),
        "content": content,
        "step": artifact.step,
    }


def artifact_from_row(row: Sequence[Any]) -> Artifact:
    id_, task_id, type_, summary, size, created, step = row
    try:
        return Artifact(
            id=id_,
            task_id=task_id,
            type=type_,
            summary=summary,
            bytes=size,
            created_at=from_micros(created),
            step=step,
        )
    except _UNDECODABLE as exc:
        raise _corrupt(f"artifact {id_}", "artifacts", (id_,), exc) from exc


def trigger_params(trigger: Trigger) -> dict[str, Any]:
    return {
        "fire_at": to_micros(trigger.fire_at),
        "priority": trigger.priority,  # None: the task's priority (see put_task_trigger)
        "default_priority": PRIORITY_DEFAULT,
        "task_id": trigger.task_id,
        "session_id": trigger.session_id,
        "kind": trigger.kind,
        "payload": _dump(trigger.payload),
        "dedupe_key": trigger.dedupe_key,
    }


def trigger_from_row(row: Sequence[Any]) -> Trigger:
    id_, fire_at, priority, task_id, session_id, kind, payload, dedupe_key = row
    try:
        return Trigger(
            id=id_,
            fire_at=from_micros(fire_at),
            priority=priority,
            task_id=task_id,
            session_id=session_id,
            kind=kind,
            payload=_load(payload, "payload"),
            dedupe_key=dedupe_key,
        )
    except _UNDECODABLE as exc:
        raise _corrupt(f"trigger {id_}", "triggers", (id_,), exc) from exc


def lease_params(lease: Lease) -> dict[str, Any]:
    return {
        "task_id": lease.task_id,
        "owner": lease.owner,
        "token": lease.token,
        "expires_at": to_micros(lease.expires_at),
        "host": lease.host,
        "pid": lease.pid,
        "pid_space": lease.pid_space,
        "pid_started": lease.pid_started,
        "granted_at": _maybe_micros(lease.granted_at),
        "took_over": lease.took_over,
        "renewed_at": _maybe_micros(lease.renewed_at),
    }


def lease_from_row(row: Sequence[Any]) -> Lease:
    """A lease from ``task_id, owner, token, expires_at, host, pid, pid_space, pid_started,
    released, granted_at, took_over``.

    A read of a lease adds ``renewed_at``; a claim's row, just granted, has none to give.
    """
    task_id, owner, token, expires_at, host, pid, pid_space, pid_started, *rest = row
    released, granted_at, took_over, *renewed = rest
    renewed_at = renewed[0] if renewed else None
    try:
        return Lease(
            task_id=task_id,
            owner=owner,
            token=token,
            expires_at=from_micros(expires_at),
            host=host,
            pid=pid,
            pid_space=pid_space,
            pid_started=pid_started,
            released=bool(released),
            granted_at=None if granted_at is None else from_micros(granted_at),
            took_over=bool(took_over),
            renewed_at=None if renewed_at is None else from_micros(renewed_at),
        )
    except _UNDECODABLE as exc:
        raise _corrupt(f"lease {token} of task {task_id}", "leases", (task_id,), exc) from exc


def task_params(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "status": str(task.status),
        "waiting_on": None if task.waiting_on is None else str(task.waiting_on),
        "created_at": to_micros(task.created_at),
        "record": task.to_json(),
        "priority": task.priority,
        "parent_id": task.parent_id,
        "name": task.name,
        "agent": task.agent,
        "updated_at": to_micros(task.updated_at),
        "model": task.model,
        "cost": task.cost,
        "queue_name": task.queue,
        "queue_partition": task.partition,
        "code_version": task.code_version,
    }


def step_params(step: Step) -> dict[str, Any]:
    return {
        "task_id": step.task_id,
        "idx": step.index,
        "status": str(step.status),
        "record": step.to_json(),
    }


def approval_params(approval: Approval) -> dict[str, Any]:
    return {
        "task_id": approval.task_id,
        "seq": approval.seq,
        "status": str(approval.status),
        "requested_at": to_micros(approval.requested_at),
        "record": approval.to_json(),
    }


# --------------------------------------------------------------------------- records kept as JSON


def task_from_row(row: Sequence[Any]) -> Task:
    """A task from ``id, status, record``; its columns must agree with its record.

    The columns are what workers claim by, the record what they run: a row
    whose two disagree is as unreadable as one whose record does not parse.
    """
    task_id, status, record = row
    what = f"task {task_id}"
    try:
        task = Task.from_json(record)
    except _UNDECODABLE as exc:
        raise _corrupt(what, "tasks", (task_id,), exc) from exc
    if task.id != task_id:
        raise _corrupt(what, "tasks", (task_id,), f"its record is of task {_shown(task.id)}")
    if task.status.value != status:
        raise _corrupt(
            what,
            "tasks",
            (task_id,),
            f"its status column says {_shown(status)} but its record says {task.status.value!r}",
        )
    return task


def task_status(status: Any, task_id: str) -> TaskStatus:
    """The status in a task row's status column."""
    try:
        return TaskStatus(status)
    except ValueError as exc:
        problem = f"its status column holds {_shown(status)}, not a task status"
        raise _corrupt(f"task {task_id}", "tasks", (task_id,), problem) from exc


def step_status(status: Any, task_id: str, index: int) -> StepStatus:
    """The status in a step row's status column."""
    try:
        return StepStatus(status)
    except ValueError as exc:
        problem = f"its status column holds {_shown(status)}, not a step status"
        raise _corrupt(f"step {index} of task {task_id}", "steps", (task_id, index), problem) from exc


def step_from_row(row: Sequence[Any], task_id: str) -> Step:
    """A step from ``idx, record``."""
    index, record = row
    try:
        return Step.from_json(record)
    except _UNDECODABLE as exc:
        raise _corrupt(f"step {index} of task {task_id}", "steps", (task_id, index), exc) from exc


def message_from_record(record: Any, thread_id: str) -> Message:
    try:
        return Message.from_json(record)
    except _UNDECODABLE as exc:
        raise _corrupt(f"a message of thread {thread_id}", "messages", (thread_id,), exc) from exc


def checkpoint_from_record(record: Any, task_id: str) -> Checkpoint:
    try:
        return Checkpoint.from_json(record)
    except _UNDECODABLE as exc:
        raise _corrupt(f"a checkpoint of task {task_id}", "checkpoints", (task_id,), exc) from exc


def approval_from_row(row: Sequence[Any]) -> Approval:
    """An approval from ``task_id, seq, status, record``; its columns must agree with its record."""
    task_id, seq, status, record = row
    what, key = f"the approval of operation {seq} of task {task_id}", (task_id, seq)
    try:
        approval = Approval.from_json(record)
    except _UNDECODABLE as exc:
        raise _corrupt(what, "approvals", key, exc) from exc
    if (approval.task_id, approval.seq) != (task_id, seq):
        problem = f"its record is of operation {approval.seq} of task {_shown(approval.task_id)}"
        raise _corrupt(what, "approvals", key, problem)
    if approval.status.value != status:
        problem = f"its status column says {_shown(status)} but its record says {approval.status.value!r}"
        raise _corrupt(what, "approvals", key, problem)
    return approval


def task_change_from_row(row: Sequence[Any]) -> TaskChange:
    """A change of the task-change log from ``position, record``; the two must agree."""
    position, record = row
    what = f"task change {position}"
    try:
        change = TaskChange.from_json(record)
    except _UNDECODABLE as exc:
        raise _corrupt(what, "task_changes", (position,), exc) from exc
    if change.position != position:
        problem = f"its record is of position {_shown(change.position)}"
        raise _corrupt(what, "task_changes", (position,), problem)
    return change


def inbox_from_record(record: Any) -> InboxMessage:
    try:
        return InboxMessage.from_json(record)
    except _UNDECODABLE as exc:
        raise _corrupt("an inbox message", "inbox", (), exc) from exc


def stream_entry_from_record(record: Any) -> StreamEntry:
    try:
        return StreamEntry.from_json(record)
    except _UNDECODABLE as exc:
        raise _corrupt("a stream entry", "streams", (), exc) from exc


def session_from_record(record: Any) -> Session:
    try:
        return Session.from_json(record)
    except _UNDECODABLE as exc:
        raise _corrupt("a session", "sessions", (), exc) from exc


def decode_each(
    found: Iterable[_Row], decode: Callable[[_Row], _R], unreadable: list[CorruptRecord] | None
) -> list[_R]:
    """Decode each row, leaving out those that do not decode (added to `unreadable` when given)."""
    decoded = []
    for row in found:
        try:
            decoded.append(decode(row))
        except CorruptRecord as problem:
            if unreadable is not None:
                unreadable.append(problem)
    return decoded


# --------------------------------------------------------------------------- what is wrong


def _corrupt(what: str, table: str, key: tuple[Any, ...], problem: Exception | str) -> CorruptRecord:
    # `what` names the row by its key, which came from the database too.
    text = problem if isinstance(problem, str) else problem_of(problem)
    return CorruptRecord(_printable(what), table, key, text)


def problem_of(exc: Exception) -> str:
    """What is wrong with a row, on one line: pydantic's first complaint, or the decoder's."""
    if isinstance(exc, ValidationError):
        complaints = exc.errors(include_url=False, include_input=False)
        first = complaints[0]
        where = ".".join(str(part) for part in first["loc"])
        text = f"{where}: {first['msg']}" if where else first["msg"]
        if len(complaints) > 1:
            text += f" (and {len(complaints) - 1} more)"
    else:
        text = str(exc) or type(exc).__name__
    return _printable(text)


def _shown(value: Any) -> str:
    """A stored value quoted for a message."""
    return _printable(repr(value))


def _printable(text: str) -> str:
    """`text` on one line, short, its control characters written as escapes (it came from the database)."""
    shown = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
    return shown if len(shown) <= _PROBLEM_LENGTH else shown[: _PROBLEM_LENGTH - 1] + "…"
