"""What the queue keeps besides tasks: durable wake-ups (`Trigger`) and workers' claims (`Lease`)."""

from __future__ import annotations

import datetime as dt

from pydantic import Field, JsonValue

from ..limits import PRIORITY_MAX, PRIORITY_MIN
from .base import NonEmpty, Record, utcnow

__all__ = ["Lease", "Trigger"]


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
