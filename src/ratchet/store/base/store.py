"""`StateStore`: a store opened from a URL, every operation in a transaction of its own.

Here: its lifecycle, its transactions, its change feeds, and the wrapper of
every operation but those of the leases (leases.py), of the workers'
presence (workers.py), of the shared limits (limits.py), of the spend caps (spend.py) and of
LangGraph's checkpoints (langgraph.py), which
are mixed in from their own modules, as is where task listings read (listings.py).
"""

from __future__ import annotations

import abc
import contextlib
import copy
import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable, Sequence
from typing import Any, TypeVar

from ...errors import ConflictError, CorruptRecord, SessionNotFound
from ...records import (
    ALL_TASKS,
    OLDEST_FIRST,
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
    StreamEntry,
    Task,
    TaskChange,
    TaskCursor,
    TaskFilter,
    TaskGrant,
    TaskOrder,
    TaskRow,
    TaskStatus,
    Trigger,
)
from ..changes import ChangeFeed
from ..group_commit import GroupCommit
from ..history import PartitionedHistory
from ..ops import StoreOps
from ..ops.streams import STREAM_PAGE
from ..ride_along import RideAlong, Rider
from ..transaction import Opened, Transaction, TransactionGate
from .langgraph import LangGraphWrappers
from .leases import LeaseWrappers
from .limits import LimitWrappers
from .listings import ListingReads
from .spend import SpendWrappers
from .workers import WorkerWrappers

__all__ = ["StateStore"]

_R = TypeVar("_R")


class StateStore(
    LeaseWrappers, WorkerWrappers, LimitWrappers, SpendWrappers, LangGraphWrappers, ListingReads, StoreOps
):
    """A store opened from a URL: the `StoreOps` operations, each in a transaction of its own.

    Write operations take a keyword ``fence=lease``: the write is refused with
    `LeaseLost` when that lease is no longer the task's current one. What each
    operation does is documented on `StoreOps`.
    """

    url: str

    change_poll: float | None = 0.2
    """How often a change feed looks again: None when the store publishes every writer's changes."""

    exclusive: bool = True
    """Whether the store's transactions take turns (one connection) rather than run at once (a pool)."""

    group_commit: bool = False
    """Whether write transactions that arrive together share one commit by default (store/group_commit)."""

    results_ride_along: bool = False
    """Whether a keyed or repeatable call's result may commit with the task's next commit (ride_along.py):
    ``?ride_along=on`` on the store's URL."""

    history: PartitionedHistory | None = None
    """The partitions of ended tasks' journal and events, on a store that has them (PostgreSQL)."""

    def __init__(self) -> None:
        self._gate = TransactionGate(exclusive=self.exclusive)
        self._groups: GroupCommit | None = GroupCommit(self) if self.group_commit else None
        self._feeds: set[ChangeFeed] = set()
        self._ride_along = RideAlong()

    # ------------------------------------------------------------------ lifecycle

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect, check the schema and migrate it to the current version.

        Raises:
            StoreNotFound: the database does not exist and the store was
                opened with ``create=False``.
            NotARatchetDatabase: the database holds something else.
            SchemaTooNew: a newer Ratchet wrote it.
        """

    @abc.abstractmethod
    async def close(self) -> None:
        """Release connections; the store can't be used afterwards."""

    async def __aenter__(self) -> StateStore:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ transactions

    def transaction(self, *, fence: Lease | None = None) -> Transaction:
        """Return a context manager giving operations that commit together.

        Everything done through it commits when the block ends and is rolled
        back when it raises.

        Raises:
            LeaseLost: on entry, when `fence` is not the task's current lease.
        """
        return Transaction(self, write=True, fence=fence)

    @property
    def groups(self) -> GroupCommit | None:
        """The store's group commit, or None when it is off; its counters say how well writes grouped."""
        return self._groups

    def share_commits(self, on: bool) -> None:
        """Let write transactions that arrive together share one commit, or not; before the store is used."""
        self._groups = GroupCommit(self) if on else None

    # Results that ride on a task's next commit (store/ride_along.py; docs/durability.md).
    def ride_along(self, op: Operation, *, fence: Lease, committed: Callable[[], None] | None = None) -> bool:
        """Write finished `op` first in the next transaction `fence` fences, then call `committed`.

        Returns False, leaving `op` to the caller, when a row rides on that
        lease already: that one goes with `op`'s own write, so what waits
        uncommitted is one call's result at most, never a whole loop's.
        """
        if self._ride_along.holds(fence):
            return False
        self._ride_along.add(fence, Rider(op, committed))
        return True

    async def flush_riders(self, lease: Lease) -> None:
        """Commit now what rides on `lease`'s next transaction, if anything does.

        Raises:
            LeaseLost: `lease` is no longer the task's (what rode on it is dropped).
        """
        if self._ride_along.holds(lease):
            async with self.transaction(fence=lease):
                pass  # the transaction writes the riders as it begins

    def drop_riders(self, lease: Lease) -> None:
        """Forget what rides on `lease` (given up): those calls are in doubt, as after a crash."""
        self._ride_along.drop(lease)

    def reading(self) -> Transaction:
        """Return a context manager giving operations for a consistent read."""
        return Transaction(self, write=False, fence=None)

    @abc.abstractmethod
    async def _begin(self, *, write: bool) -> Opened:
        """Start a transaction (for writing, or a consistent read); called inside the gate."""

    async def _begin_alone(self) -> Opened:
        """Start a write transaction that will hold one write, its last statement; called inside the gate.

        A store that can commit one statement without a transaction around it
        begins nothing here and lets that write commit itself (SQLite); this
        one begins a transaction as any other, which is what the memory
        reference and PostgreSQL do.
        """
        return await self._begin(write=True)

    async def _read(self, op: Callable[[StoreOps], Awaitable[_R]]) -> _R:
        async with self.reading() as tx:
            return await op(tx)

    async def _write(self, fence: Lease | None, op: Callable[[StoreOps], Awaitable[_R]]) -> _R:
        async with self.transaction(fence=fence) as tx:
            return await op(tx)

    async def _write_apart(self, fence: Lease | None, op: Callable[[StoreOps], Awaitable[_R]]) -> _R:
        async with Transaction(self, write=True, fence=fence, grouped=self.exclusive) as tx:
            return await op(tx)

    # ------------------------------------------------------------------ change feeds

    @contextlib.asynccontextmanager
    async def changes(self, *topics: str) -> AsyncIterator[ChangeFeed]:
        """Watch topics (`TRIGGERS`, ``events_topic(task_id)``) for the block.

        The feed hears of changes committed after it opened: look at the
        store after opening it, then wait.
        """
        await self._start_listening(topics)
        feed = ChangeFeed(topics, self.change_poll)
        self._feeds.add(feed)
        try:
            yield feed
        finally:
            self._feeds.discard(feed)

    def publish(self, topics: Iterable[str]) -> None:
        """Wake this process's feeds that watch any of `topics` (``"*"`` wakes them all)."""
        topics = set(topics)
        if not topics:
            return
        for feed in self._feeds:
            if "*" in topics or feed.topics & topics:
                feed.notify()

    async def _start_listening(self, topics: Iterable[str]) -> None:
        """Hear other processes' changes on `topics` from now on, if the store can.

        Called as each feed opens.
        """

    # ------------------------------------------------------------------ sessions

    async def update_session_state(
        self,
        session_id: str,
        change: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        attempts: int = 20,
    ) -> Session:
        """Apply `change` to the session's state and write it, retrying on conflict.

        `change` receives a copy of the current state (empty for a new
        session) and returns the new one; it runs again on a fresh copy when
        another writer got in first, so no writer's change is lost.

        Raises:
            ConflictError: still conflicting after `attempts` tries.
        """
        for _ in range(attempts):
            try:
                current = await self.get_session(session_id)
            except SessionNotFound:
                current = Session(id=session_id)
            new_state = change(copy.deepcopy(current.state))
            try:
                return await self.put_session(current.model_copy(update={"state": new_state}))
            except ConflictError:
                continue
        raise ConflictError(f"session {session_id!r} kept changing; gave up after {attempts} tries")

    # ------------------------------------------------------------------ the operations, one transaction each

    async def schema_version(self) -> int:
        return await self._read(lambda tx: tx.schema_version())

    async def check_fence(self, lease: Lease) -> None:
        return await self._read(lambda tx: tx.check_fence(lease))

    async def create_task(self, task: Task, *, fence: Lease | None = None) -> Task:
        return await self._write(fence, lambda tx: tx.create_task(task))

    async def get_task(self, task_id: str) -> Task:
        return await self._read(lambda tx: tx.get_task(task_id))

    async def list_tasks(
        self,
        status: TaskStatus | None = None,
        *,
        limit: int | None = None,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Task]:
        return await self._read(lambda tx: tx.list_tasks(status, limit=limit, unreadable=unreadable))

    async def list_task_rows(
        self,
        where: TaskFilter = ALL_TASKS,
        *,
        order: TaskOrder = OLDEST_FIRST,
        after: TaskCursor | None = None,
        limit: int | None = None,
        offset: int = 0,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[TaskRow]:
        return await self._read(
            lambda tx: tx.list_task_rows(
                where, order=order, after=after, limit=limit, offset=offset, unreadable=unreadable
            )
        )

    async def count_task_rows(self, where: TaskFilter = ALL_TASKS) -> int:
        return await self._read(lambda tx: tx.count_task_rows(where))

    async def get_tasks(
        self, task_ids: Sequence[str], *, unreadable: list[CorruptRecord] | None = None
    ) -> list[Task]:
        return await self._read(lambda tx: tx.get_tasks(task_ids, unreadable=unreadable))

    async def get_task_locked(self, task_id: str) -> Task:
        return await self._write(None, lambda tx: tx.get_task_locked(task_id))

    async def hold_run(self, task_id: str) -> None:
        return await self._write(None, lambda tx: tx.hold_run(task_id))

    async def list_children(self, parent_id: str) -> list[Task]:
        return await self._read(lambda tx: tx.list_children(parent_id))

    async def delete_task(self, task_id: str) -> None:
        return await self._write(None, lambda tx: tx.delete_task(task_id))

    async def update_task(self, task: Task, *, fence: Lease | None = None) -> Task:
        return await self._write(fence, lambda tx: tx.update_task(task))

    async def list_orphaned_tasks(
        self,
        *,
        limit: int = 10,
        now: dt.datetime | None = None,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Task]:
        return await self._read(
            lambda tx: tx.list_orphaned_tasks(limit=limit, now=now, unreadable=unreadable)
        )

    async def replace_steps(self, task_id: str, steps: Sequence[Step], *, fence: Lease | None = None) -> None:
        return await self._write(fence, lambda tx: tx.replace_steps(task_id, steps))

    async def update_step(self, step: Step, *, fence: Lease | None = None) -> Step:
        return await self._write(fence, lambda tx: tx.update_step(step))

    async def list_steps(self, task_id: str) -> list[Step]:
        return await self._read(lambda tx: tx.list_steps(task_id))

    # The journal's two writes, each a transaction of that one write (`_begin_alone`): one
    # statement where the store can. Written out, not through `_write`: every call runs them.
    async def record_op_started(self, op: Operation, *, fence: Lease | None = None) -> Operation:
        async with Transaction(self, write=True, fence=fence, alone=True) as tx:
            return await tx.record_op_started(op)

    async def record_op_finished(self, op: Operation, *, fence: Lease | None = None) -> Operation:
        async with Transaction(self, write=True, fence=fence, alone=True) as tx:
            return await tx.record_op_finished(op)

    async def get_op(self, task_id: str, seq: int) -> Operation | None:
        return await self._read(lambda tx: tx.get_op(task_id, seq))

    async def list_ops(
        self, task_id: str, *, after_seq: int = -1, limit: int | None = None
    ) -> list[Operation]:
        return await self._read(lambda tx: tx.list_ops(task_id, after_seq=after_seq, limit=limit))

    async def count_ops(self, task_id: str) -> int:
        return await self._read(lambda tx: tx.count_ops(task_id))

    async def count_events(self, task_id: str) -> int:
        return await self._read(lambda tx: tx.count_events(task_id))

    async def append_messages(
        self, messages: Sequence[Message], *, fence: Lease | None = None
    ) -> list[Message]:
        return await self._write(fence, lambda tx: tx.append_messages(messages))

    async def list_messages(self, thread_id: str, *, start: int = 0, end: int | None = None) -> list[Message]:
        return await self._read(lambda tx: tx.list_messages(thread_id, start=start, end=end))

    async def append_event(self, event: Event, *, fence: Lease | None = None) -> Event:
        return await self._write(fence, lambda tx: tx.append_event(event))

    async def list_events(
        self,
        task_id: str,
        *,
        after_seq: int = 0,
        limit: int | None = None,
        unreadable: list[CorruptRecord] | None = None,
        kinds: Collection[str] | None = None,
    ) -> list[Event]:
        return await self._read(
            lambda tx: tx.list_events(
                task_id, after_seq=after_seq, limit=limit, unreadable=unreadable, kinds=kinds
            )
        )

    async def last_events(
        self, task_id: str, count: int, *, unreadable: list[CorruptRecord] | None = None
    ) -> list[Event]:
        return await self._read(lambda tx: tx.last_events(task_id, count, unreadable=unreadable))

    async def list_task_changes(
        self, *, after: int = 0, limit: int | None = None, unreadable: list[CorruptRecord] | None = None
    ) -> list[TaskChange]:
        return await self._read(
            lambda tx: tx.list_task_changes(after=after, limit=limit, unreadable=unreadable)
        )

    async def last_task_change(self) -> int:
        return await self._read(lambda tx: tx.last_task_change())

    async def put_artifact(
        self, artifact: Artifact, content: bytes, *, fence: Lease | None = None
    ) -> Artifact:
        return await self._write(fence, lambda tx: tx.put_artifact(artifact, content))

    async def get_artifact(self, artifact_id: str) -> Artifact:
        return await self._read(lambda tx: tx.get_artifact(artifact_id))

    async def read_artifact(self, artifact_id: str, *, offset: int = 0, length: int | None = None) -> bytes:
        return await self._read(lambda tx: tx.read_artifact(artifact_id, offset=offset, length=length))

    async def list_artifacts(self, task_id: str) -> list[Artifact]:
        return await self._read(lambda tx: tx.list_artifacts(task_id))

    async def put_trigger(self, trigger: Trigger, *, fence: Lease | None = None) -> Trigger:
        return await self._write(fence, lambda tx: tx.put_trigger(trigger))

    async def next_due_at(self) -> dt.datetime | None:
        return await self._read(lambda tx: tx.next_due_at())

    async def count_tasks_by_status(self) -> dict[TaskStatus, int]:
        return await self._read(lambda tx: tx.count_tasks_by_status())

    async def due_trigger_summary(self, now: dt.datetime | None = None) -> tuple[int, dt.datetime | None]:
        return await self._read(lambda tx: tx.due_trigger_summary(now))

    async def claim_due_triggers(
        self,
        *,
        limit: int = 10,
        now: dt.datetime | None = None,
        unreadable: list[CorruptRecord] | None = None,
        fence: Lease | None = None,
    ) -> list[Trigger]:
        return await self._write(
            fence, lambda tx: tx.claim_due_triggers(limit=limit, now=now, unreadable=unreadable)
        )

    async def list_triggers(self, task_id: str | None = None) -> list[Trigger]:
        return await self._read(lambda tx: tx.list_triggers(task_id))

    async def delete_triggers(self, task_id: str, *, fence: Lease | None = None) -> int:
        return await self._write(fence, lambda tx: tx.delete_triggers(task_id))

    async def delete_trigger(self, trigger_id: int, *, fence: Lease | None = None) -> bool:
        return await self._write(fence, lambda tx: tx.delete_trigger(trigger_id))

    async def update_trigger(self, trigger: Trigger, *, fence: Lease | None = None) -> bool:
        return await self._write(fence, lambda tx: tx.update_trigger(trigger))

    async def put_checkpoint(self, checkpoint: Checkpoint, *, fence: Lease | None = None) -> Checkpoint:
        return await self._write(fence, lambda tx: tx.put_checkpoint(checkpoint))

    async def get_checkpoint(self, task_id: str, number: int) -> Checkpoint:
        return await self._read(lambda tx: tx.get_checkpoint(task_id, number))

    async def latest_checkpoint(self, task_id: str) -> Checkpoint | None:
        return await self._read(lambda tx: tx.latest_checkpoint(task_id))

    async def list_checkpoints(self, task_id: str) -> list[Checkpoint]:
        return await self._read(lambda tx: tx.list_checkpoints(task_id))

    async def rotate_checkpoints(
        self,
        *,
        keep: int | None = None,
        older_than: dt.timedelta | None = None,
        task_id: str | None = None,
        now: dt.datetime | None = None,
        fence: Lease | None = None,
    ) -> int:
        return await self._write(
            fence,
            lambda tx: tx.rotate_checkpoints(keep=keep, older_than=older_than, task_id=task_id, now=now),
        )

    async def request_approval(self, approval: Approval, *, fence: Lease | None = None) -> Approval:
        return await self._write(fence, lambda tx: tx.request_approval(approval))

    async def get_approval(self, task_id: str, seq: int) -> Approval | None:
        return await self._read(lambda tx: tx.get_approval(task_id, seq))

    async def decide_approval(self, approval: Approval, *, fence: Lease | None = None) -> Approval:
        return await self._write(fence, lambda tx: tx.decide_approval(approval))

    async def list_approvals(
        self,
        task_id: str | None = None,
        *,
        pending_only: bool = False,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Approval]:
        return await self._read(
            lambda tx: tx.list_approvals(task_id, pending_only=pending_only, unreadable=unreadable)
        )

    async def send_message(self, message: InboxMessage, *, fence: Lease | None = None) -> InboxMessage:
        return await self._write(fence, lambda tx: tx.send_message(message))

    async def take_messages(
        self, task_id: str, name: str, *, taken_by: int, limit: int | None = 1, fence: Lease | None = None
    ) -> list[InboxMessage]:
        return await self._write(
            fence, lambda tx: tx.take_messages(task_id, name, taken_by=taken_by, limit=limit)
        )

    async def list_inbox(self, task_id: str, *, pending_only: bool = False) -> list[InboxMessage]:
        return await self._read(lambda tx: tx.list_inbox(task_id, pending_only=pending_only))

    async def append_stream(
        self, task_id: str, entries: Sequence[StreamEntry], *, fence: Lease | None = None
    ) -> list[StreamEntry]:
        return await self._write(fence, lambda tx: tx.append_stream(task_id, entries))

    async def read_stream(
        self, task_id: str, *, from_offset: int = 0, limit: int = STREAM_PAGE
    ) -> list[StreamEntry]:
        return await self._read(lambda tx: tx.read_stream(task_id, from_offset=from_offset, limit=limit))

    async def grant_task(self, grant: TaskGrant, *, fence: Lease | None = None) -> bool:
        return await self._write(fence, lambda tx: tx.grant_task(grant))

    async def list_grants(self, task_id: str) -> list[TaskGrant]:
        return await self._read(lambda tx: tx.list_grants(task_id))

    async def get_session(self, session_id: str) -> Session:
        return await self._read(lambda tx: tx.get_session(session_id))

    async def put_session(self, session: Session, *, fence: Lease | None = None) -> Session:
        return await self._write(fence, lambda tx: tx.put_session(session))

    async def list_sessions(self) -> list[Session]:
        return await self._read(lambda tx: tx.list_sessions())
