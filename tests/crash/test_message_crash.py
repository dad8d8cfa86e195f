"""Messages survive SIGKILL: a worker killed right after taking a message loses none, takes none twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ratchet import Runtime, TaskStatus
from ratchet.records import OpKind

from ..engine.flows import entries
from .harness import EXIT_COMPLETED, KILLED, STORE_KINDS, Stores, finish_worker, start_task_worker

COLLECTOR = "tests.engine.message_flows:collector"


@pytest.fixture(params=STORE_KINDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with Stores(request.param) as stores:
        yield stores.fresh(tmp_path / "run")


async def test_a_worker_killed_after_taking_each_message_delivers_each_exactly_once(
    store_url: str, tmp_path: Path
) -> None:
    ledger = str(tmp_path / "ledger.jsonl")
    async with Runtime(store_url) as rt:
        task_id = await rt.submit(COLLECTOR, {"count": 2, "ledger": ledger}, queue=False)
        await rt.send(task_id, "item", "first")
        await rt.send(task_id, "item", "second")

    # Each worker dies right after the commit that took a message, before anything else.
    for taken in (1, 2):
        code = finish_worker(start_task_worker(store_url, task_id, "after_receive_commit"))
        assert code == KILLED, f"the worker exited {code} instead of dying after taking message {taken}"
        async with Runtime(store_url) as rt:
            inbox = await rt.store.list_inbox(task_id)
        assert [m.taken_by is not None for m in inbox] == [True, taken == 2]
        assert [e["item"] for e in entries(ledger, "item")] == ["first"][: taken - 1]

    assert finish_worker(start_task_worker(store_url, task_id)) == EXIT_COMPLETED

    async with Runtime(store_url) as rt:
        task = await rt.store.get_task(task_id)
        ops = await rt.store.list_ops(task_id)
        inbox = await rt.store.list_inbox(task_id)
    assert (task.status, task.result) == (TaskStatus.COMPLETED, ["first", "second"])
    assert [e["item"] for e in entries(ledger, "item")] == ["first", "second"]  # each logged once
    receives = [op for op in ops if op.kind is OpKind.RECEIVE]
    assert [(op.seq, op.output) for op in receives] == [(0, "first"), (2, "second")]
    assert [(m.payload, m.taken_by) for m in inbox] == [("first", 0), ("second", 2)]
