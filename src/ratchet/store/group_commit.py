"""Group commit: write transactions of one store that arrive together share one database commit.

A commit is what a durable write costs (an fsync on SQLite with
``durability=full``, a WAL flush and a round trip on PostgreSQL), so when many
tasks of one worker write at once, `Transaction` (transaction.py) lets their
transactions share it:

- The first write transaction to arrive when no group is open *leads* a new
  group: it begins the database transaction and runs its block as usual (no
  savepoint: a lone task pays nothing extra).
- A write transaction that arrives while a group is open *joins* it: it waits
  for its turn, then runs its block on the leader's connection, inside the same
  database transaction, within a ``SAVEPOINT``. If its block (or its fence
  check) fails, only its own writes are rolled back, and it sees its own error
  at once; the others go on.
- When the leader's block is done, it gives the turn to each waiting joiner in
  the order they arrived, then commits once. The group stops admitting joiners
  when it has `max_members` or `max_wait` seconds have passed since the
  leader's block ended; a joiner already waiting then still has its turn, and
  those a group could not serve (its leader failed) go on, in their order,
  into the next group, ahead of whoever arrives later (`_hand_over`). Every
  member's ``async with`` returns only after that
  commit (or raises its error: then none of them is committed), so an intent is
  committed before its effect starts, and a task's next write starts only
  after its previous one committed: a task's writes are never reordered.
- After its block, a leader whose event loop has other work ready yields once,
  so the tasks about to write can join; with nothing else ready it commits at
  once. On SQLite (one connection, whose statements never yield to the loop)
  that one pass is what forms the group; on PostgreSQL the members arrive while
  the leader's statements wait for the server.
- A member's fence check comes out as it would alone (`_in_task_order`):
  members run in the order they arrived, and on a pooled store a fenced
  transaction starts only once the statements of its task's previous one ran.
- Each member's change-feed topics and task changes are its own: kept apart
  while the group runs, dropped with a member rolled back to its savepoint, and
  the survivors' logged and published only with the shared commit.

Read transactions never join a group. Which stores group, and how to turn it
off, is in docs/stores.md; why it keeps the contract, in docs/durability.md.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol, cast

from ..errors import StoreError

if TYPE_CHECKING:
    from ..records import Lease
    from .ops import StoreOps

__all__ = ["GroupCommit", "Joinable", "Member"]

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


class Joinable(Protocol):
    """A transaction a store began that other transactions can join (`SqlTransaction`)."""

    @property
    def ops(self) -> StoreOps: ...

    @property
    def touched(self) -> set[str]: ...

    def joiner(self) -> Joinable:
        """The operations of another member of this transaction: same connection, changes noted apart."""
        ...

    def adopt(self, member: Joinable) -> None:
        """Take on a member's noted changes, to log and publish them with this transaction's commit."""
        ...

    async def flush(self) -> None:
        """Send what the driver held back, raising its errors (see `Driver.flush`)."""
        ...

    def hold(self) -> bool:
        """Leave what the member's block held back to go with the commit (`Driver.hold_member`).

        False: the store cannot (or the member noted changes); it is flushed in its turn instead.
        """
        ...

    def refusal(self) -> BaseException | None:
        """After the commit, for a member that `hold` kept: why its writes were rolled back, or None."""
        ...

    async def savepoint(self) -> None: ...

    async def roll_back_to_savepoint(self) -> None: ...

    async def end(self, *, commit: bool) -> None: ...


class Gate(Protocol):
    """The store's `TransactionGate`, as a group uses it."""

    def hold(self) -> None: ...

    def leave(self, *, lock: bool = True) -> None: ...

    async def acquire(self) -> None: ...

    def release(self) -> None: ...


class GroupStore(Protocol):
    """What a group needs of its store (whose write transactions are `Joinable`)."""

    @property
    def _gate(self) -> Gate: ...

    @property
    def exclusive(self) -> bool: ...

    async def _begin(self, *, write: bool) -> object: ...

    def publish(self, topics: Iterable[str]) -> None: ...


class _Turn(enum.Enum):
    JOIN = "join"  # run your block in the group's transaction
    LEAD = "lead"  # lead `_Waiting.group` (a successor), or a group of your own if you waited too long


class _Waiting:
    """A joiner: its turn, and the group's outcome for it.

    Each is its own future (none shared), so cancelling one task cancels
    nothing another task waits on.
    """

    __slots__ = ("group", "held", "outcome", "turn")

    def __init__(self, group: _Group) -> None:
        self.group = group  # the group it waits in: a successor, once handed over
        self.held: Joinable | None = None  # its statements, if they go with the commit (`Joinable.hold`)
        self.turn: asyncio.Future[_Turn] = group.loop.create_future()
        self.outcome: asyncio.Future[None] = group.loop.create_future()


class _Group:
    """One database transaction shared by its members, and who waits to join it."""

    __slots__ = (
        "admitting",
        "baton",
        "deadline",
        "kept",
        "loop",
        "members",
        "opened",
        "serving",
        "waiting",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.opened: Joinable | None = None
        self.waiting: collections.deque[_Waiting] = collections.deque()
        self.members = 1  # the leader, and the joiners that wait or ran
        self.kept: list[_Waiting] = []  # joiners whose block ran and whose writes the commit keeps
        self.admitting = True
        self.deadline = math.inf  # no joiner runs before the leader's block ended
        self.serving = False  # a joiner holds the connection; the leader waits for the baton
        self.baton: asyncio.Future[None] | None = None

    def pass_turn(self) -> None:
        """Give the connection to the next joiner in line, or back to the leader.

        Each joiner passes it on as its block ends, so a joiner's turn costs
        one hop of the event loop, not two. Past the deadline the group admits
        no one new, but serves those already waiting: one that arrived before
        a later transaction must not run after it (that one may change the
        lease this one is fenced by: alone, this one would have run first).
        """
        if self.loop.time() >= self.deadline:
            self.admitting = False
        while self.waiting:
            waiting = self.waiting.popleft()
            if not waiting.turn.done():  # else it was cancelled, or gave up, while it waited
                waiting.turn.set_result(_Turn.JOIN)
                return
        self.serving = False
        if self.baton is not None and not self.baton.done():
            self.baton.set_result(None)

    def finish(self, error: BaseException | None) -> int:
        """Stop admitting and tell the members the outcome; return how many the commit refused.

        (`_hand_over` took the joiners never served.) A member whose held
        statements failed at the commit was rolled back to its savepoint: it
        sees its own error, the others the group's outcome.
        """
        self.admitting = False
        refused = 0
        for joiner in self.kept:
            own = None if error is not None or joiner.held is None else joiner.held.refusal()
            refused += own is not None
            if joiner.outcome.done():  # cancelled while it waited
                continue
            failure = own if own is not None else error
            if failure is None:
                joiner.outcome.set_result(None)
            else:
                joiner.outcome.set_exception(failure)
        return refused


class _TaskTurn:
    """A fenced transaction's place among its task's (`GroupCommit._in_task_order`)."""

    __slots__ = ("_done", "_ended", "_task_id", "_turns")

    def __init__(self, turns: dict[str, _TaskTurn], task_id: str) -> None:
        self._turns = turns
        self._task_id = task_id
        self._ended = False
        self._done: asyncio.Future[None] | None = None  # made when the next one waits

    async def ended(self) -> None:
        """Return once `end` was called (if this one is cancelled, the transaction it waits on is not)."""
        if self._ended:
            return
        if self._done is None:
            self._done = asyncio.get_running_loop().create_future()
        await asyncio.wait((self._done,))

    def end(self) -> None:
        """The transaction's statements ran (or it failed): its task's next one may start."""
        self._ended = True
        if self._done is not None and not self._done.done():
            self._done.set_result(None)
        if self._turns.get(self._task_id) is self:
            del self._turns[self._task_id]


class Member:
    """One transaction's place in a group: its operations, and how its block ends."""

    __slots__ = ("_group", "_groups", "_opened", "_waiting", "task_turn")

    def __init__(
        self, groups: GroupCommit, group: _Group, opened: Joinable, waiting: _Waiting | None
    ) -> None:
        self._groups = groups
        self._group = group
        self._opened = opened
        self._waiting = waiting  # None for the leader
        self.task_turn: _TaskTurn | None = None  # set by `GroupCommit.enter` on a pooled store

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
                await _roll_back_member(opened)
                return
            if opened.hold():  # they go with the commit: they run (and a failure refuses it) there
                self._waiting.held = opened
                held = True
            else:
                try:
                    await opened.flush()  # its held-back statements fail in its own turn
                except BaseException:
                    await _roll_back_member(opened)
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
        self._admitting: _Group | None = None
        # Per task, on a pooled store: its newest fenced transaction's statements ran (`_in_task_order`).
        self._task_turns: dict[str, _TaskTurn] = {}
        self.commits = 0
        """Commits made (each of a group of one or more members): with `members`, how well writes group."""
        self.members = 0
        """Write transactions that committed as members of a group (each with a savepoint, but the first)."""

    async def enter(self, fence: Lease | None) -> Member:
        """Begin a write transaction: join the group that admits joiners, or lead a new one."""
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
                member = await self._join(group, fence)
        except BaseException:
            gate.leave(lock=False)
            if turn is not None:
                turn.end()
            raise
        member.task_turn = turn
        return member

    async def _in_task_order(self, task_id: str) -> _TaskTurn:
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
        mine = self._task_turns[task_id] = _TaskTurn(self._task_turns, task_id)
        if earlier is not None:
            await earlier.ended()
        return mine

    # ------------------------------------------------------------------ leading

    async def _lead(self, fence: Lease | None, group: _Group | None = None) -> Member:
        """Lead a new group, or `group`: the successor of one that could not serve its joiners."""
        if group is None:
            group = _Group(asyncio.get_running_loop())
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
        if group.waiting or _others_ready(group.loop):
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

    async def _serve_joiners(self, group: _Group) -> BaseException | None:
        """Give the turn to each joiner in order until none waits or the group is full or has waited enough.

        A leader cancelled meanwhile finishes the group first (its members wait
        on it); the cancellation is returned, to be raised once it committed.
        """
        interrupted: BaseException | None = None
        loop = group.loop
        group.deadline = loop.time() + self.max_wait
        looked = False
        while True:
            if group.waiting:  # past the deadline too: see `_Group.pass_turn`
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
            if _others_ready(loop):
                try:
                    await asyncio.sleep(0)  # the tasks about to write join now
                except asyncio.CancelledError as exc:
                    interrupted = exc

    async def _roll_back(self, group: _Group, opened: Joinable) -> None:
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

    def _stop_admitting(self, group: _Group) -> None:
        group.admitting = False
        if self._admitting is group:
            self._admitting = None

    def _end(self, group: _Group, error: BaseException | None) -> None:
        self._stop_admitting(group)
        self._hand_over(group)
        group.finish(error)

    def _hand_over(self, group: _Group) -> None:
        """Send the joiners `group` never served, in their order, into a successor the first of them leads.

        They arrived before anyone who enters from now on (the failed
        leader's task may write again at once): entering again, they could
        be overtaken.
        """
        waiting = [w for w in group.waiting if not w.turn.done()]
        group.waiting.clear()
        if not waiting:
            return
        successor = _Group(group.loop)
        successor.members = len(waiting)
        for joiner in waiting:
            joiner.group = successor
        successor.waiting.extend(waiting[1:])
        self._admitting = successor
        waiting[0].turn.set_result(_Turn.LEAD)

    # ------------------------------------------------------------------ joining

    async def _join(self, group: _Group, fence: Lease | None) -> Member:
        """Wait for a turn in `group` and begin the block in a savepoint (or lead, see `_Turn.LEAD`)."""
        waiting = _Waiting(group)
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
                if waiting.turn.result() is _Turn.JOIN:
                    group.pass_turn()
                else:
                    self._hand_over(group)  # the successor it was to lead: the next in line leads it
            raise
        if turn is _Turn.LEAD:
            if waiting.turn.cancelled():  # it gave up waiting: a group of its own
                waiting.group.members -= 1
                return await self._lead(fence)
            return await self._lead(fence, waiting.group)
        group = waiting.group
        assert group.opened is not None
        opened = group.opened.joiner()
        try:
            await opened.savepoint()
            if fence is not None:
                await opened.ops.check_fence(fence)
        except BaseException:
            await _roll_back_member(opened)
            group.pass_turn()
            raise
        return Member(self, group, opened, waiting)

    async def _wait_for_turn(self, waiting: _Waiting) -> _Turn:
        """The joiner's turn, or `_Turn.LEAD` if the leader's block still runs after `patience` seconds."""
        assert self.patience is not None
        try:
            return await asyncio.wait_for(asyncio.shield(waiting.turn), self.patience)
        except TimeoutError:
            if waiting.turn.done():  # given as the time ran out
                return waiting.turn.result()
            if waiting.group.deadline != math.inf:  # the group is serving its joiners: the turn comes soon
                return await waiting.turn
            waiting.turn.cancel()  # the leader passes over it
            return _Turn.LEAD


async def _roll_back_member(opened: Joinable) -> None:
    """Undo a member's writes back to its savepoint (statements held back for it are sent and undone).

    Errors are swallowed: the member's own error is the one to see, and a
    rollback that failed leaves the transaction broken, which the group's
    commit then reports to every member still in it.
    """
    with contextlib.suppress(Exception):
        await opened.flush()
    with contextlib.suppress(Exception):
        await opened.roll_back_to_savepoint()


def _others_ready(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether the event loop has other callbacks ready to run now (a loop that does not say: yes).

    asyncio's own loop keeps them in ``_ready`` (with the cancelled ones it has
    not dropped yet); with none there, no other task can reach the store
    before this one commits, so waiting would only delay it.
    """
    ready = getattr(loop, "_ready", None)
    if ready is None:
        return True
    return any(not handle.cancelled() for handle in ready)
