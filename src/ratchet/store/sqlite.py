"""The SQLite store: one file, WAL, safe for several processes on one machine.

Writes run in ``BEGIN IMMEDIATE`` transactions, so a writer takes the file's
write lock before reading what it will change. Statements run on the event
loop's thread: a WAL commit without a sync takes microseconds, less than a hop
to a worker thread would. Waiting for another process's write lock, though,
happens in short slices with ``await asyncio.sleep`` in between, so a busy
file never freezes the loop (heartbeats keep beating).

``durability="normal"`` (``synchronous=NORMAL``) survives a killed process: a
commit is in the WAL before it returns. ``durability="full"`` also syncs the
WAL on every commit, so it survives a power loss, at the cost of an fsync per
commit.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
from .base import (
    TRIGGERS,
    StateStore,
    TransactionGate,
    checkpoints_to_drop,
    events_topic,
)
from .ops import StoreOps
from .sqlite_schema import check_file, migrate, prepare

__all__ = ["SqliteStore", "migrate"]

_NO_LIMIT = -1
_WHOLE = 1 << 62
_INTENT_RESET = {
    "status": OpStatus.STARTED, "output": None, "error": None, "error_type": None,
    "finished_at": None, "next_attempt_at": None,
}
_TO_END = 2**31 - 1  # substr() overflows on larger lengths


class SqliteStore(StateStore):
    """The store of a ``sqlite:///PATH`` URL."""

    def __init__(
        self,
        path: str | Path,
        *,
        durability: str = "normal",
        create: bool = True,
        lock_timeout: float = 30.0,
    ) -> None:
        if durability not in ("normal", "full"):
            raise ValueError(f"durability must be 'normal' or 'full', not {durability!r}")
        self.path = Path(path)
        self.url = f"sqlite:///{path}"
        self.durability = durability
        self.create = create
        self.lock_timeout = lock_timeout
        self._conn: sqlite3.Connection | None = None
        self._gate = TransactionGate()
        self._ops: _SqliteOps | None = None

    # ------------------------------------------------------------------ opening

    async def open(self) -> None:
        check_file(self.path, create=self.create)
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        try:
            prepare(conn, self.path, durability=self.durability, lock_timeout=self.lock_timeout)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._ops = _SqliteOps(conn)

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
            self._ops = None

    async def schema_version(self) -> int:
        async with self.reading():
            return self._connection().execute(
                catalogue.queries("sqlite")["schema_version"]
            ).fetchone()[0]

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"the store {self.url} is not open")
        return self._conn

    # ------------------------------------------------------------------ transactions

    def transaction(self, *, fence: Lease | None = None) -> _Transaction:
        return _Transaction(self, write=True, fence=fence)

    def reading(self) -> _Transaction:
        return _Transaction(self, write=False, fence=None)

    async def _begin(self, conn: sqlite3.Connection, write: bool) -> None:
        if not write:
            conn.execute("BEGIN")
            return
        deadline = time.monotonic() + self.lock_timeout
        pause = 0.001
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"{self.path} stayed locked by another process for "
                        f"{self.lock_timeout:g} s"
                    ) from exc
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.05)


class _Transaction:
    """``async with``: one SQLite transaction, committed on success, rolled back on error."""

    __slots__ = ("_store", "_write", "_fence")

    def __init__(self, store: SqliteStore, *, write: bool, fence: Lease | None) -> None:
        self._store = store
        self._write = write
        self._fence = fence

    async def __aenter__(self) -> _SqliteOps:
        store = self._store
        conn = store._connection()
        await store._gate.enter()
        try:
            await store._begin(conn, self._write)
        except sqlite3.Error as exc:
            store._gate.leave()
            raise StoreError(f"SQLite error on {store.path}: {exc}") from exc
        except BaseException:
            store._gate.leave()
            raise
        assert store._ops is not None
        if self._fence is not None:
            try:
                store._ops.check_fence(self._fence)
            except BaseException:
                conn.execute("ROLLBACK")
                store._gate.leave()
                raise
        return store._ops

    async def __aexit__(self, exc_type: type | None, exc: BaseException | None, tb: Any) -> None:
        store = self._store
        conn = store._connection()
        assert store._ops is not None
        touched, store._ops.touched = store._ops.touched, set()
        try:
            if exc_type is None:
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error as error:
                    conn.execute("ROLLBACK")
                    raise StoreError(f"SQLite could not commit to {store.path}: {error}") from error
            else:
                conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"SQLite error on {store.path}: {exc}") from exc
        finally:
            store._gate.leave()
        if exc_type is None:
            store.publish(touched)


class _SqliteOps(StoreOps):
    """The operations, run on a connection inside a transaction the caller opened."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._c = conn
        self._q = catalogue.queries("sqlite")
        self.touched: set[str] = set()  # change-feed topics of the open transaction

    def _run(self, name: str, params: dict[str, Any] | None = None) -> sqlite3.Cursor:
        return self._c.execute(self._q[name], params or {})

    def check_fence(self, lease: Lease) -> None:
        row = self._run("check_lease", {"task_id": lease.task_id}).fetchone()
        if row is None or row[0] != lease.token or row[1]:
            raise LeaseLost(
                f"lease {lease.token} of {lease.owner} on task {lease.task_id} is no longer current"
            )

    # ------------------------------------------------------------------ tasks

    async def create_task(self, task: Task) -> Task:
        try:
            self._run("insert_task", rows.task_params(task))
        except sqlite3.IntegrityError as exc:
            raise DuplicateRecord(f"a task with id {task.id!r} already exists") from exc
        return task

    async def get_task(self, task_id: str) -> Task:
        row = self._run("get_task", {"id": task_id}).fetchone()
        if row is None:
            raise TaskNotFound(task_id)
        return Task.from_json(row[0])

    async def list_tasks(
        self, status: TaskStatus | None = None, *, limit: int | None = None
    ) -> list[Task]:
        limit = _NO_LIMIT if limit is None else limit
        if status is None:
            found = self._run("list_tasks", {"limit": limit})
        else:
            found = self._run("list_tasks_by_status", {"status": str(TaskStatus(status)), "limit": limit})
        return [Task.from_json(record) for (record,) in found]

    async def update_task(self, task: Task) -> Task:
        stored = await self.get_task(task.id)
        check_task_move(task.id, stored.status, task.status)
        self._run("update_task", rows.task_params(task))
        return task

    async def list_orphaned_tasks(
        self, *, limit: int = 10, now: dt.datetime | None = None
    ) -> list[Task]:
        params = {"now": rows.to_micros(now or utcnow()), "limit": limit}
        return [Task.from_json(record) for (record,) in self._run("list_orphaned_tasks", params)]

    # ------------------------------------------------------------------ steps

    async def replace_steps(self, task_id: str, steps: Sequence[Step]) -> None:
        await self.get_task(task_id)
        self._run("delete_steps", {"task_id": task_id})
        for step in steps:
            if step.task_id != task_id:
                raise ValueError(f"{step.label} does not belong to task {task_id}")
            self._run("insert_step", rows.step_params(step))

    async def update_step(self, step: Step) -> Step:
        row = self._run("get_step_status", {"task_id": step.task_id, "idx": step.index}).fetchone()
        if row is None:
            raise StepNotFound(step.task_id, step.index)
        check_step_move(step.label, StepStatus(row[0]), step.status)
        self._run("update_step", rows.step_params(step))
        return step

    async def list_steps(self, task_id: str) -> list[Step]:
        return [Step.from_json(r) for (r,) in self._run("list_steps", {"task_id": task_id})]

    # ------------------------------------------------------------------ journal

    async def record_op_started(self, op: Operation) -> Operation:
        if op.is_finished or op.output is not None or op.error is not None or op.finished_at:
            op = op.model_copy(update=_INTENT_RESET)
        if self._run("record_op_started", rows.op_params(op)).rowcount == 0:
            raise DuplicateRecord(f"operation {op.seq} of task {op.task_id} already succeeded")
        return op

    async def record_op_finished(self, op: Operation) -> Operation:
        if op.status is OpStatus.STARTED:
            raise ValueError("record_op_finished needs a succeeded or failed operation")
        if op.finished_at is None:
            op = op.model_copy(update={"finished_at": utcnow()})
        if self._run("finish_op", rows.op_outcome_params(op)).rowcount == 0:
            if self._run("insert_finished_op", rows.op_params(op)).rowcount == 0:
                raise DuplicateRecord(f"operation {op.seq} of task {op.task_id} already succeeded")
        return op

    async def get_op(self, task_id: str, seq: int) -> Operation | None:
        row = self._run("get_op", {"task_id": task_id, "seq": seq}).fetchone()
        return None if row is None else rows.op_from_row(row)

    async def list_ops(self, task_id: str, *, after_seq: int = -1) -> list[Operation]:
        found = self._run("list_ops", {"task_id": task_id, "after_seq": after_seq})
        return [rows.op_from_row(row) for row in found]

    # ------------------------------------------------------------------ messages

    async def append_messages(self, messages: Sequence[Message]) -> list[Message]:
        next_seq: dict[str, int] = {}
        stored = []
        for message in messages:
            thread = message.thread_id
            if thread not in next_seq:
                next_seq[thread] = self._run("next_message_seq", {"thread_id": thread}).fetchone()[0]
            message = message.model_copy(update={"seq": next_seq[thread]})
            next_seq[thread] += 1
            self._run(
                "insert_message",
                {"thread_id": thread, "seq": message.seq, "record": message.to_json()},
            )
            stored.append(message)
        return stored

    async def list_messages(
        self, thread_id: str, *, start: int = 0, end: int | None = None
    ) -> list[Message]:
        params = {"thread_id": thread_id, "start": start, "end": _WHOLE if end is None else end}
        return [Message.from_json(r) for (r,) in self._run("list_messages", params)]

    # ------------------------------------------------------------------ events

    async def append_event(self, event: Event) -> Event:
        seq = self._run("append_event", rows.event_params(event)).fetchone()[0]
        self.touched.add(events_topic(event.task_id))
        return event.model_copy(update={"seq": seq})

    async def list_events(
        self, task_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> list[Event]:
        params = {"task_id": task_id, "after_seq": after_seq, "limit": _NO_LIMIT if limit is None else limit}
        return [rows.event_from_row(row) for row in self._run("list_events", params)]

    async def last_events(self, task_id: str, count: int) -> list[Event]:
        found = self._run("last_events", {"task_id": task_id, "count": count})
        return [rows.event_from_row(row) for row in found]

    # ------------------------------------------------------------------ artifacts

    async def put_artifact(self, artifact: Artifact, content: bytes) -> Artifact:
        try:
            self._run("insert_artifact", rows.artifact_params(artifact, content))
        except sqlite3.IntegrityError as exc:
            raise DuplicateRecord(f"an artifact with id {artifact.id!r} already exists") from exc
        return artifact.model_copy(update={"bytes": len(content)})

    async def get_artifact(self, artifact_id: str) -> Artifact:
        row = self._run("get_artifact", {"id": artifact_id}).fetchone()
        if row is None:
            raise ArtifactNotFound(artifact_id)
        return rows.artifact_from_row(row)

    async def read_artifact(
        self, artifact_id: str, *, offset: int = 0, length: int | None = None
    ) -> bytes:
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("offset and length must not be negative")
        params = {"id": artifact_id, "offset": offset, "length": _TO_END if length is None else min(length, _TO_END)}
        row = self._run("read_artifact", params).fetchone()
        if row is None:
            raise ArtifactNotFound(artifact_id)
        return bytes(row[0] or b"")

    async def list_artifacts(self, task_id: str) -> list[Artifact]:
        found = self._run("list_artifacts", {"task_id": task_id})
        return [rows.artifact_from_row(row) for row in found]

    # ------------------------------------------------------------------ triggers

    async def put_trigger(self, trigger: Trigger) -> Trigger:
        self.touched.add(TRIGGERS)
        params = rows.trigger_params(trigger)
        if trigger.task_id is not None:
            return rows.trigger_from_row(self._run("put_task_trigger", params).fetchone())
        row = self._run("insert_trigger", params).fetchone()
        if row is not None:
            return trigger.model_copy(update={"id": row[0]})
        queued = self._run("get_trigger_by_dedupe_key", {"dedupe_key": trigger.dedupe_key})
        return rows.trigger_from_row(queued.fetchone())

    async def next_due_at(self) -> dt.datetime | None:
        (fire_at,) = self._run("next_due_at").fetchone()
        return None if fire_at is None else rows.from_micros(fire_at)

    async def claim_due_triggers(
        self, *, limit: int = 10, now: dt.datetime | None = None
    ) -> list[Trigger]:
        params = {"now": rows.to_micros(now or utcnow()), "limit": limit}
        claimed = [rows.trigger_from_row(row) for row in self._run("claim_due_triggers", params)]
        return sorted(claimed, key=lambda t: (t.fire_at, t.priority, t.id))

    async def list_triggers(self, task_id: str | None = None) -> list[Trigger]:
        if task_id is None:
            found = self._run("list_triggers")
        else:
            found = self._run("list_task_triggers", {"task_id": task_id})
        return [rows.trigger_from_row(row) for row in found]

    async def delete_triggers(self, task_id: str) -> int:
        return self._run("delete_triggers", {"task_id": task_id}).rowcount

    async def delete_trigger(self, trigger_id: int) -> bool:
        return self._run("delete_trigger", {"id": trigger_id}).rowcount > 0

    # ------------------------------------------------------------------ checkpoints

    async def put_checkpoint(self, checkpoint: Checkpoint) -> Checkpoint:
        task_id = checkpoint.task_id
        number = self._run("next_checkpoint_number", {"task_id": task_id}).fetchone()[0]
        checkpoint = checkpoint.model_copy(update={"number": number})
        self._run(
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
        row = self._run("get_checkpoint", {"task_id": task_id, "number": number}).fetchone()
        if row is None:
            raise CheckpointNotFound(f"task {task_id} has no checkpoint {number}")
        return Checkpoint.from_json(row[0])

    async def latest_checkpoint(self, task_id: str) -> Checkpoint | None:
        row = self._run("latest_checkpoint", {"task_id": task_id}).fetchone()
        return None if row is None else Checkpoint.from_json(row[0])

    async def list_checkpoints(self, task_id: str) -> list[Checkpoint]:
        found = self._run("list_checkpoints", {"task_id": task_id})
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
            found = self._run("list_checkpoint_ages")
        else:
            found = self._run("list_task_checkpoint_ages", {"task_id": task_id})
        ages = [(t, n, rows.from_micros(c)) for t, n, c in found]
        doomed = checkpoints_to_drop(ages, keep=keep, older_than=older_than, now=now or utcnow())
        for task, number in doomed:
            self._run("delete_checkpoint", {"task_id": task, "number": number})
        return len(doomed)

    # ------------------------------------------------------------------ approvals

    async def request_approval(self, approval: Approval) -> Approval:
        self._run("insert_approval", rows.approval_params(approval))
        stored = await self.get_approval(approval.task_id, approval.seq)
        assert stored is not None
        return stored

    async def get_approval(self, task_id: str, seq: int) -> Approval | None:
        row = self._run("get_approval", {"task_id": task_id, "seq": seq}).fetchone()
        return None if row is None else Approval.from_json(row[0])

    async def decide_approval(self, approval: Approval) -> Approval:
        if self._run("update_approval", rows.approval_params(approval)).rowcount == 0:
            raise ConflictError(
                f"task {approval.task_id} has no pending approval for operation {approval.seq}"
            )
        return approval

    async def list_approvals(
        self, task_id: str | None = None, *, pending_only: bool = False
    ) -> list[Approval]:
        params = {"task_id": task_id, "status": str(ApprovalStatus.PENDING) if pending_only else None}
        return [Approval.from_json(r) for (r,) in self._run("list_approvals", params)]

    # ------------------------------------------------------------------ sessions

    async def get_session(self, session_id: str) -> Session:
        row = self._run("get_session", {"id": session_id}).fetchone()
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
        if self._run(query, params).rowcount == 0:
            raise ConflictError(
                f"session {session.id!r} changed since version {session.version} was read"
            )
        return stored

    async def list_sessions(self) -> list[Session]:
        return [Session.from_json(r) for (r,) in self._run("list_sessions")]

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
        current = await self.get_lease(task_id)
        live = current is not None and current.is_live(now)
        if live and not take_over:
            return None
        lease = Lease(
            task_id=task_id,
            owner=owner,
            token=(current.token if current else 0) + 1,
            expires_at=now + dt.timedelta(seconds=ttl),
            host=host,
            pid=pid,
            granted_at=now,
            took_over=live,
        )
        params = rows.lease_params(lease)
        self._run("put_lease", params)
        self._run("record_lease_claim", params)
        return lease

    async def renew_lease(
        self, lease: Lease, ttl: float, *, now: dt.datetime | None = None
    ) -> Lease:
        renewed = lease.model_copy(
            update={"expires_at": (now or utcnow()) + dt.timedelta(seconds=ttl)}
        )
        params = rows.lease_params(renewed)
        if self._run("renew_lease", params).rowcount == 0:
            raise LeaseLost(f"lease {lease.token} on task {lease.task_id} was released or replaced")
        self._run("renew_lease_claim", params)
        return renewed

    async def release_lease(self, lease: Lease, *, now: dt.datetime | None = None) -> None:
        params = {**rows.lease_params(lease), "now": rows.to_micros(now or utcnow())}
        if self._run("release_lease", params).rowcount == 0:
            raise LeaseLost(f"lease {lease.token} on task {lease.task_id} was released or replaced")
        self._run("release_lease_claim", params)
        self.touched.add(TRIGGERS)

    async def get_lease(self, task_id: str) -> Lease | None:
        row = self._run("get_lease", {"task_id": task_id}).fetchone()
        return None if row is None else rows.lease_from_row(row)

    async def lease_history(self, task_id: str) -> list[Lease]:
        return [rows.lease_from_row(row) for row in self._run("lease_history", {"task_id": task_id})]
