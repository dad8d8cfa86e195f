"""Messages to running tasks: ``Runtime.send`` puts one in a task's inbox; ``ctx.receive`` takes it.

A receive is a journal operation of kind ``receive`` (its name is the
message's name). Taking the message and recording it as the receive's
output commit in one transaction, so a replay returns the same message and a
crash never loses one nor delivers it twice; messages of one name are taken
oldest first, whether sent before or after the receive began.

With no message waiting, the receive is recorded ``started`` (with its
deadline, when it has a timeout, measured from the time it was first
recorded) and the task waits, ``waiting(message)``, holding no worker: a
send moves it to ``waiting(timer)`` with a wake trigger, in the transaction
that stores the message; the timeout is a trigger too. Once the deadline
passes with no message, the receive fails with `ReceiveTimeout`, recorded.

`take_pending` is the receive that never waits, for an agent's notes: it
takes every message of a name already there, recorded only when there was
one (so a turn with no note adds nothing to the journal).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Protocol

from pydantic import JsonValue

from ..errors import InputError, NonDeterminismError, ReceiveTimeout, TaskNotFound
from ..printable import printable_json
from ..records import (
    AgentState,
    Event,
    InboxMessage,
    Operation,
    OpKind,
    OpStatus,
    Task,
    TaskStatus,
    Trigger,
    WaitReason,
    utcnow,
)
from .calls import TaskSuspended, step_meta
from .faults import crash_point
from .journal.values import JournalHost
from .queued_patches import outside_view

if TYPE_CHECKING:
    from ..store import StateStore, StoreOps
    from .budget import BudgetTracker

__all__ = [
    "RECEIVE_TIMEOUT_TRIGGER",
    "Receiving",
    "deliver",
    "expire_receive",
    "receive",
    "send_message",
    "take_pending",
]

RECEIVE_TIMEOUT_TRIGGER = "receive_timeout"


class _Receiver(JournalHost, Protocol):
    task: Task
    state: AgentState
    budget: BudgetTracker


class _ReceivingOwner(_Receiver, Protocol):
    @property
    def next_seq(self) -> int: ...

    def _take_seq(self, count: int = 1) -> int: ...


class Receiving:
    """``ctx.receive()`` and ``ctx.take_messages()``: a workflow's side of its inbox (part of `Context`)."""

    async def receive(self: _ReceivingOwner, name: str, *, timeout: float | None = None) -> JsonValue:
        """Wait for the next message named `name` sent to this task (`Runtime.send`); return its payload.

        Messages of one name are received one each, oldest first, whether
        sent before or after this call; a replay returns the same message.
        Until one comes the task waits, ``waiting(message)``, holding no
        worker.

        Args:
            name: the message's name, as the sender gives it.
            timeout: seconds to wait, from when this receive was first
                recorded (a resume does not restart it); None waits for ever.

        Raises:
            ReceiveTimeout: no message came in time (a `TimeoutError` too).
        """
        if timeout is not None and not timeout > 0:
            raise InputError(f"receive {name!r}: the timeout must be a positive number of seconds")
        return await receive(self, self._take_seq(), name, timeout)

    async def take_messages(self: _ReceivingOwner, name: str) -> list[JsonValue]:
        """Take every message named `name` already sent to this task, without waiting; their payloads.

        An empty list when none waits: then nothing is journaled. A replay
        returns what the first run took.
        """
        taken = await take_pending(self, self.next_seq, name)
        if taken is None:
            return []
        self._take_seq()
        return taken


async def receive(ctx: _Receiver, seq: int, name: str, timeout: float | None) -> JsonValue:
    """The payload of the next message named `name`, received at journal position `seq`.

    Raises:
        TaskSuspended: no message yet; the task now waits ``waiting(message)``.
        ReceiveTimeout: the timeout passed with no message (recorded: a replay raises it again).
        NonDeterminismError: another call is recorded at `seq`.
    """
    recorded = _recorded(ctx, seq, name)
    if recorded is not None and recorded.status is OpStatus.SUCCEEDED:
        return _payload(recorded)
    if recorded is not None and recorded.status is OpStatus.FAILED:
        raise ReceiveTimeout(recorded.error)
    started = recorded or _started(ctx, seq, name, timeout)
    deadline = _deadline(started)
    waiting: Task | None = None
    async with ctx.store.transaction(fence=ctx.lease) as tx:
        taken = await tx.take_messages(ctx.task_id, name, taken_by=seq)
        if taken:
            op = _received(started, taken)
            await tx.record_op_finished(op)
            await tx.append_event(_received_event(ctx.task_id, seq, taken))
        elif deadline is not None and utcnow() >= deadline:
            op = started.model_copy(
                update={
                    "status": OpStatus.FAILED,
                    "error": f"no message {name!r} came within {started.input.get('timeout'):g} s",
                    "error_type": ReceiveTimeout.__name__,
                    "finished_at": utcnow(),
                }
            )
            await tx.record_op_finished(op)
            await tx.append_event(
                Event(task_id=ctx.task_id, kind="receive_timed_out", message=str(op.error), data={"seq": seq})
            )
        else:
            op = started
            if recorded is None:
                await tx.record_op_started(started)
            waiting = ctx.task.transition(
                TaskStatus.WAITING, waiting_on=WaitReason.MESSAGE, cost=ctx.budget.cost
            )
            waiting = await outside_view(tx, waiting, ctx.state)
            await tx.update_task(waiting)
            if deadline is not None:
                await tx.put_trigger(
                    Trigger(
                        kind=RECEIVE_TIMEOUT_TRIGGER,
                        task_id=ctx.task_id,
                        fire_at=deadline,
                        payload={"seq": seq},
                        dedupe_key=f"{ctx.task_id}:{RECEIVE_TIMEOUT_TRIGGER}:{seq}",
                    )
                )
            until = "" if deadline is None else f" until {deadline:%Y-%m-%d %H:%M:%S} UTC"
            message = (
                f"receive {name!r} (operation {seq}) waits for a message{until}; "
                f"send one with `ratchet send {ctx.task_id} {name} [JSON]`"
            )
            await tx.append_event(
                Event(
                    task_id=ctx.task_id,
                    kind="waiting",
                    message=message,
                    display_message=f"waiting (message): {message}",
                    data={"reason": str(WaitReason.MESSAGE), "seq": seq, "name": name},
                )
            )
    ctx.journal.recorded[seq] = op
    if waiting is not None:
        ctx.task = waiting
        raise TaskSuspended(WaitReason.MESSAGE, message)
    crash_point("after_receive_commit")
    if op.status is OpStatus.FAILED:
        raise ReceiveTimeout(op.error)
    return _payload(op)


async def take_pending(ctx: _Receiver, seq: int, name: str) -> list[JsonValue] | None:
    """Take every message named `name` already waiting, at journal position `seq`, without waiting.

    Returns their payloads, oldest first, or None when the journal holds no
    such take at `seq` and (live) no message waits: then nothing is
    recorded and `seq` stays free for the next call.
    """
    recorded = ctx.journal.lookup(seq)
    if recorded is not None:
        if recorded.kind is not OpKind.RECEIVE or recorded.name != name:
            return None  # no message was taken here on the first run: the call after it took `seq`
        return _payloads(recorded)
    if not any(m.name == name for m in await ctx.store.list_inbox(ctx.task_id, pending_only=True)):
        return None
    started = _started(ctx, seq, name, None, every=True)
    async with ctx.store.transaction(fence=ctx.lease) as tx:
        taken = await tx.take_messages(ctx.task_id, name, taken_by=seq, limit=None)
        if not taken:
            return None  # nothing to record: another run of this task took them (a lost lease fails first)
        op = _received(started, taken)
        await tx.record_op_finished(op)
        await tx.append_event(_received_event(ctx.task_id, seq, taken))
    ctx.journal.recorded[seq] = op
    crash_point("after_receive_commit")
    return _payloads(op)


def _recorded(ctx: _Receiver, seq: int, name: str) -> Operation | None:
    recorded = ctx.journal.lookup(seq)
    if recorded is not None and (recorded.kind is not OpKind.RECEIVE or recorded.name != name):
        raise NonDeterminismError(ctx.task_id, seq, f"{recorded.kind} {recorded.name}", f"receive {name}")
    return recorded


def _started(ctx: _Receiver, seq: int, name: str, timeout: float | None, *, every: bool = False) -> Operation:
    now = utcnow()
    deadline = None if timeout is None else (now + dt.timedelta(seconds=timeout)).isoformat()
    return Operation(
        task_id=ctx.task_id,
        seq=seq,
        kind=OpKind.RECEIVE,
        name=name,
        idempotency_key=f"{ctx.task_id}:{seq}",
        status=OpStatus.STARTED,
        input={"name": name, "timeout": timeout, "deadline": deadline, "all": every},
        meta=step_meta(ctx.current_step),
        started_at=now,
    )


def _deadline(op: Operation) -> dt.datetime | None:
    deadline = op.input.get("deadline") if isinstance(op.input, dict) else None
    return None if deadline is None else dt.datetime.fromisoformat(str(deadline))


def _received(started: Operation, taken: list[InboxMessage]) -> Operation:
    every = isinstance(started.input, dict) and started.input.get("all")
    output: JsonValue = [m.payload for m in taken] if every else taken[0].payload
    return started.model_copy(
        update={
            "status": OpStatus.SUCCEEDED,
            "output": output,
            "finished_at": utcnow(),
            "meta": {**started.meta, "messages": [m.seq for m in taken]},
        }
    )


def _payload(op: Operation) -> JsonValue:
    output: JsonValue = op.output
    return output


def _payloads(op: Operation) -> list[JsonValue]:
    return list(op.output) if isinstance(op.output, list) else [op.output]


def _received_event(task_id: str, seq: int, taken: list[InboxMessage]) -> Event:
    names = ", ".join(f"{m.name!r} #{m.seq}" for m in taken)
    return Event(
        task_id=task_id,
        kind="message_received",
        message=f"received {names} (operation {seq})",
        data={"seq": seq, "messages": [m.seq for m in taken]},
    )


# --------------------------------------------------------------------------- sending


async def send_message(store: StateStore, task_id: str, name: str, payload: JsonValue = None) -> InboxMessage:
    """Put a message in the task's inbox; a task waiting for a message is queued to go on.

    Raises:
        TaskNotFound: no task has that id.
        InputError: the name is empty, the payload is not JSON, or the task already ended.
    """
    if not name.strip():
        raise InputError("a message needs a name, e.g. `ratchet send TASK note '\"text\"'`")
    try:
        json.dumps(payload)
    except (TypeError, ValueError) as error:
        raise InputError(f"the payload of message {name!r} is not JSON: {error}") from None
    async with store.transaction() as tx:
        await tx.hold_run(task_id)  # before any other lock: see StoreOps.hold_run
        return await deliver(tx, task_id, name, payload)


async def deliver(tx: StoreOps, task_id: str, name: str, payload: JsonValue) -> InboxMessage:
    """`send_message`'s writes, in the transaction `tx` (a handoff's note shares its transaction).

    Raises:
        TaskNotFound: no task has that id.
        InputError: the task already ended.
    """
    sent = await tx.send_message(InboxMessage(task_id=task_id, name=name, payload=payload))
    task = await tx.get_task(task_id)
    if task.status.is_terminal:
        raise InputError(f"task {task_id} is already {task.status}; it receives no more messages")
    shown = printable_json(payload)
    if len(shown) > 200:
        shown = shown[:199] + "…"
    event = Event(
        task_id=task_id,
        kind="message_sent",
        message=f"message {name!r} #{sent.seq} sent: {shown}",
        data={"name": name, "message": sent.seq},
    )
    await tx.append_event(event)
    if task.waiting_on is WaitReason.MESSAGE:
        await _wake(tx, task, f"{task_id}:message:{sent.seq}")
    return sent


async def _wake(tx: StoreOps, task: Task, dedupe_key: str) -> None:
    """Queue a task waiting for a message: waiting(timer) (which a worker recovers) and a wake trigger."""
    await tx.update_task(task.transition(TaskStatus.WAITING, waiting_on=WaitReason.TIMER))
    await tx.put_trigger(Trigger(kind="wake", task_id=task.id, dedupe_key=dedupe_key))


async def expire_receive(tx: StoreOps, trigger: Trigger) -> bool:
    """Queue the task a ``receive_timeout`` trigger names, if it still waits for a message.

    Runs in the transaction that claimed the trigger: the task becomes
    ``waiting(timer)``, so that if the worker dies before running it,
    another one finds it; run, its receive sees the deadline passed.
    Returns whether the task was queued.
    """
    if trigger.task_id is None:
        return False
    try:
        task = await tx.get_task(trigger.task_id)
    except TaskNotFound:
        return False
    if task.waiting_on is not WaitReason.MESSAGE:
        return False
    await tx.update_task(task.transition(TaskStatus.WAITING, waiting_on=WaitReason.TIMER))
    return True
