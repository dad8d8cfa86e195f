"""`GroupCommit`: how a store's write transactions lead, join and leave groups (the package's docstring)."""

from __future__ import annotations

import asyncio
import contextlib
import math
from typing import TYPE_CHECKING, cast

from ...errors import StoreError
from .group import Group, TaskTurn, Turn, Waiting, others_ready, roll_back_member
from .protocols import GroupStore, Joinable

if TYPE_CHECKING:
    from ...records import Lease
    from ..ops import StoreOps

__all__ = ["GroupCommit", "Member"]

MAX_MEMBERS = 32
"""The most transactions that share one commit. On PostgreSQL each joiner is a
subtransaction, and a transaction of more than 64 makes every other session's
snapshots slower (the subtransaction cache overflows); 32 stays well under."""

MAX_POOLED_MEMBERS = 16
"""The most on a pooled store (PostgreSQL): its members' statements take turns
on one connection, so smaller groups keep the pool's connections busy at once
(PostgreSQL itself flushes the WAL once for commits that arrive together)."""

MAX_WAIT = 0.002
"""Seconds after the leader's block ended during which the group still admits
joiners: what one member's commit may be delayed by the others' blocks."""

PATIENCE = 0.02
"""Seconds a joiner of a pooled store (PostgreSQL) waits for the leader's block
to end before it leads a group of its own on another connection: a leader
whose block is slow (it waits on something else) never holds the other
writers up for longer. Once the leader's block has ended, the group is
bounded by `MAX_WAIT` instead."""


class Member:
    """One transaction's place in a group: its operations, and how its block ends."""

    __slots__ = ("_group", "_groups", "_opened", "_waiting", "task_turn")

    def __init__(self, groups: GroupCommit, group: Group, opened: Joinable, waiting: Waiting | None) -> None:
        self._groups = groups
        self._group = group
        self._opened = opened
        self._waiting = waiting  # None for the leader
        self.task_turn: TaskTurn | None = None  # set by `GroupCommit.enter` on a pooled store

    def statements_ran(self) -> None:
        """Its statements were sent and answered: its task's next fenced transaction may start."""
        if self.task_turn is not None:
            self.task_turn.end()
            self.task_turn = None

    @property
    def ops(self) -> StoreOps:
        return self._opened.ops

    async def leave(self, *, failed: bool) -> None:
        """End the member's block: on success, return once the group committed (or raise why it did not)."""
        gate = self._groups.store._gate
        try:
            if self._waiting is None:
                await self._groups._lead_to_commit(self, failed=failed)
            else:
                await self._leave_as_joiner(failed=failed)
        finally:
            gate.leave(lock=False)
            self.statements_ran()

    async def _leave_as_joiner(self, *, failed: bool) -> None:
        assert self._waiting is not None
        group, opened = self._group, self._opened
        held = False
        try:
            if failed:
                # The block's error is the one to see; a rollback failing after it breaks the
                # whole transaction, and the group's commit then says so to the others.
                await roll_back_member(opened)
                return
            if opened.hold():  # they go with the commit: they run (and a failure refuses it) there
                self._waiting.held = opened
                held = True
            else:
                try:
                    await opened.flush()  # its held-back statements fail in its own turn
                except BaseException:
                    await roll_back_member(opened)
                    raise
            # Its savepoint stays until the commit ends them all: a RELEASE would cost a statement
            # (a round trip on PostgreSQL) and change nothing; a later member's ROLLBACK TO finds
            # its own savepoint, the newest of the name.
            assert group.opened is not None
            group.opened.adopt(opened)
            group.kept.append(self._waiting)
        finally:
            if not held:  # else they run with the commit: `leave` says so then
                self.statements_ran()
            group.pass_turn()
        await self._waiting.outcome


class GroupCommit:
    """The groups of one store's write transactions (one admits joiners at a time)."""

    def __init__(self, store: GroupStore, *, max_wait: float = MAX_WAIT) -> None:
        self.store = store
        self.max_members = MAX_MEMBERS if store.exclusive else MAX_POOLED_MEMBERS
        self.max_wait = max_wait
        # On one connection (SQLite) a joiner has nowhere else to go; a pooled store has.
        self.patience = None if store.exclusive else PATIENCE
        self._admitting: Group | None = None
        # Per task, on a pooled store: its newest fenced transaction's statements ran (`_in_task_order`).
        self._task_turns: dict[str, TaskTurn] = {}
        self.commits = 0
        """Commits made (each of a group of one or more members): with `members`, how well writes group."""
        self.members = 0
        """Write transactions that committed as members of a group (joiners in savepoints: `_join`)."""

    async def enter(self, fence: Lease | None, *, alone: bool = False) -> Member:
        """Begin a write transaction: join the group that admits joiners, or lead a new one.

        `alone`: it holds one write and nothing after it (`Transaction`'s), so
        a store whose failed statement leaves its transaction as it was may
        let it join without a savepoint (`Joinable.savepoint`).
        """
        gate = self.store._gate
        gate.hold()  # refuses a transaction nested in one of the same store
        turn = None
        try:
            if fence is not None and self.patience is not None:
                turn = await self._in_task_order(fence.task_id)
            group = self._admitting
            if group is None or not group.admitting or group.members >= self.max_members:
                member = await self._lead(fence)
            else:
                member = await self._join(group, fence, alone)
        except BaseException:
            gate.leave(lock=False)
            if turn is not None:
                turn.end()
            raise
        member.task_turn = turn
        return member

    async def _in_task_order(self, task_id: str) -> TaskTurn:
        """On a pooled store, wait until the statements of the task's previous fenced transaction ran.

        Why (a member's fence must come out as it would alone): a task's own
        transactions can change its lease; a parent waiting on children
        releases it while a sibling under ``asyncio.gather`` still writes.
        Alone, on one connection (SQLite), transactions run one after another
        in the order they arrive, and so do a group's members. On a pool
        (PostgreSQL) groups run at once on several connections, and a joiner
        checks its fence only in its turn: a sibling queued in one group could
        have its fence checked after a release that arrived later and led a
        group of its own on another connection (it then raised `LeaseLost`,
        about one run in three of the gathered-children test). So, per task,
        a fenced transaction starts only once its previous one's statements
        ran, the fence included (that one holds the lease row ``FOR SHARE``
        until its commit: a release coming next waits for it). Commits still
        overlap, and other tasks' transactions do not wait: only a task with
        several writers at once pays, a block's length per writer.
        """
        earlier = self._task_turns.get(task_id)
        mine = self._task_turns[task_id] = TaskTurn(self._task_turns, task_id)
        if earlier is not None:
            await earlier.ended()
        return mine

    # ------------------------------------------------------------------ leading

    async def _lead(self, fence: Lease | None, group: Group | None = None) -> Member:
        """Lead a new group, or `group`: the successor of one that could not serve its joiners."""
        if group is None:
            group = Group(asyncio.get_running_loop())
        self._admitting = group
        gate = self.store._gate
        try:
            await gate.acquire()  # one connection (SQLite): the group before this one commits first
        except BaseException:
            self._end(group, None)
            raise
        try:
            # A store groups its writes only if its transactions can be joined.
            opened = group.opened = cast(Joinable, await self.store._begin(write=True))
        except BaseException:
            gate.release()
            self._end(group, None)
            raise
        if fence is not None:
            try:
                await opened.ops.check_fence(fence)
            except BaseException:
                await self._roll_back(group, opened)
                raise
        return Member(self, group, opened, None)

    async def _lead_to_commit(self, leader: Member, *, failed: bool) -> None:
        """The leader's block is done: let the joiners run theirs, then commit (or roll back) once."""
        group = leader._group
        opened = group.opened
        assert opened is not None
        if failed:
            await self._roll_back(group, opened)  # no joiner ran yet: nothing else is lost
            return
        # Alone (no joiner waits, no other task is ready to write): commit at once, with
        # whatever the driver held back. Else the leader's own statements go first.
        interrupted = None
        if group.waiting or others_ready(group.loop):
            try:
                await opened.flush()
            except BaseException:
                await self._roll_back(group, opened)
                raise
            leader.statements_ran()
            interrupted = await self._serve_joiners(group)
        group.admitting = False
        if self._admitting is group:
            self._admitting = None
        try:
            await opened.end(commit=True)
        except BaseException as exc:
            self.store._gate.release()
            # The joiners see the commit's error; the leader's own cancellation is not theirs.
            shared = (
                exc if isinstance(exc, Exception) else StoreError(f"the commit was interrupted ({exc!r})")
            )
            self._end(group, shared)
            raise
        self.store._gate.release()
        self.commits += 1
        refused = group.finish(None) if group.kept else 0  # none waits unserved: all were served
        self.members += 1 + len(group.kept) - refused
        self.store.publish(opened.touched)
        if interrupted is not None:
            raise interrupted

    async def _serve_joiners(self, group: Group) -> BaseException | None:
        """Give the turn to each joiner in order until none waits or the group is full or has waited enough.

        A leader cancelled meanwhile finishes the group first (its members wait
        on it); the cancellation is returned, to be raised once it committed.
        """
        interrupted: BaseException | None = None
        loop = group.loop
        group.deadline = loop.time() + self.max_wait
        looked = False
        while True:
            if group.waiting:  # past the deadline too: see `Group.pass_turn`
                group.serving = True
                group.pass_turn()
                while group.serving:
                    group.baton = loop.create_future()
                    try:
                        await group.baton
                    except asyncio.CancelledError as exc:
                        interrupted = exc
                looked = False
                continue
            if looked or group.members >= self.max_members or loop.time() >= group.deadline:
                return interrupted
            looked = True
            if others_ready(loop):
                try:
                    await asyncio.sleep(0)  # the tasks about to write join now
                except asyncio.CancelledError as exc:
                    interrupted = exc

    async def _roll_back(self, group: Group, opened: Joinable) -> None:
        """End the leader's transaction without committing; its waiting joiners enter again.

        Called on an error (the leader's block, its fence): that error is the
        one to see, not a rollback failing after it.
        """
        self._stop_admitting(group)
        try:
            with contextlib.suppress(Exception):
                await opened.end(commit=False)
        finally:
            self.store._gate.release()
            self._end(group, None)

    def _stop_admitting(self, group: Group) -> None:
        group.admitting = False
        if self._admitting is group:
            self._admitting = None

    def _end(self, group: Group, error: BaseException | None) -> None:
        self._stop_admitting(group)
        self._hand_over(group)
        group.finish(error)

    def _hand_over(self, group: Group) -> None:
        """Send the joiners `group` never served, in their order, into a successor the first of them leads.

        They arrived before anyone who enters from now on (the failed
        leader's task may write again at once): entering again, they could
        be overtaken.
        """
        waiting = [w for w in group.waiting if not w.turn.done()]
        group.waiting.clear()
        if not waiting:
            return
        successor = Group(group.loop)
        successor.members = len(waiting)
        for joiner in waiting:
            joiner.group = successor
        successor.waiting.extend(waiting[1:])
        self._admitting = successor
        waiting[0].turn.set_result(Turn.LEAD)

    # ------------------------------------------------------------------ joining

    async def _join(self, group: Group, fence: Lease | None, alone: bool) -> Member:
        """Wait for a turn in `group` and begin the block in a savepoint (or lead, see `Turn.LEAD`)."""
        waiting = Waiting(group)
        group.waiting.append(waiting)
        group.members += 1
        try:
            if self.patience is None:
                turn = await waiting.turn
            else:
                turn = await self._wait_for_turn(waiting)
        except asyncio.CancelledError:
            group = waiting.group  # a successor, if it was handed over
            group.members -= 1
            if not waiting.turn.done():
                waiting.turn.cancel()  # the leader passes over it
            elif not waiting.turn.cancelled():  # the turn came as the cancellation did: pass it on
                if waiting.turn.result() is Turn.JOIN:
                    group.pass_turn()
                else:
                    self._hand_over(group)  # the successor it was to lead: the next in line leads it
            raise
        if turn is Turn.LEAD:
            if waiting.turn.cancelled():  # it gave up waiting: a group of its own
                waiting.group.members -= 1
                return await self._lead(fence)
            return await self._lead(fence, waiting.group)
        group = waiting.group
        assert group.opened is not None
        opened = group.opened.joiner()
        try:
            await opened.savepoint(alone=alone)
            if fence is not None:
                await opened.ops.check_fence(fence)
        except BaseException:
            await roll_back_member(opened)
            group.pass_turn()
            raise
        return Member(self, group, opened, waiting)

    async def _wait_for_turn(self, waiting: Waiting) -> Turn:
        """The joiner's turn, or `Turn.LEAD` if the leader's block still runs after `patience` seconds."""
        assert self.patience is not None
        try:
            return await asyncio.wait_for(asyncio.shield(waiting.turn), self.patience)
        except TimeoutError:
            if waiting.turn.done():  # given as the time ran out
                return waiting.turn.result()
            if waiting.group.deadline != math.inf:  # the group is serving its joiners: the turn comes soon
                return await waiting.turn
            waiting.turn.cancel()  # the leader passes over it
            return Turn.LEAD
