"""A nondeterministic value (the clock, a uuid, a wake-up time) recorded once in the journal.

``ctx.now``, ``ctx.uuid`` and ``ctx.sleep`` (clock_and_uuid.py) each take a seq: the first run
records the value it made, and every replay returns that value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pydantic import JsonValue

from ...errors import NonDeterminismError
from ...records import Lease, Operation, OpKind, OpStatus, utcnow
from ...store import StateStore
from ..calls import step_meta
from .task_journal import Journal

__all__ = ["JournalHost", "record_value"]


class JournalHost(Protocol):
    """What of the workflow's context records a value (`Context` is one)."""

    @property
    def task_id(self) -> str: ...

    store: StateStore
    lease: Lease
    journal: Journal

    @property
    def current_step(self) -> int | None: ...


async def record_value(
    ctx: JournalHost,
    seq: int,
    kind: OpKind,
    name: str,
    make: Callable[[], JsonValue],
    *,
    input: JsonValue = None,
) -> JsonValue:
    """The value recorded at `seq`, or ``make()`` recorded there now.

    Raises:
        NonDeterminismError: another kind of operation is recorded at `seq`.
    """
    recorded = ctx.journal.lookup(seq)
    if recorded is not None:
        if recorded.name != name or recorded.kind is not kind:
            raise NonDeterminismError(ctx.task_id, seq, f"{recorded.kind} {recorded.name}", f"{kind} {name}")
        value: JsonValue = recorded.output
        return value
    op = Operation(
        task_id=ctx.task_id,
        seq=seq,
        kind=kind,
        name=name,
        idempotency_key=f"{ctx.task_id}:{seq}",
        status=OpStatus.SUCCEEDED,
        input=input,
        output=make(),
        meta=step_meta(ctx.current_step),
        finished_at=utcnow(),
    )
    await ctx.store.record_op_finished(op, fence=ctx.lease)
    ctx.journal.recorded[seq] = op
    made: JsonValue = op.output
    return made
