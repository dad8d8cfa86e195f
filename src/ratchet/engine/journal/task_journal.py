"""The task's journal as the engine sees it: what was recorded, and writing what happens.

Every write goes through the store fenced by the worker's lease, and carries
the events staged for it, so a call's record and the events that report it
commit together (docs/durability.md, the contract). A write with nothing to
carry (most tool calls: no event, no artifact, no cost) is the store's
journal write alone, which a store may commit as one statement
(docs/durability.md, "One statement a journal write").
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from ...limits import MAX_INLINE_RESULT_BYTES
from ...observe.recording import current_recorder
from ...records import Lease, Operation, OpKind, OpStatus, utcnow
from ...store import StateStore
from ..faults import crash_point
from .large_results import read_back, set_aside, stored_result
from .ride_along import result_committed, rides_along

if TYPE_CHECKING:
    from ..calls import Call

__all__ = ["Journal", "trusted_operation"]


class Journal:
    """The recorded operations of one task, and the writer of new ones.

    A tool result larger than `inline_limit` bytes is kept once, as an
    artifact the journal refers to (`ratchet.engine.journal.large_results`).
    Each commit's time is reported to the recorder of the task's run
    (`current_recorder` as the journal is made, once per run: not a look-up
    of OpenTelemetry's providers per write).
    """

    def __init__(
        self,
        store: StateStore,
        lease: Lease,
        recorded: Iterable[Operation],
        *,
        inline_limit: int = MAX_INLINE_RESULT_BYTES,
    ) -> None:
        self.store = store
        self.lease = lease
        self.inline_limit = inline_limit
        self.recorded = {op.seq: op for op in recorded}
        self.last_recorded_seq = max(self.recorded, default=-1)
        self.recorder = current_recorder()

    def lookup(self, seq: int) -> Operation | None:
        return self.recorded.get(seq)

    async def recorded_output(self, op: Operation) -> JsonValue:
        """The output `op` recorded: inline, or read back from the artifact it was set aside in."""
        stored = stored_result(op)
        if stored is None:
            output: JsonValue = op.output
            return output
        return await read_back(self.store, stored)

    def _operation(
        self,
        call: Call,
        status: OpStatus,
        *,
        output: JsonValue = None,
        error: str | None = None,
        error_type: str | None = None,
        next_attempt_at: dt.datetime | None = None,
        finished_at: dt.datetime | None = None,
    ) -> Operation:
        return trusted_operation(
            {
                "task_id": call.task_id,
                "seq": call.seq,
                "kind": call.kind,
                "name": call.name,
                "attempt": call.attempt,
                "idempotency_key": call.idempotency_key,
                "status": status,
                "input": call.input,
                "output": output,
                "error": error,
                "error_type": error_type,
                "next_attempt_at": next_attempt_at,
                "meta": dict(call.meta),  # its own, as validation made it: the call's goes on changing
                # A call with no attempt started here (a state change, a replay's outcome) takes the
                # moment it ends: `finished_at`, given by the caller, was read before this line runs.
                "started_at": call.started_at or finished_at or utcnow(),
                "finished_at": finished_at,
            }
        )

    async def record_intent(self, call: Call) -> None:
        """Commit that the call is about to run (before its effect)."""
        op = call.intent = self._operation(call, OpStatus.STARTED)
        recorder, began = self.recorder, time.perf_counter()
        events = call.take_events()
        if events:
            async with self.store.transaction(fence=self.lease) as tx:
                await tx.record_op_started(op)
                for event in events:
                    await tx.append_event(event)
        else:
            await self.store.record_op_started(op, fence=self.lease)
        if recorder is not None:
            recorder.committed(time.perf_counter() - began)
        self.recorded[call.seq] = op
        crash_point("after_intent_commit")

    async def flush(self) -> None:
        """Commit now the results riding on the task's next write (ride_along.py): before a wait."""
        await self.store.flush_riders(self.lease)

    async def record_retry(self, call: Call, error: BaseException, next_attempt_at: dt.datetime) -> None:
        """Commit a failed attempt and when the next one is due."""
        op = self._operation(
            call,
            OpStatus.FAILED,
            error=str(error) or type(error).__name__,
            error_type=type(error).__name__,
            next_attempt_at=next_attempt_at,
            finished_at=utcnow(),
        )
        recorder, began = self.recorder, time.perf_counter()
        async with self.store.transaction(fence=self.lease) as tx:
            await tx.record_op_finished(op)
            for event in call.take_events():
                await tx.append_event(event)
        if recorder is not None:
            recorder.committed(time.perf_counter() - began)
        self.recorded[call.seq] = op

    async def record_outcome(
        self, call: Call, *, output: JsonValue = None, error: BaseException | None = None
    ) -> Operation:
        """Commit the call's final result, or its final failure."""
        if error is None:
            op = self._operation(call, OpStatus.SUCCEEDED, output=output, finished_at=utcnow())
        else:
            op = self._operation(
                call,
                OpStatus.FAILED,
                error=str(error) or type(error).__name__,
                error_type=type(error).__name__,
                finished_at=utcnow(),
            )
        aside = None
        if error is None and call.kind is OpKind.TOOL:
            aside = set_aside(op, self.inline_limit, step=call.context.current_step)
        if aside is not None:
            op = aside[0]
        crash_point("before_result_commit")
        events = call.take_events(op)
        recorder, began = self.recorder, time.perf_counter()
        cost = _priced(op)
        if aside is None and not cost and not events:
            if (
                error is None
                and self.store.results_ride_along
                and rides_along(call)
                and self.store.ride_along(op, fence=self.lease, committed=result_committed)
            ):  # written with the task's next commit (ride_along.py): until then, in doubt if it crashes
                self.recorded[call.seq] = op
                return op
            await self.store.record_op_finished(op, fence=self.lease)
        else:
            async with self.store.transaction(fence=self.lease) as tx:
                if aside is not None:
                    await tx.put_artifact(aside[1], aside[2])  # with the outcome: both are kept, or neither
                await tx.record_op_finished(op)
                if cost:  # toward the spend caps of the task, with the call's record (engine/spend_caps.py)
                    await tx.count_spend(op.task_id, cost, day=(op.finished_at or utcnow()).date())
                for event in events:
                    await tx.append_event(event)
        if recorder is not None:  # the commit's time, reported only when it commits
            recorder.committed(time.perf_counter() - began)
        self.recorded[call.seq] = op
        crash_point("after_result_commit")
        return op


def trusted_operation(values: dict[str, Any]) -> Operation:
    """The `Operation` of `values`, every field given, in its declared order, and of its type: not checked.

    The journal builds two operations a call on its hottest path, of values
    that are the engine's own (the seq it took, the attempt it counts, a
    tool it found, arguments its tool checked); validating them again cost
    more than any other Python of the call (and pydantic's `model_construct`
    more still). The JSON values are checked as the store encodes them; what
    comes from outside (a store's row, a person's answer) is validated where
    it comes in. tests/engine/test_trusted_operations.py holds it to what
    validation would have made.
    """
    op = _new_operation(Operation)
    _set(op, "__dict__", values)
    _set(op, "__pydantic_fields_set__", set(values))
    _set(op, "__pydantic_extra__", None)
    _set(op, "__pydantic_private__", None)
    return op


_new_operation = Operation.__new__
_set = object.__setattr__


def _priced(op: Operation) -> float:
    """What a model call that succeeded cost, as priced when it ran (0 when unpriced)."""
    if op.kind is not OpKind.MODEL or op.status is not OpStatus.SUCCEEDED:
        return 0.0
    usage = op.meta.get("usage")
    cost = usage.get("cost") if isinstance(usage, dict) else None
    return float(cost) if isinstance(cost, (int, float)) and cost > 0 else 0.0
