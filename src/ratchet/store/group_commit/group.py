"""One group's record: who waits in it, whose turn it is, and what each member learns of the commit."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import math

from .protocols import Joinable

__all__ = ["Group", "TaskTurn", "Turn", "Waiting", "others_ready", "roll_back_member"]


class Turn(enum.Enum):
    JOIN = "join"  # run your block in the group's transaction
    LEAD = "lead"  # lead `Waiting.group` (a successor), or a group of your own if you waited too long


class Waiting:
    """A joiner: its turn, and the group's outcome for it.

    Each is its own future (none shared), so cancelling one task cancels
    nothing another task waits on.
    """

    __slots__ = ("group", "held", "outcome", "turn")

    def __init__(self, group: Group) -> None:
        self.group = group  # the group it waits in: a successor, once handed over
        self.held: Joinable | None = None  # its statements, if they go with the commit (`Joinable.hold`)
        self.turn: asyncio.Future[Turn] = group.loop.create_future()
        self.outcome: asyncio.Future[None] = group.loop.create_future()


class Group:
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
        self.waiting: collections.deque[Waiting] = collections.deque()
        self.members = 1  # the leader, and the joiners that wait or ran
        self.kept: list[Waiting] = []  # joiners whose block ran and whose writes the commit keeps
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
                waiting.turn.set_result(Turn.JOIN)
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


class TaskTurn:
    """A fenced transaction's place among its task's (`GroupCommit._in_task_order`)."""

    __slots__ = ("_done", "_ended", "_task_id", "_turns")

    def __init__(self, turns: dict[str, TaskTurn], task_id: str) -> None:
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


async def roll_back_member(opened: Joinable) -> None:
    """Undo a member's writes back to its savepoint (statements held back for it are sent and undone).

    Errors are swallowed: the member's own error is the one to see, and a
    rollback that failed leaves the transaction broken, which the group's
    commit then reports to every member still in it.
    """
    with contextlib.suppress(Exception):
        await opened.flush()
    with contextlib.suppress(Exception):
        await opened.roll_back_to_savepoint()


def others_ready(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether the event loop has other callbacks ready to run now (a loop that does not say: yes).

    asyncio's own loop keeps them in ``_ready`` (with the cancelled ones it has
    not dropped yet); with none there, no other task can reach the store
    before this one commits, so waiting would only delay it.
    """
    ready = getattr(loop, "_ready", None)
    if ready is None:
        return True
    return any(not handle.cancelled() for handle in ready)
