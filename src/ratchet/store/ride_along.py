"""Results that ride on a task's next commit instead of committing alone.

The journal may leave the result of a call whose tool is keyed or safe to
repeat uncommitted for a while (`ratchet.engine.journal.task_journal`,
docs/durability.md, "Results that ride along"): it hands the row here, under
the lease the task runs with, and the next transaction fenced by that lease
writes it first, whatever that transaction is for (the next intent, the next
result, a step's end, the task's end or pause), and commits it with its own
writes. A crash before that commit leaves the call in doubt, as a crash while
it ran would, and the engine runs it again with its idempotency key.

So a task's calls share commits without any operation written twice: the row
is the store's own `record_op_finished`, written inside another transaction.
A transaction that fails hands its riders back for the next one, except when
its lease was lost (nothing of that lease may be written) or their own write
failed (they are dropped: the call stays in doubt). What is written is told
to each rider's `committed` once the commit returned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import LeaseLost
from ..records import Lease, Operation
from .ops import StoreOps

__all__ = ["RideAlong", "Rider"]


@dataclass(frozen=True, slots=True)
class Rider:
    """A finished operation waiting for its lease's next transaction, and who to tell once it committed."""

    op: Operation
    committed: Callable[[], None] | None = None


class RideAlong:
    """The riders of each lease (task and token), in the order they came."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: dict[tuple[str, int], list[Rider]] = {}

    def __bool__(self) -> bool:  # checked by every fenced transaction: nothing to look up when none wait
        return bool(self._waiting)

    def add(self, lease: Lease, rider: Rider) -> None:
        self._waiting.setdefault((lease.task_id, lease.token), []).append(rider)

    def holds(self, lease: Lease) -> bool:
        return (lease.task_id, lease.token) in self._waiting

    def take(self, lease: Lease) -> list[Rider] | None:
        """The lease's riders, taken: the transaction that took them writes them or hands them back."""
        return self._waiting.pop((lease.task_id, lease.token), None)

    def hand_back(self, lease: Lease, riders: list[Rider], error: BaseException | None) -> None:
        """Riders a failed transaction did not commit: for the next one, unless the lease was lost."""
        if isinstance(error, LeaseLost):
            return  # the lease is another's now: nothing of this one is written, ever
        waiting = self._waiting.setdefault((lease.task_id, lease.token), [])
        waiting[:0] = riders  # before any that came meanwhile: a task's rows keep their order

    def drop(self, lease: Lease) -> None:
        """Forget the lease's riders (it was given up): their calls stay in doubt, as after a crash."""
        self._waiting.pop((lease.task_id, lease.token), None)


async def write(ops: StoreOps, riders: list[Rider]) -> None:
    """Write each rider's row in the transaction `ops` belongs to."""
    for rider in riders:
        await ops.record_op_finished(rider.op)


def tell(riders: list[Rider]) -> None:
    """Tell each rider its row committed."""
    for rider in riders:
        if rider.committed is not None:
            rider.committed()
