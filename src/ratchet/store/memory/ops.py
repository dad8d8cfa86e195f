"""`MemoryOps`: the memory store's tables and every operation on them, the reference behaviour.

Records are kept as JSON text, as the SQL stores keep them, so nothing a
caller holds aliases what the store holds. Only this store writes them, so
none is ever unreadable: the ``unreadable`` lists of listings stay empty.
Every write goes through `UndoLog` (undo.py), so that the store (store.py)
can roll a transaction back.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections import Counter
from collections.abc import Collection, Sequence

from ...errors import (
    ArtifactNotFound,
    ConflictError,
    CorruptRecord,
    DuplicateRecord,
    LeaseLost,
    SessionNotFound,
    StepNotFound,
    TaskNotFound,
)
from ...limits import PRIORITY_DEFAULT
from ...records import (
    Approval,
    ApprovalStatus,
    Artifact,
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
    WaitReason,
    check_step_move,
    check_task_move,
    utcnow,
)
from ..changes import TRIGGERS, events_topic, stream_topic
from ..ops import StoreOps, claim_order, priority_of
from .checkpoints import MemoryCheckpoints
from .grants import MemoryGrants
from .inbox import MemoryInbox
from .journal_counts import MemoryJournalCounts
from .langgraph import MemoryLangGraph
from .leases import MemoryLeases
from .limits import MemoryLimits
from .spend import MemorySpend
from .streams import MemoryStreams
from .task_changes import MemoryTaskChanges
from .task_delete import MemoryTaskDelete
from .task_rows import MemoryTaskRows
from .workers import MemoryWorkers

__all__ = ["MemoryOps"]


class MemoryOps(
    MemoryInbox,
    MemoryGrants,
    MemoryCheckpoints,
    MemoryTaskChanges,
    MemoryTaskRows,
    MemoryTaskDelete,
    MemoryLangGraph,
    MemoryLeases,
    MemoryWorkers,
    MemorySpend,
    MemoryJournalCounts,
    MemoryStreams,
    MemoryLimits,
    StoreOps,
):
    """The tables, as dicts of JSON text (changed through `UndoLog`), and the operations on them."""

    def __init__(self) -> None:
        super().__init__()
        self.touched: set[str] = set()
        self.tasks: dict[str, str] = {}
        self.steps: dict[str, dict[int, str]] = {}
        self.ops: dict[str, dict[int, str]] = {}
        self.messages: dict[str, dict[int, str]] = {}
        self.events: dict[str, dict[int, str]] = {}
        self.artifacts: dict[str, tuple[str, bytes]] = {}
        self.triggers: dict[int, str] = {}
        self.sessions: dict[str, str] = {}
        self.approvals: dict[tuple[str, int], str] = {}
        self.next_trigger_id = itertools.count(1)

    async def schema_version(self) -> int:
        return 0

    async def check_fence(self, lease: Lease) -> None:
        if not self._is_current(lease):
            raise LeaseLost(
                f"lease {lease.token} of {lease.owner} on task {lease.task_id} is no longer current"
            )

    # ------------------------------------------------------------------ tasks

    async def create_task(self, task: Task) -> Task:
        if task.id in self.tasks:
            raise DuplicateRecord(f"a task with id {task.id!r} already exists")
        self._set(self.tasks, task.id, task.to_json())
        self._note_task_change(TaskChange.of(task, TaskChangeKind.CREATED))
        return task

    async def get_task(self, task_id: str) -> Task:
        if task_id not in self.tasks:
            raise TaskNotFound(task_id)
        return Task.from_json(self.tasks[task_id])

    async def list_tasks(
        self,
        status: TaskStatus | None = None,
        *,
        limit: int | None = None,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Task]:
        found = [Task.from_json(text) for text in self.tasks.values()]
        found = [t for t in found if status is None or t.status == status]
        found.sort(key=lambda t: t.created_at)
        return found if limit is None else found[:limit]

    async def get_task_locked(self, task_id: str) -> Task:
        return await self.get_task(task_id)  # one writer at a time here: reading is locking

    async def hold_run(self, task_id: str) -> None:
        return None  # one writer at a time here

    async def list_children(self, parent_id: str) -> list[Task]:
        return [task for task in await self.list_tasks() if task.parent_id == parent_id]

    async def update_task(self, task: Task) -> Task:
        stored = await self.get_task(task.id)
        check_task_move(task.id, stored.status, task.status)
        self._set(self.tasks, task.id, task.to_json())
        if (stored.status, stored.waiting_on) != (task.status, task.waiting_on):
            self._note_task_change(TaskChange.of(task, TaskChangeKind.STATUS))
        if task.status.is_terminal and not stored.status.is_terminal:
            self.touched.add(stream_topic(task.id))  # its end is no write to its stream: wake the followers
        return task

    async def list_orphaned_tasks(
        self,
        *,
        limit: int = 10,
        now: dt.datetime | None = None,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Task]:
        now = now or utcnow()
        woken = {Trigger.from_json(text).task_id for text in self.triggers.values()}
        found = []
        for task in await self.list_tasks():
            lease = await self.get_lease(task.id)
            children = await self.list_children(task.id) if task.waiting_on is WaitReason.CHILDREN else []
            if (
                (
                    task.status in (TaskStatus.QUEUED, TaskStatus.RUNNING)
                    or task.waiting_on in (WaitReason.TIMER, WaitReason.LIMIT)
                    or (
                        task.waiting_on is WaitReason.CHILDREN and all(c.status.is_terminal for c in children)
                    )
                )
                and (lease is None or not lease.is_live(now))
                and task.id not in woken
            ):
                found.append(task)
        return sorted(found, key=lambda t: t.priority)[:limit]  # then oldest first, as listed

    # ------------------------------------------------------------------ steps

    async def replace_steps(self, task_id: str, steps: Sequence[Step]) -> None:
        await self.get_task(task_id)
        for step in steps:
            if step.task_id != task_id:
                raise ValueError(f"{step.label} does not belong to task {task_id}")
        self._set(self.steps, task_id, {step.index: step.to_json() for step in steps})

    async def update_step(self, step: Step) -> Step:
        rows = self.steps.get(step.task_id, {})
        if step.index not in rows:
            raise StepNotFound(step.task_id, step.index)
        check_step_move(step.label, Step.from_json(rows[step.index]).status, step.status)
        self._set(rows, step.index, step.to_json())
        return step

    async def list_steps(self, task_id: str) -> list[Step]:
        rows = self.steps.get(task_id, {})
        return [Step.from_json(rows[index]) for index in sorted(rows)]

    # ------------------------------------------------------------------ journal

    def _check_not_succeeded(self, op: Operation) -> dict[int, str]:
        rows = self._rows(self.ops, op.task_id)
        if op.seq in rows and Operation.from_json(rows[op.seq]).status is OpStatus.SUCCEEDED:
            raise DuplicateRecord(f"operation {op.seq} of task {op.task_id} already succeeded")
        return rows

    async def record_op_started(self, op: Operation) -> Operation:
        rows = self._check_not_succeeded(op)
        op = op.model_copy(
            update={
                "status": OpStatus.STARTED,
                "output": None,
                "error": None,
                "error_type": None,
                "finished_at": None,
                "next_attempt_at": None,
            }
        )
        self._set(rows, op.seq, op.to_json())
        return op

    async def record_op_finished(self, op: Operation) -> Operation:
        if op.status is OpStatus.STARTED:
            raise ValueError("record_op_finished needs a succeeded or failed operation")
        rows = self._check_not_succeeded(op)
        if op.finished_at is None:
            op = op.model_copy(update={"finished_at": utcnow()})
        stored = op
        if op.seq in rows:
            before = Operation.from_json(rows[op.seq])
            # A later attempt brings its own start; the same attempt keeps the start its intent wrote.
            started_at = before.started_at if before.attempt == op.attempt else op.started_at
            stored = before.model_copy(
                update={
                    "started_at": started_at,
                    "attempt": op.attempt,
                    "status": op.status,
                    "output": op.output,
                    "error": op.error,
                    "error_type": op.error_type,
                    "next_attempt_at": op.next_attempt_at,
                    "meta": op.meta,
                    "finished_at": op.finished_at,
                }
            )
        self._set(rows, op.seq, stored.to_json())
        return op

    async def get_op(self, task_id: str, seq: int) -> Operation | None:
        text = self.ops.get(task_id, {}).get(seq)
        return None if text is None else Operation.from_json(text)

    async def list_ops(
        self, task_id: str, *, after_seq: int = -1, limit: int | None = None
    ) -> list[Operation]:
        rows = self.ops.get(task_id, {})
        seqs = [seq for seq in sorted(rows) if seq > after_seq]
        return [Operation.from_json(rows[seq]) for seq in seqs[:limit]]

    # ------------------------------------------------------------------ messages

    async def append_messages(self, messages: Sequence[Message]) -> list[Message]:
        stored = []
        for message in messages:
            rows = self._rows(self.messages, message.thread_id)
            message = message.model_copy(update={"seq": len(rows)})
            self._set(rows, message.seq, message.to_json())
            stored.append(message)
        return stored

    async def list_messages(self, thread_id: str, *, start: int = 0, end: int | None = None) -> list[Message]:
        rows = self.messages.get(thread_id, {})
        return [
            Message.from_json(rows[seq])
            for seq in sorted(rows)
            if seq >= start and (end is None or seq < end)
        ]

    # ------------------------------------------------------------------ events

    async def append_event(self, event: Event) -> Event:
        rows = self._rows(self.events, event.task_id)
        event = event.model_copy(update={"seq": len(rows) + 1})
        self._set(rows, event.seq, event.to_json())
        self.touched.add(events_topic(event.task_id))
        return event

    async def list_events(
        self,
        task_id: str,
        *,
        after_seq: int = 0,
        limit: int | None = None,
        unreadable: list[CorruptRecord] | None = None,
        kinds: Collection[str] | None = None,
    ) -> list[Event]:
        rows = self.events.get(task_id, {})
        found = [Event.from_json(rows[seq]) for seq in sorted(rows) if seq > after_seq]
        if kinds is not None:
            found = [event for event in found if event.kind in kinds]
        return found if limit is None else found[:limit]

    async def last_events(
        self, task_id: str, count: int, *, unreadable: list[CorruptRecord] | None = None
    ) -> list[Event]:
        rows = self.events.get(task_id, {})
        return [Event.from_json(rows[seq]) for seq in sorted(rows)[-count:]] if count > 0 else []

    # ------------------------------------------------------------------ artifacts

    async def put_artifact(self, artifact: Artifact, content: bytes) -> Artifact:
        if artifact.id in self.artifacts:
            raise DuplicateRecord(f"an artifact with id {artifact.id!r} already exists")
        artifact = artifact.model_copy(update={"bytes": len(content)})
        self._set(self.artifacts, artifact.id, (artifact.to_json(), bytes(content)))
        return artifact

    async def get_artifact(self, artifact_id: str) -> Artifact:
        if artifact_id not in self.artifacts:
            raise ArtifactNotFound(artifact_id)
        return Artifact.from_json(self.artifacts[artifact_id][0])

    async def read_artifact(self, artifact_id: str, *, offset: int = 0, length: int | None = None) -> bytes:
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("offset and length must not be negative")
        if artifact_id not in self.artifacts:
            raise ArtifactNotFound(artifact_id)
        content = self.artifacts[artifact_id][1]
        return content[offset:] if length is None else content[offset : offset + length]

    async def list_artifacts(self, task_id: str) -> list[Artifact]:
        found = [Artifact.from_json(record) for record, _ in self.artifacts.values()]
        return sorted((a for a in found if a.task_id == task_id), key=lambda a: a.created_at)

    # ------------------------------------------------------------------ triggers

    def _queued(self) -> list[Trigger]:
        found = [Trigger.from_json(text) for text in self.triggers.values()]
        return sorted(found, key=lambda t: (t.fire_at, priority_of(t), t.id))

    async def put_trigger(self, trigger: Trigger) -> Trigger:
        if trigger.priority is None:  # the task's priority, as the SQL stores take it
            stored = self.tasks.get(trigger.task_id or "")
            priority = PRIORITY_DEFAULT if stored is None else Task.from_json(stored).priority
            trigger = trigger.model_copy(update={"priority": priority})
        for queued in self._queued():
            if trigger.task_id is not None:
                if (queued.task_id, queued.kind) == (trigger.task_id, trigger.kind):
                    merged = queued.model_copy(
                        update={
                            "fire_at": min(queued.fire_at, trigger.fire_at),
                            "priority": min(priority_of(queued), priority_of(trigger)),
                        }
                    )
                    self._set(self.triggers, merged.id, merged.to_json())
                    self.touched.add(TRIGGERS)
                    return merged
            elif (
                queued.task_id is None
                and trigger.dedupe_key is not None
                and queued.dedupe_key == trigger.dedupe_key
            ):
                return queued
        trigger = trigger.model_copy(update={"id": next(self.next_trigger_id)})
        self._set(self.triggers, trigger.id, trigger.to_json())
        self.touched.add(TRIGGERS)
        return trigger

    async def next_due_at(self) -> dt.datetime | None:
        queued = self._queued()
        return queued[0].fire_at if queued else None

    async def count_tasks_by_status(self) -> dict[TaskStatus, int]:
        return dict(Counter(Task.from_json(text).status for text in self.tasks.values()))

    async def due_trigger_summary(self, now: dt.datetime | None = None) -> tuple[int, dt.datetime | None]:
        due = [t.fire_at for t in self._queued() if t.fire_at <= (now or utcnow())]
        return len(due), min(due, default=None)

    async def claim_due_triggers(
        self,
        *,
        limit: int = 10,
        now: dt.datetime | None = None,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Trigger]:
        now = now or utcnow()
        claimed = sorted((t for t in self._queued() if t.fire_at <= now), key=claim_order)[:limit]
        for trigger in claimed:
            self._delete(self.triggers, trigger.id)
        return claimed

    async def list_triggers(self, task_id: str | None = None) -> list[Trigger]:
        return [t for t in self._queued() if task_id is None or t.task_id == task_id]

    async def delete_triggers(self, task_id: str) -> int:
        doomed = [t.id for t in self._queued() if t.task_id == task_id]
        for trigger_id in doomed:
            self._delete(self.triggers, trigger_id)
        return len(doomed)

    async def delete_trigger(self, trigger_id: int) -> bool:
        found = trigger_id in self.triggers
        self._delete(self.triggers, trigger_id)
        return found

    async def update_trigger(self, trigger: Trigger) -> bool:
        if trigger.id not in self.triggers:
            return False
        queued = Trigger.from_json(self.triggers[trigger.id])
        changed = queued.model_copy(update={"fire_at": trigger.fire_at, "payload": trigger.payload})
        self._set(self.triggers, trigger.id, changed.to_json())
        self.touched.add(TRIGGERS)
        return True

    # ------------------------------------------------------------------ approvals

    async def request_approval(self, approval: Approval) -> Approval:
        key = (approval.task_id, approval.seq)
        if key not in self.approvals:
            self._set(self.approvals, key, approval.to_json())
        return Approval.from_json(self.approvals[key])

    async def get_approval(self, task_id: str, seq: int) -> Approval | None:
        found = self.approvals.get((task_id, seq))
        return None if found is None else Approval.from_json(found)

    async def decide_approval(self, approval: Approval) -> Approval:
        stored = await self.get_approval(approval.task_id, approval.seq)
        if stored is None or stored.status is not ApprovalStatus.PENDING:
            raise ConflictError(
                f"task {approval.task_id} has no pending approval for operation {approval.seq}"
            )
        self._set(self.approvals, (approval.task_id, approval.seq), approval.to_json())
        return approval

    async def list_approvals(
        self,
        task_id: str | None = None,
        *,
        pending_only: bool = False,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Approval]:
        found = [
            Approval.from_json(text)
            for (owner, _), text in self.approvals.items()
            if task_id is None or owner == task_id
        ]
        if pending_only:
            found = [a for a in found if a.status is ApprovalStatus.PENDING]
        return sorted(found, key=lambda a: (a.requested_at, a.task_id, a.seq))

    # ------------------------------------------------------------------ sessions

    async def get_session(self, session_id: str) -> Session:
        if session_id not in self.sessions:
            raise SessionNotFound(session_id)
        return Session.from_json(self.sessions[session_id])

    async def put_session(self, session: Session) -> Session:
        stored_version = (
            Session.from_json(self.sessions[session.id]).version if session.id in self.sessions else 0
        )
        if session.version != stored_version:
            raise ConflictError(f"session {session.id!r} changed since version {session.version} was read")
        stored = session.model_copy(update={"version": session.version + 1, "updated_at": utcnow()})
        self._set(self.sessions, session.id, stored.to_json())
        return stored

    async def list_sessions(self) -> list[Session]:
        found = [Session.from_json(text) for text in self.sessions.values()]
        return sorted(found, key=lambda s: (-s.updated_at.timestamp(), s.id))
