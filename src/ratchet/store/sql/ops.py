"""`SqlOps`: every store operation, written once for every SQL database.

Each operation runs named queries through a `Driver` (driver.py); the two
dialects differ only in the text of those queries (sqlite/queries.sql,
postgresql/queries.sql), never here. What each write locks is said by
its queries: on PostgreSQL a task's row while its status moves
(``lock_task``: ``FOR UPDATE``), the lease row of a fenced transaction
(``check_fence``: ``FOR SHARE``), a per-owner lock while numbering rows
(`Driver.lock`); SQLite's ``BEGIN IMMEDIATE`` holds the whole file instead.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Collection, Sequence

from ...errors import (
    ArtifactNotFound,
    CheckpointNotFound,
    ConflictError,
    CorruptRecord,
    DuplicateRecord,
    LeaseLost,
    SessionNotFound,
    StepNotFound,
    TaskNotFound,
)
from ...records import (
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
    Task,
    TaskChange,
    TaskChangeKind,
    TaskStatus,
    Trigger,
    check_step_move,
    check_task_move,
    compact_json,
    utcnow,
)
from ..changes import TRIGGERS, events_topic
from ..ops import StoreOps, checkpoints_to_drop, claim_order, priority_of
from . import content, rows
from .driver import Driver, Params, Row
from .grants import SqlGrants
from .inbox import SqlInbox
from .journal_counts import SqlJournalCounts
from .langgraph import SqlLangGraph
from .leases import SqlLeases
from .limits import SqlLimits
from .spend import SqlSpend
from .streams import SqlStreams
from .task_changes import SqlTaskChanges
from .task_delete import SqlTaskDelete
from .task_rows import SqlTaskRows
from .workers import SqlWorkers

__all__ = ["SqlOps"]

_INTENT_RESET = {
    "status": OpStatus.STARTED,
    "output": None,
    "error": None,
    "error_type": None,
    "finished_at": None,
    "next_attempt_at": None,
}
_INT4_MAX = 2**31 - 1  # substring offsets and message seqs are 32-bit integers


class SqlOps(
    SqlInbox,
    SqlGrants,
    SqlTaskChanges,
    SqlTaskRows,
    SqlTaskDelete,
    SqlLangGraph,
    SqlLeases,
    SqlWorkers,
    SqlSpend,
    SqlJournalCounts,
    SqlStreams,
    SqlLimits,
    StoreOps,
):
    """The operations, run through a driver inside a transaction the caller opened."""

    def __init__(self, driver: Driver) -> None:
        self._d = driver
        self.touched: set[str] = set()  # change-feed topics the transaction's writes touched
        self.noted_changes: list[TaskChange] = []  # task changes to log as the transaction commits
        # The last journal write's input, (task, seq, the input, its JSON), when it held nothing
        # large: a call's outcome carries its intent's input (the same object), encoded once.
        self._last_input: tuple[str, int, object, str | None] | None = None

    async def schema_version(self) -> int:
        row = await self._d.one("schema_version")
        assert row is not None
        return int(row[0])

    async def check_fence(self, lease: Lease) -> None:
        def lost() -> LeaseLost:
            return LeaseLost(
                f"lease {lease.token} of {lease.owner} on task {lease.task_id} is no longer current"
            )

        await self._d.check("check_fence", (lease.task_id, lease.token), lost)

    async def _next_number(self, kind: str, query: str, owner: str, params: Params) -> int:
        """The next number of `owner`'s `kind` rows, held for this transaction until it commits."""
        await self._d.lock(f"ratchet:{kind}:{owner}")
        row = await self._d.one(query, params)
        assert row is not None
        return int(row[0])

    # ------------------------------------------------------------------ tasks

    async def create_task(self, task: Task) -> Task:
        if await self._d.execute("insert_task", rows.task_params(task)) == 0:
            raise DuplicateRecord(f"a task with id {task.id!r} already exists")
        await self._index_task(task, created=True)
        self._note_task_change(TaskChange.of(task, TaskChangeKind.CREATED))
        return task

    async def get_task(self, task_id: str) -> Task:
        row = await self._d.one("get_task", {"id": task_id})
        if row is None:
            raise TaskNotFound(task_id)
        return rows.task_from_row(row)

    async def _lock_task(self, task_id: str) -> TaskStatus:
        row = await self._d.one("lock_task", {"id": task_id})
        if row is None:
            raise TaskNotFound(task_id)
        return rows.task_status(row[0], task_id)

    async def list_tasks(
        self,
        status: TaskStatus | None = None,
        *,
        limit: int | None = None,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Task]:
        if status is None:
            found = await self._d.all("list_tasks", {"limit": limit})
        else:
            found = await self._d.all(
                "list_tasks_by_status", {"status": str(TaskStatus(status)), "limit": limit}
            )
        return rows.decode_each(found, rows.task_from_row, unreadable)

    async def get_task_locked(self, task_id: str) -> Task:
        row = await self._d.one("get_task_locked", {"id": task_id})
        if row is None:
            raise TaskNotFound(task_id)
        return rows.task_from_row(row)

    async def hold_run(self, task_id: str) -> None:
        await self._d.one("hold_run", {"task_id": task_id})

    async def list_children(self, parent_id: str) -> list[Task]:
        found = await self._d.all("list_children", {"parent_id": parent_id})
        return [rows.task_from_row(row) for row in found]

    async def update_task(self, task: Task) -> Task:
        row = await self._d.one("lock_task", {"id": task.id})
        if row is None:
            raise TaskNotFound(task.id)
        check_task_move(task.id, rows.task_status(row[0], task.id), task.status)
        await self._d.execute("update_task", rows.task_params(task))
        if task.status.is_terminal:  # its result or error is set: what a search finds it by
            await self._index_task(task, created=False)
            if not rows.task_status(row[0], task.id).is_terminal:
                await self._end_stream(task.id)
        if (row[0], row[1]) != (task.status, task.waiting_on):
            self._note_task_change(TaskChange.of(task, TaskChangeKind.STATUS))
        return task

    async def list_orphaned_tasks(
        self,
        *,
        limit: int = 10,
        now: dt.datetime | None = None,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Task]:
        params = {"now": rows.to_micros(now or utcnow()), "limit": limit}
        found = await self._d.all("list_orphaned_tasks", params)
        return rows.decode_each(found, rows.task_from_row, unreadable)

    # ------------------------------------------------------------------ steps

    async def replace_steps(self, task_id: str, steps: Sequence[Step]) -> None:
        await self._lock_task(task_id)
        for step in steps:
            if step.task_id != task_id:
                raise ValueError(f"{step.label} does not belong to task {task_id}")
        await self._d.execute("delete_steps", {"task_id": task_id})
        await self._d.execute_many("insert_step", [rows.step_params(step) for step in steps])

    async def update_step(self, step: Step) -> Step:
        row = await self._d.one("lock_step", {"task_id": step.task_id, "idx": step.index})
        if row is None:
            raise StepNotFound(step.task_id, step.index)
        check_step_move(step.label, rows.step_status(row[0], step.task_id, step.index), step.status)
        await self._d.execute("update_step", rows.step_params(step))
        return step

    async def list_steps(self, task_id: str) -> list[Step]:
        found = await self._d.all("list_steps", {"task_id": task_id})
        return [rows.step_from_row(row, task_id) for row in found]

    # ------------------------------------------------------------------ journal

    async def record_op_started(self, op: Operation) -> Operation:
        if op.is_finished or op.output is not None or op.error is not None or op.finished_at:
            op = op.model_copy(update=_INTENT_RESET)
        values = self._op_values(op)
        if values is None:
            values = await self._stored_op_values(op)
        await self._d.write("record_op_started", values, _already_succeeded(op))
        return op

    async def record_op_finished(self, op: Operation) -> Operation:
        if op.status is OpStatus.STARTED:
            raise ValueError("record_op_finished needs a succeeded or failed operation")
        if op.finished_at is None:
            op = op.model_copy(update={"finished_at": utcnow()})
        values = self._op_values(op)
        if values is None:
            values = await self._stored_op_values(op)
        await self._d.write("record_op_finished", values, _already_succeeded(op))
        return op

    def _op_values(self, op: Operation) -> tuple[object, ...] | None:
        """The row of `op`; None when its input may have large parts to store first (`_stored_op_values`)."""
        last = self._last_input
        if last is not None and last[2] is op.input and last[0] == op.task_id and last[1] == op.seq:
            return rows.op_values(op, last[3])
        if content.may_apply(op.input):
            return None
        return self._encoded_op_values(op)

    async def _stored_op_values(self, op: Operation) -> tuple[object, ...]:
        """The row of `op`, its input's large parts stored by content (`content.stored`)."""
        stored = await content.stored(self._d, op)
        if stored is not op:  # content rows written in this transaction: nothing to reuse later
            self._last_input = None
            return rows.op_values(stored)
        return self._encoded_op_values(op)

    def _encoded_op_values(self, op: Operation) -> tuple[object, ...]:
        encoded = None if op.input is None else compact_json.encode(op.input)
        self._last_input = (op.task_id, op.seq, op.input, encoded)
        return rows.op_values(op, encoded)

    async def get_op(self, task_id: str, seq: int) -> Operation | None:
        row = await self._d.one("get_op", {"task_id": task_id, "seq": seq})
        return None if row is None else (await content.loaded(self._d, task_id, [rows.op_from_row(row)]))[0]

    async def list_ops(
        self, task_id: str, *, after_seq: int = -1, limit: int | None = None
    ) -> list[Operation]:
        found = await self._all_of_task(
            "list_ops", {"task_id": task_id, "after_seq": after_seq, "limit": limit}
        )
        return await content.loaded(self._d, task_id, [rows.op_from_row(row) for row in found])

    async def _all_of_task(self, name: str, params: Params) -> list[Row]:
        """The rows of query `name` over a task's journal or events: those of the live partition, or,
        when the query ends with a row of NULLs (an archived task, on PostgreSQL: its partitioned
        history), those of ``<name>_archived``, over every partition."""
        found = await self._d.all(name, params)
        if found and found[-1][0] is None:
            return await self._d.all(f"{name}_archived", params)
        return found

    # ------------------------------------------------------------------ messages

    async def append_messages(self, messages: Sequence[Message]) -> list[Message]:
        next_seq: dict[str, int] = {}
        stored = []
        for message in messages:
            thread = message.thread_id
            if thread not in next_seq:
                params = {"thread_id": thread}
                next_seq[thread] = await self._next_number("messages", "next_message_seq", thread, params)
            message = message.model_copy(update={"seq": next_seq[thread]})
            next_seq[thread] += 1
            stored.append(message)
        await self._d.execute_many(
            "insert_message",
            [{"thread_id": m.thread_id, "seq": m.seq, "record": m.to_json()} for m in stored],
        )
        return stored

    async def list_messages(self, thread_id: str, *, start: int = 0, end: int | None = None) -> list[Message]:
        end = _INT4_MAX if end is None else min(end, _INT4_MAX)
        params = {"thread_id": thread_id, "start": start, "end": end}
        found = await self._d.all("list_messages", params)
        return [rows.message_from_record(record, thread_id) for (record,) in found]

    # ------------------------------------------------------------------ events

    async def append_event(self, event: Event) -> Event:
        await self._d.lock(f"ratchet:events:{event.task_id}")
        row = await self._d.one("append_event", rows.event_params(event))
        assert row is not None
        self.touched.add(events_topic(event.task_id))
        return event.model_copy(update={"seq": row[0]})

    async def list_events(
        self,
        task_id: str,
        *,
        after_seq: int = 0,
        limit: int | None = None,
        unreadable: list[CorruptRecord] | None = None,
        kinds: Collection[str] | None = None,
    ) -> list[Event]:
        params = {
            "task_id": task_id,
            "after_seq": after_seq,
            "limit": limit,
            "kinds": None if kinds is None else json.dumps(sorted(kinds)),
        }
        found = await self._all_of_task("list_events", params)
        return rows.decode_each(found, rows.event_from_row, unreadable)

    async def last_events(
        self, task_id: str, count: int, *, unreadable: list[CorruptRecord] | None = None
    ) -> list[Event]:
        found = await self._all_of_task("last_events", {"task_id": task_id, "count": count})
        return rows.decode_each(found, rows.event_from_row, unreadable)

    # ------------------------------------------------------------------ artifacts

    async def put_artifact(self, artifact: Artifact, content: bytes) -> Artifact:
        if await self._d.execute("insert_artifact", rows.artifact_params(artifact, content)) == 0:
            raise DuplicateRecord(f"an artifact with id {artifact.id!r} already exists")
        return artifact.model_copy(update={"bytes": len(content)})

    async def get_artifact(self, artifact_id: str) -> Artifact:
        row = await self._d.one("get_artifact", {"id": artifact_id})
        if row is None:
            raise ArtifactNotFound(artifact_id)
        return rows.artifact_from_row(row)

    async def read_artifact(self, artifact_id: str, *, offset: int = 0, length: int | None = None) -> bytes:
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("offset and length must not be negative")
        params = {
            "id": artifact_id,
            "offset": min(offset, _INT4_MAX - 1),
            "length": _INT4_MAX if length is None else min(length, _INT4_MAX),
        }
        row = await self._d.one("read_artifact", params)
        if row is None:
            raise ArtifactNotFound(artifact_id)
        return bytes(row[0] or b"")

    async def list_artifacts(self, task_id: str) -> list[Artifact]:
        found = await self._d.all("list_artifacts", {"task_id": task_id})
        return [rows.artifact_from_row(row) for row in found]

    # ------------------------------------------------------------------ triggers

    async def put_trigger(self, trigger: Trigger) -> Trigger:
        params = rows.trigger_params(trigger)
        self.touched.add(TRIGGERS)
        if trigger.task_id is not None:
            stored = await self._d.one("put_task_trigger", params)
            assert stored is not None
            return rows.trigger_from_row(stored)
        row = await self._d.one("insert_trigger", params)
        if row is not None:
            return trigger.model_copy(update={"id": row[0], "priority": priority_of(trigger)})
        queued = await self._d.one("get_trigger_by_dedupe_key", {"dedupe_key": trigger.dedupe_key})
        assert queued is not None
        return rows.trigger_from_row(queued)

    async def next_due_at(self) -> dt.datetime | None:
        row = await self._d.one("next_due_at")
        return None if row is None or row[0] is None else rows.from_micros(row[0])

    async def count_tasks_by_status(self) -> dict[TaskStatus, int]:
        return {TaskStatus(status): count for status, count in await self._d.all("count_tasks_by_status")}

    async def due_trigger_summary(self, now: dt.datetime | None = None) -> tuple[int, dt.datetime | None]:
        row = await self._d.one("due_trigger_summary", {"now": rows.to_micros(now or utcnow())})
        if row is None or not row[0]:
            return 0, None
        return int(row[0]), rows.from_micros(row[1])

    async def claim_due_triggers(
        self,
        *,
        limit: int = 10,
        now: dt.datetime | None = None,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Trigger]:
        params = {"now": rows.to_micros(now or utcnow()), "limit": limit}
        found = await self._d.all("claim_due_triggers", params)
        claimed = rows.decode_each(found, rows.trigger_from_row, unreadable)
        return sorted(claimed, key=claim_order)

    async def list_triggers(self, task_id: str | None = None) -> list[Trigger]:
        if task_id is None:
            found = await self._d.all("list_triggers")
        else:
            found = await self._d.all("list_task_triggers", {"task_id": task_id})
        return [rows.trigger_from_row(row) for row in found]

    async def delete_triggers(self, task_id: str) -> int:
        return await self._d.execute("delete_triggers", {"task_id": task_id})

    async def delete_trigger(self, trigger_id: int) -> bool:
        return await self._d.execute("delete_trigger", {"id": trigger_id}) > 0

    async def update_trigger(self, trigger: Trigger) -> bool:
        params = rows.trigger_params(trigger)
        self.touched.add(TRIGGERS)  # an earlier fire time (a resumed schedule) wakes the workers
        changed = {"id": trigger.id, "fire_at": params["fire_at"], "payload": params["payload"]}
        return await self._d.execute("update_trigger", changed) > 0

    # ------------------------------------------------------------------ checkpoints

    async def put_checkpoint(self, checkpoint: Checkpoint) -> Checkpoint:
        task_id = checkpoint.task_id
        params = {"task_id": task_id}
        number = await self._next_number("checkpoints", "next_checkpoint_number", task_id, params)
        checkpoint = checkpoint.model_copy(update={"number": number})
        await self._d.execute(
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
        row = await self._d.one("get_checkpoint", {"task_id": task_id, "number": number})
        if row is None:
            raise CheckpointNotFound(f"task {task_id} has no checkpoint {number}")
        return rows.checkpoint_from_record(row[0], task_id)

    async def latest_checkpoint(self, task_id: str) -> Checkpoint | None:
        row = await self._d.one("latest_checkpoint", {"task_id": task_id})
        return None if row is None else rows.checkpoint_from_record(row[0], task_id)

    async def list_checkpoints(self, task_id: str) -> list[Checkpoint]:
        found = await self._d.all("list_checkpoints", {"task_id": task_id})
        return [rows.checkpoint_from_record(record, task_id) for (record,) in found]

    async def rotate_checkpoints(
        self,
        *,
        keep: int | None = None,
        older_than: dt.timedelta | None = None,
        task_id: str | None = None,
        now: dt.datetime | None = None,
    ) -> int:
        if task_id is None:
            found = await self._d.all("list_checkpoint_ages")
        else:
            found = await self._d.all("list_task_checkpoint_ages", {"task_id": task_id})
        ages = [(t, n, rows.from_micros(c)) for t, n, c in found]
        doomed = checkpoints_to_drop(ages, keep=keep, older_than=older_than, now=now or utcnow())
        await self._d.execute_many(
            "delete_checkpoint", [{"task_id": task, "number": number} for task, number in doomed]
        )
        return len(doomed)

    # ------------------------------------------------------------------ approvals

    async def request_approval(self, approval: Approval) -> Approval:
        await self._d.execute("insert_approval", rows.approval_params(approval))
        stored = await self.get_approval(approval.task_id, approval.seq)
        assert stored is not None
        return stored

    async def get_approval(self, task_id: str, seq: int) -> Approval | None:
        row = await self._d.one("get_approval", {"task_id": task_id, "seq": seq})
        return None if row is None else rows.approval_from_row(row)

    async def decide_approval(self, approval: Approval) -> Approval:
        if await self._d.execute("update_approval", rows.approval_params(approval)) == 0:
            raise ConflictError(
                f"task {approval.task_id} has no pending approval for operation {approval.seq}"
            )
        return approval

    async def list_approvals(
        self,
        task_id: str | None = None,
        *,
        pending_only: bool = False,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Approval]:
        params = {"task_id": task_id, "status": str(ApprovalStatus.PENDING) if pending_only else None}
        found = await self._d.all("list_approvals", params)
        if unreadable is None:
            return [rows.approval_from_row(row) for row in found]
        return rows.decode_each(found, rows.approval_from_row, unreadable)

    # ------------------------------------------------------------------ sessions

    async def get_session(self, session_id: str) -> Session:
        row = await self._d.one("get_session", {"id": session_id})
        if row is None:
            raise SessionNotFound(session_id)
        return rows.session_from_record(row[0])

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
        if await self._d.execute(query, params) == 0:
            raise ConflictError(f"session {session.id!r} changed since version {session.version} was read")
        return stored

    async def list_sessions(self) -> list[Session]:
        return [rows.session_from_record(record) for (record,) in await self._d.all("list_sessions")]


def _already_succeeded(op: Operation) -> Callable[[], DuplicateRecord]:
    """What a journal write raises when the row it would change has already succeeded."""
    return lambda: DuplicateRecord(f"operation {op.seq} of task {op.task_id} already succeeded")
