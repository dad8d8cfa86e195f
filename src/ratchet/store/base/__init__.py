"""`StateStore`: a store opened from a URL, every operation in a transaction.

A store is opened from a URL (`open_store`). Its operations are declared once,
on `StoreOps` (store/ops/); the store runs each one in a transaction of its own,
and ``store.transaction()`` hands out a `StoreOps` bound to one transaction so
that several writes (a state change and the event that reports it) commit
together or not at all::

    async with store.transaction(fence=lease) as tx:
        await tx.update_task(task.transition(TaskStatus.COMPLETED))
        await tx.append_event(Event(task_id=task.id, kind="task", message="done"))

`fence` carries the writer's lease: the transaction raises `LeaseLost` before
writing anything if that lease is no longer the task's current one.

Every store shares one `Transaction` (store/transaction.py); a store supplies
only `StateStore._begin`, which starts a transaction of its kind and says how
to end it.

`StateStore` (store.py) runs each operation through a typed method written by
hand, so that a type checker sees every parameter, ``fence=`` included;
those of the leases (leases.py), of the workers' presence (workers.py), of the
shared limits (limits.py) and of LangGraph's checkpoints (langgraph.py) are mixed in, each mixin running its
operations through the `_read` and `_write` that `StateStore` implements
(wrapping.py).
"""

from .listings import ReplicaRead
from .store import StateStore

__all__ = ["ReplicaRead", "StateStore"]
