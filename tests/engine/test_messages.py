"""Messages to running tasks: sent before or after the receive, in order, once; timeouts; no worker held."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from ratchet import InputError, Runtime, TaskNotFound, Worker
from ratchet.engine.inbox import RECEIVE_TIMEOUT_TRIGGER, expire_receive
from ratchet.records import OpKind, OpStatus, TaskStatus, WaitReason
from ratchet.store import StateStore

from .flows import entries

FLOWS = "tests.engine.message_flows"


async def test_a_message_sent_before_the_receive_and_one_sent_after_are_received_in_order(
    store: StateStore, rt: Runtime
) -> None:
    task_id = await rt.submit(f"{FLOWS}:collector", {"count": 3}, queue=False)
    await rt.send(task_id, "item", {"n": 1})  # before the task even started
    await rt.send(task_id, "other", "not for this receive")

    waiting = await rt.resume(task_id)

    assert (waiting.status, waiting.waiting_on) == (TaskStatus.WAITING, WaitReason.MESSAGE)
    assert not WaitReason.MESSAGE.needs_person
    await rt.send(task_id, "item", "two")
    await rt.send(task_id, "item", 3)
    queued = await store.get_task(task_id)
    assert queued.waiting_on is WaitReason.TIMER  # the send queued it, with a wake trigger
    assert [t.kind for t in await store.list_triggers(task_id)] == ["wake"]

    done = await rt.resume(task_id)

    assert done.status is TaskStatus.COMPLETED, done.error
    assert done.result == [{"n": 1}, "two", 3]
    ops = await store.list_ops(task_id)
    assert [(op.kind, op.name, op.status, op.output) for op in ops] == [
        (OpKind.RECEIVE, "item", OpStatus.SUCCEEDED, {"n": 1}),
        (OpKind.RECEIVE, "item", OpStatus.SUCCEEDED, "two"),
        (OpKind.RECEIVE, "item", OpStatus.SUCCEEDED, 3),
    ]
    inbox = await store.list_inbox(task_id)
    assert [(m.seq, m.name, m.taken_by) for m in inbox] == [
        (1, "item", 0),
        (2, "other", None),
        (3, "item", 1),
        (4, "item", 2),
    ]
    assert [m.name for m in await store.list_inbox(task_id, pending_only=True)] == ["other"]


async def test_a_replay_returns_the_recorded_message_and_takes_no_other(
    store: StateStore, rt: Runtime
) -> None:
    task_id = await rt.submit(f"{FLOWS}:collector", {"count": 2}, queue=False)
    await rt.send(task_id, "item", "a")
    await rt.resume(task_id)  # receives "a", waits for the second
    await rt.send(task_id, "item", "b")
    await rt.send(task_id, "item", "c")

    done = await rt.resume(task_id)  # replays the first receive, takes "b" live

    assert done.result == ["a", "b"]
    assert [m.payload for m in await store.list_inbox(task_id, pending_only=True)] == ["c"]


async def test_a_receive_times_out_from_when_it_was_first_recorded(store: StateStore, rt: Runtime) -> None:
    task_id = await rt.submit(f"{FLOWS}:patient", {"timeout": 0.4}, queue=False)

    waiting = await rt.resume(task_id)

    assert waiting.waiting_on is WaitReason.MESSAGE
    (timer,) = await store.list_triggers(task_id)
    assert timer.kind == RECEIVE_TIMEOUT_TRIGGER
    again = await rt.resume(task_id)  # a resume before the deadline waits again, same deadline
    assert again.waiting_on is WaitReason.MESSAGE
    assert [t.fire_at for t in await store.list_triggers(task_id)] == [timer.fire_at]
    await asyncio.sleep(0.5)
    await rt.send(task_id, "late", None)  # another name: no help

    done = await rt.resume(task_id)

    assert done.status is TaskStatus.COMPLETED, done.error
    assert done.result == "timed out (ReceiveTimeout): no message 'answer' came within 0.4 s"
    (op,) = await store.list_ops(task_id)
    assert (op.status, op.error_type) == (OpStatus.FAILED, "ReceiveTimeout")


async def test_a_message_in_time_beats_the_timeout(store: StateStore, rt: Runtime) -> None:
    task_id = await rt.submit(f"{FLOWS}:patient", {"timeout": 30}, queue=False)
    await rt.resume(task_id)
    await rt.send(task_id, "answer", "yes")

    done = await rt.resume(task_id)

    assert (done.status, done.result) == (TaskStatus.COMPLETED, "yes")


async def test_take_messages_does_not_wait_and_journals_only_what_it_took(
    store: StateStore, rt: Runtime
) -> None:
    task_id = await rt.submit(f"{FLOWS}:browser", queue=False)
    await rt.send(task_id, "note", "one")
    await rt.send(task_id, "note", {"two": 2})

    done = await rt.resume(task_id)

    assert done.result == [["one", {"two": 2}], []]
    ops = await store.list_ops(task_id)
    assert [(op.kind, op.name) for op in ops] == [(OpKind.RECEIVE, "note"), (OpKind.CLOCK, "now")]


async def test_sending_to_no_task_or_an_ended_one_is_refused(store: StateStore, rt: Runtime) -> None:
    with pytest.raises(TaskNotFound):
        await rt.send("no-such-task", "item", 1)
    task_id = await rt.submit(f"{FLOWS}:quick", queue=False)
    await rt.resume(task_id)

    with pytest.raises(InputError, match="already completed"):
        await rt.send(task_id, "item", 1)
    with pytest.raises(InputError, match="needs a name"):
        await rt.send(task_id, " ", 1)
    assert await store.list_inbox(task_id) == []


@pytest.fixture
async def one_slot_worker(store: StateStore) -> AsyncIterator[Worker]:
    """A worker with one slot, running in the background until the test ends."""
    worker = Worker(store, concurrency=1, poll_interval=0.05, lease_ttl=5.0)
    stop = asyncio.Event()
    job = asyncio.create_task(worker.run(stop))
    yield worker
    stop.set()
    await asyncio.wait_for(job, 10.0)


async def _until(store: StateStore, task_id: str, done: object) -> None:
    async with asyncio.timeout(10.0):
        while not done(await store.get_task(task_id)):  # type: ignore[operator]
            await asyncio.sleep(0.02)


async def test_a_task_waiting_for_a_message_holds_no_worker_slot(
    store: StateStore, rt: Runtime, one_slot_worker: Worker, ledger: str
) -> None:
    receiver = await rt.submit(f"{FLOWS}:collector", {"count": 1, "ledger": ledger})
    await _until(store, receiver, lambda t: t.waiting_on is WaitReason.MESSAGE)

    other = await rt.submit(f"{FLOWS}:quick")  # the one slot is free: it runs meanwhile
    await _until(store, other, lambda t: t.status is TaskStatus.COMPLETED)
    assert (await store.get_task(receiver)).waiting_on is WaitReason.MESSAGE

    await rt.send(receiver, "item", "go")  # the send's trigger wakes the receiver
    await _until(store, receiver, lambda t: t.status.is_terminal)

    assert (await store.get_task(receiver)).result == ["go"]
    assert [e["item"] for e in entries(ledger, "item")] == ["go"]


async def test_a_workers_timeout_trigger_wakes_the_receiver(
    store: StateStore, rt: Runtime, one_slot_worker: Worker
) -> None:
    task_id = await rt.submit(f"{FLOWS}:patient", {"timeout": 0.3})

    await _until(store, task_id, lambda t: t.status.is_terminal)

    result = (await store.get_task(task_id)).result
    assert isinstance(result, str) and result.startswith("timed out")


async def test_a_claimed_timeout_leaves_a_task_another_worker_finds(store: StateStore, rt: Runtime) -> None:
    task_id = await rt.submit(f"{FLOWS}:patient", {"timeout": 0.2}, queue=False)
    await rt.resume(task_id)
    await asyncio.sleep(0.3)

    # A worker claims the due timeout, then dies before it runs the task.
    async with store.transaction() as tx:
        (claimed,) = await tx.claim_due_triggers()
        assert claimed.kind == RECEIVE_TIMEOUT_TRIGGER
        assert await expire_receive(tx, claimed)

    assert (await store.get_task(task_id)).waiting_on is WaitReason.TIMER
    (lease,) = await store.claim_tasks("another-worker", 5.0)  # an orphan, found by the sweep
    assert lease.task_id == task_id
