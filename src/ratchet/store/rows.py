"""Records to SQL rows and back, for the SQL stores; the one place that does it.

Times are integer microseconds since the Unix epoch (UTC), exact both ways.
JSON values are stored as JSON text.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from ..model import Approval, Artifact, Event, Lease, Operation, Step, Task, Trigger

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND = dt.timedelta(microseconds=1)


def to_micros(value: dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return (value - _EPOCH) // _MICROSECOND


def from_micros(value: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(microseconds=value)


_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _dump(value: Any) -> str | None:
    return None if value is None else _encode(value)


def _load(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _maybe_micros(value: dt.datetime | None) -> int | None:
    return None if value is None else to_micros(value)


def op_outcome_params(op: Operation) -> dict[str, Any]:
    """The parameters that finishing a recorded operation changes."""
    return {
        "task_id": op.task_id,
        "seq": op.seq,
        "attempt": op.attempt,
        "status": str(op.status),
        "output": _dump(op.output),
        "error": op.error,
        "error_type": op.error_type,
        "finished_at": _maybe_micros(op.finished_at),
        "next_attempt_at": _maybe_micros(op.next_attempt_at),
        "meta": _encode(op.meta) if op.meta else "{}",
    }


def op_params(op: Operation) -> dict[str, Any]:
    return {
        "task_id": op.task_id,
        "seq": op.seq,
        "kind": str(op.kind),
        "name": op.name,
        "attempt": op.attempt,
        "idempotency_key": op.idempotency_key,
        "status": str(op.status),
        "input": _dump(op.input),
        "output": _dump(op.output),
        "error": op.error,
        "started_at": to_micros(op.started_at),
        "finished_at": _maybe_micros(op.finished_at),
        "error_type": op.error_type,
        "next_attempt_at": _maybe_micros(op.next_attempt_at),
        "meta": _encode(op.meta) if op.meta else "{}",
    }


def op_from_row(row: Sequence[Any]) -> Operation:
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
        input=_load(input_),
        output=_load(output),
        error=error,
        started_at=from_micros(started),
        finished_at=None if finished is None else from_micros(finished),
        error_type=error_type,
        next_attempt_at=None if next_attempt_at is None else from_micros(next_attempt_at),
        meta=json.loads(meta),
    )


def event_params(event: Event) -> dict[str, Any]:
    return {
        "task_id": event.task_id,
        "time": to_micros(event.time),
        "kind": event.kind,
        "severity": str(event.severity),
        "message": event.message,
        "display_message": event.display_message,
        "data": _dump(event.data),
    }


def event_from_row(row: Sequence[Any]) -> Event:
    task_id, seq, time, kind, severity, message, display_message, data = row
    return Event(
        task_id=task_id,
        seq=seq,
        time=from_micros(time),
        kind=kind,
        severity=severity,
        message=message,
        display_message=display_message,
        data=_load(data),
    )


def artifact_params(artifact: Artifact, content: bytes) -> dict[str, Any]:
    return {
        "id": artifact.id,
        "task_id": artifact.task_id,
        "type": artifact.type,
        "summary": artifact.summary,
        "bytes": len(content),
        "created_at": to_micros(artifact.created_at),
        "content": content,
    }


def artifact_from_row(row: Sequence[Any]) -> Artifact:
    id_, task_id, type_, summary, size, created = row
    return Artifact(
        id=id_,
        task_id=task_id,
        type=type_,
        summary=summary,
        bytes=size,
        created_at=from_micros(created),
    )


def trigger_params(trigger: Trigger) -> dict[str, Any]:
    return {
        "fire_at": to_micros(trigger.fire_at),
        "priority": trigger.priority,
        "task_id": trigger.task_id,
        "session_id": trigger.session_id,
        "kind": trigger.kind,
        "payload": _dump(trigger.payload),
        "dedupe_key": trigger.dedupe_key,
    }


def trigger_from_row(row: Sequence[Any]) -> Trigger:
    id_, fire_at, priority, task_id, session_id, kind, payload, dedupe_key = row
    return Trigger(
        id=id_,
        fire_at=from_micros(fire_at),
        priority=priority,
        task_id=task_id,
        session_id=session_id,
        kind=kind,
        payload=_load(payload),
        dedupe_key=dedupe_key,
    )


def lease_params(lease: Lease) -> dict[str, Any]:
    return {
        "task_id": lease.task_id,
        "owner": lease.owner,
        "token": lease.token,
        "expires_at": to_micros(lease.expires_at),
        "host": lease.host,
        "pid": lease.pid,
        "granted_at": _maybe_micros(lease.granted_at),
        "took_over": lease.took_over,
    }


def lease_from_row(row: Sequence[Any]) -> Lease:
    """A lease from ``task_id, owner, token, expires_at, host, pid, released, granted_at, took_over``."""
    task_id, owner, token, expires_at, host, pid, released, granted_at, took_over = row
    return Lease(
        task_id=task_id,
        owner=owner,
        token=token,
        expires_at=from_micros(expires_at),
        host=host,
        pid=pid,
        released=bool(released),
        granted_at=None if granted_at is None else from_micros(granted_at),
        took_over=bool(took_over),
    )


def task_params(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "status": str(task.status),
        "waiting_on": None if task.waiting_on is None else str(task.waiting_on),
        "created_at": to_micros(task.created_at),
        "record": task.to_json(),
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
