"""What the queue keeps besides tasks: wake-ups (`Trigger`), workers' claims (`Lease`), workers themselves.

A worker records its presence (`WorkerPresence`) while it runs, so that an
idle one is seen too: a lease says only who holds a task.
"""

from __future__ import annotations

import datetime as dt

from pydantic import Field, JsonValue

from ..limits import PRIORITY_MAX, PRIORITY_MIN
from .base import NonEmpty, Record, utcnow

__all__ = ["Lease", "Trigger", "WorkerPresence"]


class Trigger(Record):
    """A durable wake-up. ``id`` is set by the store; lower ``priority`` fires first (None: the task's)."""

    id: int = 0
    fire_at: dt.datetime = Field(default_factory=utcnow)
    priority: int | None = Field(default=None, ge=PRIORITY_MIN, le=PRIORITY_MAX)
    task_id: str | None = None
    session_id: str | None = None
    kind: NonEmpty
    payload: dict[str, JsonValue] = Field(default_factory=dict)
    dedupe_key: str | None = None


class Lease(Record):
    """A worker's claim on a task. ``token`` only grows, one step per claim.

    ``host`` and ``pid`` say which process holds it; ``pid_space`` (the boot
    of the machine and the PID namespace that pid counts in) and
    ``pid_started`` (when that process started, in clock ticks since boot)
    tell it from another process with the same pid: both are read from
    ``/proc`` on Linux and are empty (``""``, 0) where unknown.
    ``granted_at`` is when the claim was made; ``took_over`` says it was made
    over a lease that was still live (its holder was known to be gone);
    ``renewed_at`` is when its holder's heartbeat last renewed it (None: not
    since it was granted).
    """

    task_id: NonEmpty
    owner: NonEmpty
    token: int = Field(ge=1)
    expires_at: dt.datetime
    host: str = ""
    pid: int = 0
    pid_space: str = ""
    pid_started: int = Field(default=0, ge=0)
    released: bool = False
    granted_at: dt.datetime | None = None
    took_over: bool = False
    renewed_at: dt.datetime | None = None

    @property
    def heard_at(self) -> dt.datetime | None:
        """When its holder was last heard from: the last renewal, else the claim."""
        return self.renewed_at or self.granted_at

    def is_live(self, now: dt.datetime | None = None) -> bool:
        return not self.released and self.expires_at > (now or utcnow())


class WorkerPresence(Record):
    """A worker that says it runs: who it is, its slots, and when it was last heard from.

    A worker records itself when it starts, again at each heartbeat (every
    third of its `lease_ttl`, as its leases are renewed), and removes its
    record when it stops gracefully. ``expires_at`` is when it counts as gone
    unless heard from again (docs/workers.md, "Seeing the workers"): a worker
    killed without a word is no longer live from then on, and its record is
    forgotten by the next worker that starts. ``concurrency`` is how many
    tasks it runs at once (its slots); which tasks it holds are its leases.
    """

    name: NonEmpty
    host: str = ""
    pid: int = 0
    concurrency: int = Field(ge=1)
    lease_ttl: float = Field(gt=0)
    started_at: dt.datetime
    heartbeat_at: dt.datetime
    expires_at: dt.datetime

    def is_live(self, now: dt.datetime | None = None) -> bool:
        return self.expires_at > (now or utcnow())
