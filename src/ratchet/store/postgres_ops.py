"""The PostgreSQL store's operations, run on one connection inside an open transaction.

`PostgresStore` (postgres.py) opens the transaction and hands these out. What
each write locks: a task's row while its status moves (``FOR UPDATE``); an
advisory lock per owner while numbering its events, messages or checkpoints;
the claim statements lock as they go (``ON CONFLICT`` on the lease's key,
``FOR UPDATE ... SKIP LOCKED`` on triggers and orphaned tasks). Every driver
error becomes a `StoreError` in `PostgresOps.run`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from typing import Any

import psycopg

from ..errors import (
    ArtifactNotFound,
    CheckpointNotFound,
    ConflictError,
    DuplicateRecord,
    LeaseLost,
    SessionNotFound,
    StepNotFound,
    StoreError,
    TaskNotFound,
)
from ..model import (
    Approval,
    ApprovalStatus,
    Artifact,
    Checkpoint,
    Event,
    Lease,
    Message,
    Operation,
    OpStatus,
    Session,
    Step,
    StepStatus,
    Task,
    TaskStatus,
    Trigger,
    check_step_move,
    check_task_move,
    utcnow,
)
from . import catalogue, rows
from .base import checkpoints_to_drop
from .ops import StoreOps
from .postgres_schema import DIALECT, Target, connection_error

__all__ = ["PostgresOps", "store_error"]

_INTENT_RESET = {
    "status": OpStatus.STARTED, "output": None, "error": None, "error_type": None,
    "finished_at": None, "next_attempt_at": None,
}
_INT4_MAX = 2**31 - 1  # substring() and message seqs take integers


def store_error(target: Target, exc: psycopg.Error, conn: psycopg.AsyncConnection) -> StoreError:
    """The store error for a driver error met on `conn`: the one place they are translated."""
    if isinstance(exc, psycopg.errors.UniqueViolation):
        return DuplicateRecord(f"PostgreSQL {target}: {exc.diag.message_primary or exc}")
    if conn.closed:
        return connection_error(target, exc)
    lines = str(exc).strip().splitlines()
    message = exc.diag.message_primary or (lines[0] if lines else type(exc).__name__)
    return StoreError(f"PostgreSQL {target}: {message}")


class PostgresOps(StoreOps):
    """The operations, run on a connection inside a transaction the caller opened."""

    def __init__(self, conn: psycopg.AsyncConnection, target: Target) -> None:
        self._c = conn
        self._target = target
        self._q = catalogue.queries(DIALECT)

    async def run(self, name: str, params: dict[str, Any] | None = None) -> psycopg.AsyncCursor[Any]:
        """Execute the named query.

        Raises:
            StoreError: the driver's error, translated (`DuplicateRecord` for a
                unique key, a connection error naming the server).
        """
        try:
            return await self._c.execute(self._q[name], params)
        except psycopg.Error as exc:
            raise store_error(self._target, exc, self._c) from exc

    async def _one(self, name: str, params: dict[str, Any] | None = None) -> Any:
        """The first row of the named query, or None."""
        return await (await self.run(name, params)).fetchone()

    async def _all(self, name: str, params: dict[str, Any] | None = None) -> list[Any]:
        return await (await self.run(name, params)).fetchall()

    async def _lock(self, kind: str, owner: str) -> None:
        """Serialize, until commit, the transactions that number `owner`'s `kind` rows."""
        await self.run("lock_sequence", {"key": f"ratchet:{kind}:{owner}"})

    async def schema_version(self) -> int:
        return (await self._one("schema_version"))[0]

    async def check_fence(self, lease: Lease) -> None:
        row = await self._one("check_lease", {"task_id": lease.task_id})
        if row is None or row[0] != lease.token or row[1]:
            raise LeaseLost(
                f"lease {lease.token} of {lease.owner} on task {lease.task_id} is no longer current"
            )

    # ------------------------------------------------------------------ tasks

    async def create_task(self, task: Task) -> Task:
        if (await self.run("insert_task", rows.task_params(task))).rowcount == 0:
            raise DuplicateRecord(f"a task with id {task.id!r} already exists")
        return task

    async def get_task(self, task_id: str) -> Task:
        row = await self._one("get_task", {"id": task_id})
        if row is None:
            raise TaskNotFound(task_id)
        return Task.from_json(row[0])

    async def _lock_task(self, task_id: str) -> TaskStatus:
        row = await self._one("lock_task", {"id": task_id})
        if row is None:
            raise TaskNotFound(task_id)
        return TaskStatus(row[0])

    async def list_tasks(
        self, status: TaskStatus | None = None, *, limit: int | None = None
    ) -> list[Task]:
        if status is None:
            found = await self._all("list_tasks", {"limit": limit})
        else:
            params = {"status": str(TaskStatus(status)), "limit": limit}
            found = await self._all("list_tasks_by_status", params)
        return [Task.from_json(record) for (record,) in found]

    async def update_task(self, task: Task) -> Task:
        check_task_move(task.id, await self._lock_task(task.id), task.status)
        await self.run("update_task", rows.task_params(task))
        return task

    async def list_orphaned_tasks(
        self, *, limit: int = 10, now: dt.datetime | None = None
    ) -> list[Task]:
        params = {"now": rows.to_micros(now or utcnow()), "limit": limit}
        return [Task.from_json(record) for (record,) in await self._all("list_orphaned_tasks", params)]

    # ------------------------------------------------------------------ steps

    async def replace_steps(self, task_id: str, steps: Sequence[Step]) -> None:
        await self._lock_task(task_id)
        for step in steps:
            if step.task_id != task_id:
                raise ValueError(f"{step.label} does not belong to task {task_id}")
        await self.run("delete_steps", {"task_id": task_id})
        for step in steps:
            await self.run("insert_step", rows.step_params(step))

    async def update_step(self, step: Step) -> Step:
        row = await self._one("lock_step", {"task_id": step.task_id, "idx": step.index})
        if row is None:
            raise StepNotFound(step.task_id, step.index)
        check_step_move(step.label, StepStatus(row[0]), step.status)
        await self.run("update_step", rows.step_params(step))
        return step

    async def list_steps(self, task_id: str) -> list[Step]:
        return [Step.from_json(r) for (r,) in await self._all("list_steps", {"task_id": task_id})]

    # ------------------------------------------------------------------ journal

    async def record_op_started(self, op: Operation) -> Operation:
        if op.is_finished or op.output is not None or op.error is not None or op.finished_at:
            op = op.model_copy(update=_INTENT_RESET)
        if (await self.run("record_op_started", rows.op_params(op))).rowcount == 0:
            raise DuplicateRecord(f"operation {op.seq} of task {op.task_id} already succeeded")
        return op

    async def record_op_finished(self, op: Operation) -> Operation:
        if op.status is OpStatus.STARTED:
            raise ValueError("record_op_finished needs a succeeded or failed operation")
        if op.finished_at is None:
            op = op.model_copy(update={"finished_at": utcnow()})
        outcome = rows.op_outcome_params(op)
        written = (
            (await self.run("finish_op", outcome)).rowcount
            or (await self.run("insert_finished_op", rows.op_params(op))).rowcount
            # The insert finds a row when another writer recorded the intent meanwhile.
            or (await self.run("finish_op", outcome)).rowcount
        )
        if not written:
            raise DuplicateRecord(f"operation {op.seq} of task {op.task_id} already succeeded")
        return op

    async def get_op(self, task_id: str, seq: int) -> Operation | None:
        row = await self._one("get_op", {"task_id": task_id, "seq": seq})
        return None if row is None else rows.op_from_row(row)

    async def list_ops(self, task_id: str, *, after_seq: int = -1) -> list[Operation]:
        found = await self._all("list_ops", {"task_id": task_id, "after_seq": after_seq})
        return [rows.op_from_row(row) for row in found]

    # ------------------------------------------------------------------ messages

    async def append_messages(self, messages: Sequence[Message]) -> list[Message]:
        next_seq: dict[str, int] = {}
        stored = []
        for message in messages:
            thread = message.thread_id
            if thread not in next_seq:
                await self._lock("messages", thread)
                next_seq[thread] = (await self._one("next_message_seq", {"thread_id": thread}))[0]
            message = message.model_copy(update={"seq": next_seq[thread]})
            next_seq[thread] += 1
            await self.run(
                "insert_message",
                {"thread_id": thread, "seq": message.seq, "record": message.to_json()},
            )
            stored.append(message)
        return stored

    async def list_messages(
        self, thread_id: str, *, start: int = 0, end: int | None = None
    ) -> list[Message]:
        end = _INT4_MAX if end is None else min(end, _INT4_MAX)
        params = {"thread_id": thread_id, "start": start, "end": end}
        return [Message.from_json(r) for (r,) in await self._all("list_messages", params)]

    # ------------------------------------------------------------------ events

    async def append_event(self, event: Event) -> Event:
        await self._lock("events", event.task_id)
        seq = (await self._one("append_event", rows.event_params(event)))[0]
        return event.model_copy(update={"seq": seq})

    async def list_events(
        self, task_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> list[Event]:
        params = {"task_id": task_id, "after_seq": after_seq, "limit": limit}
        return [rows.event_from_row(row) for row in await self._all("list_events", params)]

    async def last_events(self, task_id: str, count: int) -> list[Event]:
        found = await self._all("last_events", {"task_id": task_id, "count": count})
        return [rows.event_from_row(row) for row in found]

    # ------------------------------------------------------------------ artifacts

    async def put_artifact(self, artifact: Artifact, content: bytes) -> Artifact:
        if (await self.run("insert_artifact", rows.artifact_params(artifact, content))).rowcount == 0:
            raise DuplicateRecord(f"an artifact with id {artifact.id!r} already exists")
        return artifact.model_copy(update={"bytes": len(content)})

    async def get_artifact(self, artifact_id: str) -> Artifact:
        row = await self._one("get_artifact", {"id": artifact_id})
        if row is None:
            raise ArtifactNotFound(artifact_id)
        return rows.artifact_from_row(row)

    async def read_artifact(
        self, artifact_id: str, *, offset: int = 0, length: int | None = None
    ) -> bytes:
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("offset and length must not be negative")
        params = {
            "id": artifact_id,
            "offset": min(offset, _INT4_MAX - 1),
            "length": _INT4_MAX if length is None else min(length, _INT4_MAX),
        }
        row = await self._one("read_artifact", params)
        if row is None:
            raise ArtifactNotFound(artifact_id)
        return bytes(row[0] or b"")

    async def list_artifacts(self, task_id: str) -> list[Artifact]:
        found = await self._all("list_artifacts", {"task_id": task_id})
        return [rows.artifact_from_row(row) for row in found]

    # ------------------------------------------------------------------ triggers

    async def put_trigger(self, trigger: Trigger) -> Trigger:
        params = rows.trigger_params(trigger)
        if trigger.task_id is not None:
            stored = await self._one("put_task_trigger", params)
            return rows.trigger_from_row(stored[:-1])  # the last column is the notification
        row = await self._one("insert_trigger", params)
        if row is not None:
            return trigger.model_copy(update={"id": row[0]})
        queued = await self._one("get_trigger_by_dedupe_key", {"dedupe_key": trigger.dedupe_key})
        return rows.trigger_from_row(queued)

    async def next_due_at(self) -> dt.datetime | None:
        (fire_at,) = await self._one("next_due_at")
        return None if fire_at is None else rows.from_micros(fire_at)

    async def claim_due_triggers(
        self, *, limit: int = 10, now: dt.datetime | None = None
    ) -> list[Trigger]:
        params = {"now": rows.to_micros(now or utcnow()), "limit": limit}
        claimed = [rows.trigger_from_row(row) for row in await self._all("claim_due_triggers", params)]
        return sorted(claimed, key=lambda t: (t.fire_at, t.priority, t.id))

    async def list_triggers(self, task_id: str | None = None) -> list[Trigger]:
        if task_id is None:
            found = await self._all("list_triggers")
        else:
            found = await self._all("list_task_triggers", {"task_id": task_id})
        return [rows.trigger_from_row(row) for row in found]

    async def delete_triggers(self, task_id: str) -> int:
        return (await self.run("delete_triggers", {"task_id": task_id})).rowcount

    async def delete_trigger(self, trigger_id: int) -> bool:
        return (await self.run("delete_trigger", {"id": trigger_id})).rowcount > 0

    # ------------------------------------------------------------------ checkpoints

    async def put_checkpoint(self, checkpoint: Checkpoint) -> Checkpoint:
        task_id = checkpoint.task_id
        await self._lock("checkpoints", task_id)
        number = (await self._one("next_checkpoint_number", {"task_id": task_id}))[0]
        checkpoint = checkpoint.model_copy(update={"number": number})
        await self.run(
            "insert_checkpoint",
            {
                "task_id": task_id,
                "number": number,
                "created_at": rows.to_micros(checkpoint.created_at),
                "record": checkpoint.to_json(),
            },
        )
        return checkpoint

    async def get_checkpoint(self, task_id: str, number: int) -> Checkpoint:
        row = await self._one("get_checkpoint", {"task_id": task_id, "number": number})
        if row is None:
            raise CheckpointNotFound(f"task {task_id} has no checkpoint {number}")
        return Checkpoint.from_json(row[0])

    async def latest_checkpoint(self, task_id: str) -> Checkpoint | None:
        row = await self._one("latest_checkpoint", {"task_id": task_id})
        return None if row is None else Checkpoint.from_json(row[0])

    async def list_checkpoints(self, task_id: str) -> list[Checkpoint]:
        found = await self._all("list_checkpoints", {"task_id": task_id})
        return [Checkpoint.from_json(r) for (r,) in found]

    async def rotate_checkpoints(
        self,
        *,
        keep: int | None = None,
        older_than: dt.timedelta | None = None,
        task_id: str | None = None,
        now: dt.datetime | None = None,
    ) -> int:
        if task_id is None:
            found = await self._all("list_checkpoint_ages")
        else:
            found = await self._all("list_task_checkpoint_ages", {"task_id": task_id})
        ages = [(t, n, rows.from_micros(c)) for t, n, c in found]
        doomed = checkpoints_to_drop(ages, keep=keep, older_than=older_than, now=now or utcnow())
        for task, number in doomed:
            await self.run("delete_checkpoint", {"task_id": task, "number": number})
        return len(doomed)

    # ------------------------------------------------------------------ approvals

    async def request_approval(self, approval: Approval) -> Approval:
        await self.run("insert_approval", rows.approval_params(approval))
        stored = await self.get_approval(approval.task_id, approval.seq)
        assert stored is not None
        return stored

    async def get_approval(self, task_id: str, seq: int) -> Approval | None:
        row = await self._one("get_approval", {"task_id": task_id, "seq": seq})
        return None if row is None else Approval.from_json(row[0])

    async def decide_approval(self, approval: Approval) -> Approval:
        if (await self.run("update_approval", rows.approval_params(approval))).rowcount == 0:
            raise ConflictError(
                f"task {approval.task_id} has no pending approval for operation {approval.seq}"
            )
        return approval

    async def list_approvals(
        self, task_id: str | None = None, *, pending_only: bool = False
    ) -> list[Approval]:
        params = {"task_id": task_id, "status": str(ApprovalStatus.PENDING) if pending_only else None}
        return [Approval.from_json(r) for (r,) in await self._all("list_approvals", params)]

    # ------------------------------------------------------------------ sessions

    async def get_session(self, session_id: str) -> Session:
        row = await self._one("get_session", {"id": session_id})
        if row is None:
            raise SessionNotFound(session_id)
        return Session.from_json(row[0])

    async def put_session(self, session: Session) -> Session:
        stored = session.model_copy(update={"version": session.version + 1, "updated_at": utcnow()})
        params = {
            "id": session.id,
            "version": stored.version,
            "expected_version": session.version,
            "updated_at": rows.to_micros(stored.updated_at),
            "record": stored.to_json(),
        }
        query = "insert_session" if session.version == 0 else "update_session"
        if (await self.run(query, params)).rowcount == 0:
            raise ConflictError(
                f"session {session.id!r} changed since version {session.version} was read"
            )
        return stored

    async def list_sessions(self) -> list[Session]:
        return [Session.from_json(r) for (r,) in await self._all("list_sessions")]

    # ------------------------------------------------------------------ leases

    async def claim_lease(
        self,
        task_id: str,
        owner: str,
        ttl: float,
        *,
        host: str = "",
        pid: int = 0,
        take_over: bool = False,
        now: dt.datetime | None = None,
    ) -> Lease | None:
        now = now or utcnow()
        params = {
            "task_id": task_id,
            "owner": owner,
            "host": host,
            "pid": pid,
            "expires_at": rows.to_micros(now + dt.timedelta(seconds=ttl)),
            "now": rows.to_micros(now),
            "take_over": take_over,
        }
        row = await self._one("claim_lease", params)
        return None if row is None else rows.lease_from_row(row)

    async def renew_lease(
        self, lease: Lease, ttl: float, *, now: dt.datetime | None = None
    ) -> Lease:
        renewed = lease.model_copy(
            update={"expires_at": (now or utcnow()) + dt.timedelta(seconds=ttl)}
        )
        if await self._one("renew_lease", rows.lease_params(renewed)) is None:
            raise LeaseLost(f"lease {lease.token} on task {lease.task_id} was released or replaced")
        return renewed

    async def release_lease(self, lease: Lease, *, now: dt.datetime | None = None) -> None:
        params = {**rows.lease_params(lease), "now": rows.to_micros(now or utcnow())}
        if await self._one("release_lease", params) is None:
            raise LeaseLost(f"lease {lease.token} on task {lease.task_id} was released or replaced")

    async def get_lease(self, task_id: str) -> Lease | None:
        row = await self._one("get_lease", {"task_id": task_id})
        return None if row is None else rows.lease_from_row(row)

    async def lease_history(self, task_id: str) -> list[Lease]:
        return [rows.lease_from_row(row) for row in await self._all("lease_history", {"task_id": task_id})]

    async def claim_tasks(
        self,
        owner: str,
        ttl: float,
        *,
        host: str = "",
        pid: int = 0,
        limit: int = 10,
        skip: Collection[str] = (),
        now: dt.datetime | None = None,
    ) -> list[Lease]:
        now = now or utcnow()
        params = {
            "owner": owner,
            "host": host,
            "pid": pid,
            "expires_at": rows.to_micros(now + dt.timedelta(seconds=ttl)),
            "now": rows.to_micros(now),
            "limit": limit,
            "skip": list(skip),
        }
        return [rows.lease_from_row(row) for row in await self._all("claim_tasks", params)]
