"""The values a workflow reads from the world through its context: the time, a UUID, a durable sleep.

Each is journaled as one operation with a seq, so a resumed workflow reads
the recorded value back (replay) instead of a new one. `RecordedValues` is
part of `Context`; its methods reach the rest of the context through
`_ValueOwner`.
"""

from __future__ import annotations

import datetime as dt
import uuid as uuid_module
from collections.abc import Callable
from typing import NoReturn, Protocol

from pydantic import JsonValue

from ...records import Lease, OpKind, Trigger, WaitReason, utcnow
from ...store import StateStore
from .task_journal import Journal
from .values import record_value

__all__ = ["RecordedValues"]


class _ValueOwner(Protocol):
    """What of the context the recorded values use."""

    store: StateStore
    lease: Lease
    journal: Journal

    @property
    def task_id(self) -> str: ...

    @property
    def current_step(self) -> int | None: ...

    def _take_seq(self, count: int = 1) -> int: ...

    async def _record_value(
        self, kind: OpKind, name: str, make: Callable[[], JsonValue], *, input: JsonValue = None
    ) -> tuple[int, JsonValue, bool]: ...

    async def suspend(
        self,
        reason: WaitReason,
        message: str,
        *,
        data: dict[str, JsonValue] | None = None,
        trigger: Trigger | None = None,
        crash_at: str | None = None,
    ) -> NoReturn: ...


class RecordedValues:
    """``ctx.now()``, ``ctx.uuid()``, ``ctx.sleep()``: recorded once, replayed after."""

    async def _record_value(
        self: _ValueOwner, kind: OpKind, name: str, make: Callable[[], JsonValue], *, input: JsonValue = None
    ) -> tuple[int, JsonValue, bool]:
        seq = self._take_seq()
        replayed = self.journal.lookup(seq) is not None
        return seq, await record_value(self, seq, kind, name, make, input=input), replayed

    async def now(self: _ValueOwner) -> dt.datetime:
        """The current time, the same on every replay."""
        _, value, _ = await self._record_value(OpKind.CLOCK, "now", lambda: utcnow().isoformat())
        return dt.datetime.fromisoformat(str(value))

    async def uuid(self: _ValueOwner) -> str:
        """A random UUID (hex), the same on every replay."""
        _, value, _ = await self._record_value(OpKind.UUID, "uuid", lambda: uuid_module.uuid4().hex)
        return str(value)

    async def sleep(self: _ValueOwner, seconds: float) -> None:
        """Wait durably: a timer trigger wakes the task; no process waits meanwhile."""
        seq, value, _ = await self._record_value(
            OpKind.SLEEP,
            "sleep",
            lambda: {"wake_at": (utcnow() + dt.timedelta(seconds=seconds)).isoformat()},
            input={"seconds": seconds},
        )
        assert isinstance(value, dict)
        wake_at = dt.datetime.fromisoformat(str(value["wake_at"]))
        if utcnow() < wake_at:
            await self.suspend(
                WaitReason.TIMER,
                f"sleeping until {wake_at:%Y-%m-%d %H:%M:%S} UTC",
                trigger=Trigger(
                    kind="wake",
                    task_id=self.task_id,
                    fire_at=wake_at,
                    dedupe_key=f"{self.task_id}:wake:{seq}",
                ),
                crash_at="during_sleep",
            )
