"""`StoreOps`: the operations every store has, with the behaviour each must show.

Declared once here with the behaviour each must show; the memory store
(store/memory/) implements them as the reference, and `SqlOps` (store/sql/ops.py)
implements them once for every SQL database. `StateStore` (store/base/) runs
each in a transaction of its own, and ``store.transaction()`` hands out a `StoreOps`
bound to one transaction. The behaviour suite in tests/store holds every store
to these docstrings.

A read that meets a stored row it cannot decode raises `CorruptRecord`,
except the listings that take ``unreadable``: those leave such rows out, and
add each one's `CorruptRecord` to the ``unreadable`` list when given, so one
bad row never hides the others (the memory store has no rows to go bad;
`list_approvals` leaves a row out only when given the list).
"""

from __future__ import annotations

import abc
import datetime as dt
from collections.abc import Collection, Sequence

from ...errors import CorruptRecord
from ...limits import PRIORITY_DEFAULT
from ...records import (
    Approval,
    Artifact,
    Checkpoint,
    Event,
    Lease,
    Message,
    Operation,
    Session,
    Step,
    Task,
    TaskStatus,
    Trigger,
)
from .grants import GrantOps
from .inbox import InboxOps
from .journal_counts import JournalCountOps
from .langgraph import LangGraphOps
from .leases import LeaseOps
from .limits import LimitOps
from .spend import SpendOps
from .streams import StreamOps
from .task_changes import TaskChangeOps
from .task_delete import TaskDeleteOps
from .task_rows import TaskRowOps
from .workers import WorkerOps

__all__ = ["StoreOps", "checkpoints_to_drop", "claim_order", "priority_of"]


def priority_of(trigger: Trigger) -> int:
    """The trigger's priority (a stored trigger always has one; a new one may leave it to its task)."""
    return PRIORITY_DEFAULT if trigger.priority is None else trigger.priority


def claim_order(trigger: Trigger) -> tuple[int, dt.datetime, int]:
    """The order due triggers are claimed in: priority (lower first), then ``fire_at``, then id."""
    return (priority_of(trigger), trigger.fire_at, trigger.id)


class StoreOps(
    InboxOps,
    GrantOps,
    TaskChangeOps,
    TaskRowOps,
    TaskDeleteOps,
    LangGraphOps,
    LeaseOps,
    WorkerOps,
    SpendOps,
    JournalCountOps,
    StreamOps,
    LimitOps,
):
    """The operations of a store; every store implements them with the same behaviour.

    The inboxes' operations are declared apart, on `InboxOps` (inbox.py),
    the task grants' on `GrantOps` (grants.py), and the task-change log's on
    `TaskChangeOps` (task_changes.py), and the task listing's on
    `TaskRowOps` (task_rows.py), and deleting a task on `TaskDeleteOps`
    (task_delete.py), and LangGraph's checkpoints on `LangGraphOps`
    (langgraph.py), and the leases on `LeaseOps` (leases.py), and the
    workers' presence on `WorkerOps` (workers.py), the tasks' streams on
    `StreamOps` (streams.py), the shared limits on `LimitOps` (limits.py),
    and the spend caps on `SpendOps` (spend.py).
    """

    # ------------------------------------------------------------------ tasks

    @abc.abstractmethod
    async def create_task(self, task: Task) -> Task:
        """Insert a new task, and log its ``created`` change (task_changes.py).

        Raises:
            DuplicateRecord: a task with that id exists.
        """

    @abc.abstractmethod
    async def get_task(self, task_id: str) -> Task:
        """Return the task.

        Raises:
            TaskNotFound: no task has that id.
            CorruptRecord: its row cannot be read as a task.
        """

    @abc.abstractmethod
    async def list_tasks(
        self,
        status: TaskStatus | None = None,
        *,
        limit: int | None = None,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Task]:
        """Return tasks, oldest first, only those with `status` when given (unreadable rows apart)."""

    @abc.abstractmethod
    async def get_task_locked(self, task_id: str) -> Task:
        """Return the task, its row locked against other writers until the transaction ends.

        A writer whose decision depends on the task's latest status (a child
        waking its waiting parent) reads it this way.

        Raises:
            TaskNotFound: no task has that id.
        """

    @abc.abstractmethod
    async def hold_run(self, task_id: str) -> None:
        """Hold off the worker running the task until this transaction ends.

        A writer from outside the run (a patch, a handoff, a note) takes this
        before any other lock: the run's next fenced transaction then waits at
        its fence check, where it holds nothing yet, so the two never wait on
        each other (the run takes a task's event numbers and its row in either
        order). A task no worker has leased holds nothing.
        """

    @abc.abstractmethod
    async def list_children(self, parent_id: str) -> list[Task]:
        """Return the tasks `parent_id` started as its children (``Task.parent_id``), oldest first."""

    @abc.abstractmethod
    async def update_task(self, task: Task) -> Task:
        """Write the task record over the stored one and return it as stored.

        The move from the stored status to ``task.status`` must be allowed by
        the status machine (staying in the same status is allowed unless the
        stored status is terminal), so a stale writer cannot revive an ended
        task. A move of its status (or of what a waiting task waits on) is
        logged as a ``status`` change (task_changes.py).

        Raises:
            TaskNotFound: no task has that id.
            InvalidTransition: the stored status cannot move to the new one.
        """

    @abc.abstractmethod
    async def list_orphaned_tasks(
        self,
        *,
        limit: int = 10,
        now: dt.datetime | None = None,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Task]:
        """Return up to `limit` tasks that should run but that nothing will wake.

        Those queued, running, waiting on a timer, or waiting on children that
        have all ended, that no live lease holds (none, expired or released)
        and that have no queued trigger: the tasks of a worker that died (or
        that died between taking a task's wake-up and claiming it). Tasks
        waiting on a person are never returned. The lowest priority number
        (`Task.priority`) comes first, then the oldest.
        """

    # ------------------------------------------------------------------ steps

    @abc.abstractmethod
    async def replace_steps(self, task_id: str, steps: Sequence[Step]) -> None:
        """Make `steps` the task's whole step list (steps not in it are removed).

        Raises:
            TaskNotFound: no task has that id.
        """

    @abc.abstractmethod
    async def update_step(self, step: Step) -> Step:
        """Write one step over the stored step with the same index.

        Raises:
            StepNotFound: the task has no step with that index.
            InvalidTransition: the stored status cannot move to the new one.
        """

    @abc.abstractmethod
    async def list_steps(self, task_id: str) -> list[Step]:
        """Return the task's steps in index order (empty for an unknown task)."""

    # ------------------------------------------------------------------ journal

    @abc.abstractmethod
    async def record_op_started(self, op: Operation) -> Operation:
        """Commit the intent of an operation (status ``started``).

        Starting the same ``(task_id, seq)`` again (a new attempt) overwrites
        the unfinished or failed row. The journal row is the operation's last
        write: `StateStore` runs it as a transaction made ``alone``, which
        SQLite commits as that one statement.

        Raises:
            DuplicateRecord: that operation already succeeded.
        """

    @abc.abstractmethod
    async def record_op_finished(self, op: Operation) -> Operation:
        """Commit an operation's outcome (``succeeded`` or ``failed``); return `op`.

        Over a recorded intent, only the outcome changes (attempt, status,
        output, error, finished_at; ``finished_at`` defaults to now). With no
        intent recorded, the whole row is inserted (read-only and idempotent
        tools commit their result alone). The last write, as in
        `record_op_started`.

        Raises:
            DuplicateRecord: that operation already succeeded.
            ValueError: ``op.status`` is ``started``.
        """

    @abc.abstractmethod
    async def get_op(self, task_id: str, seq: int) -> Operation | None:
        """Return the operation at ``(task_id, seq)``, or None."""

    @abc.abstractmethod
    async def list_ops(
        self, task_id: str, *, after_seq: int = -1, limit: int | None = None
    ) -> list[Operation]:
        """Return the task's operations with seq greater than `after_seq`, by seq, at most `limit`."""

    # ------------------------------------------------------------------ messages

    @abc.abstractmethod
    async def append_messages(self, messages: Sequence[Message]) -> list[Message]:
        """Append messages to their threads; each gets the next seq of its thread (from 0)."""

    @abc.abstractmethod
    async def list_messages(self, thread_id: str, *, start: int = 0, end: int | None = None) -> list[Message]:
        """Return the thread's messages with ``start <= seq < end``, by seq."""

    # ------------------------------------------------------------------ events

    @abc.abstractmethod
    async def append_event(self, event: Event) -> Event:
        """Append an event; it gets the next seq of its task (from 1) and is returned."""

    @abc.abstractmethod
    async def list_events(
        self,
        task_id: str,
        *,
        after_seq: int = 0,
        limit: int | None = None,
        unreadable: list[CorruptRecord] | None = None,
        kinds: Collection[str] | None = None,
    ) -> list[Event]:
        """Return the task's events with seq greater than `after_seq`, oldest first (rows that cannot
        be read apart; `limit` counts them too); with `kinds`, only events of those kinds.

        The store filters by kind, so a reader that wants a few kinds (the journal's retries and
        doubts) never decodes a long task's every event."""

    @abc.abstractmethod
    async def last_events(
        self, task_id: str, count: int, *, unreadable: list[CorruptRecord] | None = None
    ) -> list[Event]:
        """Return the task's newest `count` events, oldest first (rows that cannot be read apart)."""

    # ------------------------------------------------------------------ artifacts

    @abc.abstractmethod
    async def put_artifact(self, artifact: Artifact, content: bytes) -> Artifact:
        """Store an artifact and its body; ``bytes`` is set to ``len(content)``.

        Raises:
            DuplicateRecord: an artifact with that id exists.
        """

    @abc.abstractmethod
    async def get_artifact(self, artifact_id: str) -> Artifact:
        """Return the artifact's record.

        Raises:
            ArtifactNotFound: no artifact has that id.
        """

    @abc.abstractmethod
    async def read_artifact(self, artifact_id: str, *, offset: int = 0, length: int | None = None) -> bytes:
        """Return ``length`` bytes of the body from ``offset`` (to the end when None).

        Raises:
            ArtifactNotFound: no artifact has that id.
        """

    @abc.abstractmethod
    async def list_artifacts(self, task_id: str) -> list[Artifact]:
        """Return the task's artifacts, oldest first."""

    # ------------------------------------------------------------------ triggers

    @abc.abstractmethod
    async def put_trigger(self, trigger: Trigger) -> Trigger:
        """Queue a trigger and return it as stored.

        Triggers of one task coalesce: a task has at most one queued trigger
        of each kind. Putting another merges into the queued one, which keeps
        its id, payload and dedupe key and fires at the earlier of the two
        times, with the lower priority number of the two. A trigger of no
        task whose ``dedupe_key`` is already queued is not added again: the
        queued one is returned unchanged.

        A trigger with no ``priority`` takes its task's (`Task.priority`), or
        the default priority when it has no task, so every wake-up of a task
        (its start, a retry, an answer, an approval) is as urgent as the task.
        """

    @abc.abstractmethod
    async def next_due_at(self) -> dt.datetime | None:
        """Return when the earliest queued trigger fires, or None when the queue is empty."""

    @abc.abstractmethod
    async def count_tasks_by_status(self) -> dict[TaskStatus, int]:
        """Return how many tasks each status holds (statuses without a task are left out)."""

    @abc.abstractmethod
    async def due_trigger_summary(self, now: dt.datetime | None = None) -> tuple[int, dt.datetime | None]:
        """Return how many triggers are due at `now`, and when the oldest of them was due."""

    @abc.abstractmethod
    async def claim_due_triggers(
        self,
        *,
        limit: int = 10,
        now: dt.datetime | None = None,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Trigger]:
        """Take up to `limit` triggers due at `now` off the queue and return them.

        In `claim_order`: among the due triggers, ``priority`` first (lower
        first), then ``fire_at``, then id; a trigger due later never goes
        before one due now, whatever its priority. Two
        claimers running at once never receive the same trigger. A due
        trigger whose row cannot be read is taken off the queue too, and only
        reported (a task it would have woken is then an orphan, which
        `claim_tasks` finds).
        """

    @abc.abstractmethod
    async def list_triggers(self, task_id: str | None = None) -> list[Trigger]:
        """Return the queued triggers (of one task when given) in time order: ``fire_at``, priority, id."""

    @abc.abstractmethod
    async def delete_triggers(self, task_id: str) -> int:
        """Remove every queued trigger of the task; return how many."""

    @abc.abstractmethod
    async def delete_trigger(self, trigger_id: int) -> bool:
        """Remove one queued trigger; return whether it was queued."""

    @abc.abstractmethod
    async def update_trigger(self, trigger: Trigger) -> bool:
        """Give the queued trigger ``trigger.id`` this ``fire_at`` and payload; return whether it was queued.

        Its kind, task, priority and dedupe key stay as queued: a schedule
        paused, resumed or noting its last run stays the one queued trigger.
        """

    # ------------------------------------------------------------------ checkpoints

    @abc.abstractmethod
    async def put_checkpoint(self, checkpoint: Checkpoint) -> Checkpoint:
        """Store a checkpoint; it gets the task's next number (from 1) and is returned."""

    @abc.abstractmethod
    async def get_checkpoint(self, task_id: str, number: int) -> Checkpoint:
        """Return one checkpoint.

        Raises:
            CheckpointNotFound: the task has no checkpoint with that number.
        """

    @abc.abstractmethod
    async def latest_checkpoint(self, task_id: str) -> Checkpoint | None:
        """Return the task's newest checkpoint, or None."""

    @abc.abstractmethod
    async def list_checkpoints(self, task_id: str) -> list[Checkpoint]:
        """Return the task's checkpoints, oldest first."""

    @abc.abstractmethod
    async def rotate_checkpoints(
        self,
        *,
        keep: int | None = None,
        older_than: dt.timedelta | None = None,
        task_id: str | None = None,
        now: dt.datetime | None = None,
    ) -> int:
        """Delete old checkpoints (of one task, or of all); return how many.

        Per task, keeps the newest `keep` and drops those created before
        ``now - older_than``. The newest checkpoint of a task is always kept.
        """

    # ------------------------------------------------------------------ approvals

    @abc.abstractmethod
    async def request_approval(self, approval: Approval) -> Approval:
        """Record that a call waits for a person's decision; return the stored record.

        Asking again for the same ``(task_id, seq)`` changes nothing: the
        stored record (pending or decided) is returned.
        """

    @abc.abstractmethod
    async def get_approval(self, task_id: str, seq: int) -> Approval | None:
        """Return the approval record of the task's call at `seq`, or None."""

    @abc.abstractmethod
    async def decide_approval(self, approval: Approval) -> Approval:
        """Write a person's decision over the pending record of ``(task_id, seq)``.

        Raises:
            ConflictError: there is no pending approval at that key (none
                was asked for, or it was decided already).
        """

    @abc.abstractmethod
    async def list_approvals(
        self,
        task_id: str | None = None,
        *,
        pending_only: bool = False,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Approval]:
        """Return approvals (of one task when given; only pending ones if asked), oldest first.

        A row that cannot be read is left out only when `unreadable` is given
        (and added to it); without it, it raises `CorruptRecord`: a decision
        taken on the rest would settle another call than the oldest waiting.
        """

    # ------------------------------------------------------------------ sessions

    @abc.abstractmethod
    async def get_session(self, session_id: str) -> Session:
        """Return the session.

        Raises:
            SessionNotFound: no session has that id.
        """

    @abc.abstractmethod
    async def put_session(self, session: Session) -> Session:
        """Write the session if nobody wrote it since it was read.

        ``session.version`` must equal the stored version (0 for a new
        session); the stored session gets ``version + 1`` and is returned.

        Raises:
            ConflictError: another writer changed the session first.
        """

    @abc.abstractmethod
    async def list_sessions(self) -> list[Session]:
        """Return every session, most recently updated first."""

    # ------------------------------------------------------------------ the store itself

    @abc.abstractmethod
    async def check_fence(self, lease: Lease) -> None:
        """Make sure `lease` is its task's current lease, and keep it so until the transaction ends.

        Raises:
            LeaseLost: the lease was released or another claim replaced it.
        """

    @abc.abstractmethod
    async def schema_version(self) -> int:
        """Return the schema version the database is at (0 for the memory store, which has none)."""


def checkpoints_to_drop(
    ages: Sequence[tuple[str, int, dt.datetime]],
    *,
    keep: int | None,
    older_than: dt.timedelta | None,
    now: dt.datetime,
) -> list[tuple[str, int]]:
    """Pick the checkpoints `StoreOps.rotate_checkpoints` deletes, from ``(task_id, number, created_at)``.

    Per task, the newest is always kept; of the others, those past `keep`
    (counting from the newest) and those created before ``now - older_than``
    are dropped.
    """
    by_task: dict[str, list[tuple[int, dt.datetime]]] = {}
    for task_id, number, created_at in ages:
        by_task.setdefault(task_id, []).append((number, created_at))
    cutoff = None if older_than is None else now - older_than
    doomed = []
    for task_id, rows in by_task.items():
        rows.sort(reverse=True)
        for rank, (number, created_at) in enumerate(rows):
            too_many = keep is not None and rank >= keep
            too_old = cutoff is not None and created_at < cutoff
            if rank > 0 and (too_many or too_old):
                doomed.append((task_id, number))
    return doomed
