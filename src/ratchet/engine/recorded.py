"""The recorded values of a workflow's context: the clock, random ids and durable sleeps.

Each takes the next ``seq`` like any call; its value is journaled the first
time and returned from the journal on every replay, so workflow code that
branches on it stays deterministic. `Context` mixes this in.
"""

from __future__ import annotations

import datetime as dt
import uuid as uuid_module
from collections.abc import Callable
from typing import Any, NoReturn

from pydantic import JsonValue

from ..errors import NonDeterminismError
from ..model import Lease, Operation, OpKind, OpStatus, Trigger, WaitReason, utcnow
from ..store import StateStore
from .journal import Journal

__all__ = ["RecordedValues"]


class RecordedValues:
    """``now``, ``uuid`` and ``sleep``: values a workflow takes once and replays ever after."""

    # What the context these are mixed into provides.
    journal: Journal
    store: StateStore
    lease: Lease

    @property
    def task_id(self) -> str:
        raise NotImplementedError

    def _take_seq(self, count: int = 1) -> int:
        raise NotImplementedError

    def _step_meta(self) -> dict[str, Any]:
        raise NotImplementedError

    async def suspend(
        self,
        reason: WaitReason,
        message: str,
        *,
        data: dict[str, JsonValue] | None = None,
        trigger: Trigger | None = None,
        crash_at: str | None = None,
    ) -> NoReturn:
        raise NotImplementedError

    async def _record_value(
        self, kind: OpKind, name: str, make: Callable[[], JsonValue], *, input: JsonValue = None
    ) -> tuple[int, JsonValue, bool]:
        seq = self._take_seq()
        recorded = self.journal.lookup(seq)
        if recorded is not None:
            if recorded.name != name or recorded.kind is not kind:
                raise NonDeterminismError(
                    self.task_id, seq, f"{recorded.kind} {recorded.name}", f"{kind} {name}"
                )
            return seq, recorded.output, True
        op = Operation(
            task_id=self.task_id,
            seq=seq,
            kind=kind,
            name=name,
            idempotency_key=f"{self.task_id}:{seq}",
            status=OpStatus.SUCCEEDED,
            input=input,
            output=make(),
            meta=self._step_meta(),
            finished_at=utcnow(),
        )
        await self.store.record_op_finished(op, fence=self.lease)
        self.journal.recorded[seq] = op
        return seq, op.output, False

    async def now(self) -> dt.datetime:
        """The current time, the same on every replay."""
        _, value, _ = await self._record_value(OpKind.CLOCK, "now", lambda: utcnow().isoformat())
        return dt.datetime.fromisoformat(str(value))

    async def uuid(self) -> str:
        """A random UUID (hex), the same on every replay."""
        _, value, _ = await self._record_value(OpKind.UUID, "uuid", lambda: uuid_module.uuid4().hex)
        return str(value)

    async def sleep(self, seconds: float) -> None:
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
