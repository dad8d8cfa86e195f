"""`Runtime.retry` of plain workflows: from the call that failed for good, over the whole journal when
the code raised, from a step's start with `from_step`, and where a cancelled task was stopped."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from ratchet.errors import CannotRetry
from ratchet.records import OpStatus, StepStatus, TaskStatus, WaitReason
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..helpers.builders import make_op
from .flows import FLOWS, entries
from .retry_flows import RETRY_FLOWS
from .support import leave_in_flight


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _labels(ledger: str) -> Counter[str]:
    return Counter(e["label"] for e in entries(ledger))


async def test_a_call_that_failed_for_good_runs_again_and_nothing_before_it(
    rt: Runtime, store: StateStore, ledger: str, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    failed = await rt.run(f"{RETRY_FLOWS}:pack_and_ship", {"ledger": ledger, "gate": str(gate)})
    assert failed.status is TaskStatus.FAILED
    assert "carrier refused" in (failed.error or "")
    gate.touch()

    retry = await rt.retry(failed.id)
    steps = await store.list_steps(retry)
    assert [(s.name, s.status) for s in steps] == [
        ("pack", StepStatus.COMPLETED),
        ("ship", StepStatus.CURRENT),
    ]
    done = await rt.resume(retry)

    assert (done.status, done.result) == (TaskStatus.COMPLETED, "shipped")
    assert _labels(ledger) == Counter({"pack": 1, "label": 1, "ship": 2})  # ship: the failure, then the retry
    assert [s.status for s in await store.list_steps(retry)] == [StepStatus.COMPLETED] * 2


async def test_code_that_raised_runs_again_over_the_whole_journal(
    rt: Runtime, store: StateStore, ledger: str, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    failed = await rt.run(f"{RETRY_FLOWS}:checks_after", {"ledger": ledger, "gate": str(gate)})
    assert failed.error == "ValueError: the address is missing"
    gate.touch()

    done = await rt.resume(await rt.retry(failed.id))

    assert (done.status, done.result) == (TaskStatus.COMPLETED, "checked")
    assert _labels(ledger) == Counter({"pack": 1})


async def test_from_step_runs_that_step_again_whole(
    rt: Runtime, store: StateStore, ledger: str, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    failed = await rt.run(f"{RETRY_FLOWS}:pack_and_ship", {"ledger": ledger, "gate": str(gate)})
    gate.touch()
    with pytest.raises(CannotRetry, match="from 1 to 2"):
        await rt.retry(failed.id, from_step=3)

    done = await rt.resume(await rt.retry(failed.id, from_step=2))

    assert done.status is TaskStatus.COMPLETED
    assert _labels(ledger) == Counter({"pack": 1, "label": 2, "ship": 2})


async def test_a_cancelled_task_carries_on_and_a_call_in_flight_keeps_its_key(
    rt: Runtime, store: StateStore, ledger: str
) -> None:
    """The call in flight when the task was cancelled may have happened: the retry settles it as a
    resume would, with the idempotency key it was made with."""
    task_id = await rt.submit(f"{FLOWS}:call_one", {"ledger": ledger, "tool_name": "idem"})
    await leave_in_flight(
        store,
        task_id,
        make_op(task_id, 0, name="record", status=OpStatus.SUCCEEDED, output={"label": "warmup"}),
    )
    args = {"ledger": ledger, "label": "idem"}
    async with store.transaction() as tx:
        await tx.record_op_started(make_op(task_id, 1, name="idem", input=args))
    await rt.cancel(task_id)

    retry = await rt.retry(task_id)
    done = await rt.resume(retry)

    assert (done.status, done.result) == (TaskStatus.COMPLETED, "idem")
    assert [c["key"] for c in entries(ledger, "idem")] == [f"{task_id}:1"]
    assert entries(ledger, "warmup") == []  # replayed, not run


async def test_a_cancelled_task_whose_call_was_in_flight_waits_for_a_person(
    rt: Runtime, store: StateStore, ledger: str
) -> None:
    task_id = await rt.submit(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "record"})
    await leave_in_flight(
        store, task_id, make_op(task_id, 0, name="record", input={"ledger": ledger, "label": "record"})
    )
    await rt.cancel(task_id)

    waiting = await rt.resume(await rt.retry(task_id))

    assert waiting.waiting_on is WaitReason.IN_DOUBT
    assert entries(ledger) == []
