"""A worker's store outages: said once when they begin and once when they end, and the tasks they stopped.

A store that fails (a server restarted, a database failing over to its
standby: seconds in which no server takes a write) fails every transaction
tried meanwhile, the worker's own rounds and each running task's next write.
The worker tries again with a growing pause; `Outage` makes that one warning
when the first failure comes and one line when the store answers again, not a
line an attempt.

A task whose run the store stopped is *stranded*: its run is over (it left
the task as its journal stands, resumable), but the lease it held may still
be live, and still this worker's, when the store comes back (a failover
shorter than the lease). `Stranded` keeps that lease, so the worker takes the
task back at once by replacing its own lease (the claim's ``replacing``: the
token one higher, as any claim), rather than leaving it to no one until the
lease expires. If another worker took it over meanwhile, the claim is
refused and the task is theirs. If the database no longer knows the lease at
all (its token is lower than the one this worker held: commits lost in a
failover with asynchronous replication), the worker says so.
"""

from __future__ import annotations

import logging
import time

from ...errors import StoreError
from ...records import Lease
from ...store import StateStore
from .holders import WorkerIdentity
from .runner import claim_as

__all__ = ["Outage", "Stranded", "say_if_forgotten", "take_back"]

log = logging.getLogger("ratchet.worker")


class Outage:
    """Whether the store is failing for a worker, since when, and how often it was tried meanwhile."""

    def __init__(self, name: str, longest_pause: float) -> None:
        self.name = name
        self.longest_pause = longest_pause
        self.since: float | None = None
        self.failures = 0
        self.ended_at = float("-inf")

    def failed(self, error: StoreError) -> None:
        """A transaction failed on the store: the first of an outage is said, the rest counted.

        A task's run learns of the failure only once it has tried to record
        how it stopped and to release its lease, which wait for the store: its
        news may come just after the store answered again. A failure within
        `longest_pause` of that is counted with the outage just said.
        """
        self.failures += 1
        if self.since is not None or time.monotonic() - self.ended_at < self.longest_pause:
            return
        self.since = time.monotonic()
        log.warning(
            "worker %s: the store failed (%s); its running tasks stop where their journals stand, "
            "and it tries again with a pause growing to %g s (said once, until the store answers)",
            self.name,
            error,
            self.longest_pause,
        )

    def answered(self) -> bool:
        """The store answered: True when that ends an outage (said once)."""
        if self.since is None:
            return False
        said = "worker %s: the store answers again (%d transaction(s) failed meanwhile)"
        log.warning(said, self.name, self.failures)
        self.since, self.failures, self.ended_at = None, 0, time.monotonic()
        return True


class Stranded:
    """The tasks whose runs the store stopped, each with the lease its run held and when to look again."""

    def __init__(self) -> None:
        self._tasks: dict[str, tuple[Lease | None, float]] = {}

    def add(self, task_id: str, lease: Lease | None, retry_at: float) -> None:
        self._tasks[task_id] = (lease, retry_at)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._tasks

    def ids(self) -> set[str]:
        return set(self._tasks)

    def all_due(self) -> None:
        """The store is back: every stranded task may be taken back now."""
        self._tasks = {task_id: (lease, 0.0) for task_id, (lease, _) in self._tasks.items()}

    def due(self, now: float) -> list[tuple[str, Lease | None]]:
        return [(task_id, lease) for task_id, (lease, at) in self._tasks.items() if at <= now]

    def drop(self, task_id: str) -> None:
        self._tasks.pop(task_id, None)


async def take_back(store: StateStore, worker: WorkerIdentity, ttl: float, held: Lease) -> Lease | None:
    """Claim `held`'s task again by replacing `held`: the new lease, or None if it is not ours any more.

    The claim succeeds while `held` is still the task's lease (live, expired
    or released); refused, another worker took the task over. A lease the
    database no longer knows (a token lower than the one held) means commits
    were lost in a failover: said, not passed over.
    """
    mine = await claim_as(store, held.task_id, worker, ttl, replacing=held.token)
    if mine is None:
        await say_if_forgotten(store, held)
        return None
    if mine.token <= held.token:  # no lease row at all any more: the claim made a first one
        log.warning("%s", lost_lease_message(held, None))
    else:
        log.info(
            "task %s: taken back after the store failed; its lease was still this worker's", held.task_id
        )
    return mine


async def say_if_forgotten(store: StateStore, held: Lease) -> bool:
    """Warn if the database no longer knows `held` (a lease this worker held): True if it said so.

    A lease lost the ordinary way was replaced by a newer claim (a higher
    token). One the database has no trace of, or an older token in its
    place, means the commits that claimed it are gone: a failover lost them.
    """
    now_known = await store.get_lease(held.task_id)
    if now_known is not None and now_known.token >= held.token:
        return False
    log.warning("%s", lost_lease_message(held, now_known))
    return True


def lost_lease_message(held: Lease, now_known: Lease | None) -> str:
    """The warning for a lease the database no longer knows: commits of this worker were lost."""
    known = "no lease" if now_known is None else f"lease {now_known.token} ({now_known.owner})"
    return (
        f"task {held.task_id}: the database no longer knows the lease this worker held on it (token "
        f"{held.token}; it has {known}): commits this worker made for the task were lost, as a "
        "failover with asynchronous replication loses them; the task resumes from what its journal "
        "kept, and the calls recorded after that run again (keyed ones under the same idempotency key)"
    )
