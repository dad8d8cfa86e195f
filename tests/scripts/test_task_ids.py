"""A task id names one task: `Runtime.run` and `Runtime.submit` under an id that exists make no second task.

On every store. Started again under its id, a task that has not ended is
resumed (`run`) or left for its worker (`submit`); one that ended, or waits
on a person, is returned as it stands; an id taken by another workflow is
refused in one line, with nothing stored.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ratchet.errors import InputError
from ratchet.records import TaskStatus, WaitReason
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..engine.flows import Crash, entries, sequence
from ..helpers.people_flows import mail, sends


async def test_run_again_under_its_id_resumes_the_task_that_stopped_midway(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    with pytest.raises(Crash):  # the process "dies" after two effects
        await rt.run(sequence, {"ledger": ledger}, task_id="order-42")

    task = await rt.run(sequence, {"ledger": ledger}, task_id="order-42")
    again = await rt.run(sequence, {"ledger": ledger}, task_id="order-42")

    assert task.status is TaskStatus.COMPLETED
    assert again == task
    assert [len(entries(ledger, label)) for label in ("a", "b", "crash", "c")] == [1, 1, 2, 1]
    assert [t.id for t in await store.list_tasks()] == ["order-42"]


async def test_submit_again_under_its_id_queues_nothing_more(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    first = await rt.submit(sequence, {"ledger": ledger}, task_id="nightly")
    second = await rt.submit(sequence, {"ledger": ledger}, task_id="nightly")

    assert first == second == "nightly"
    assert [t.id for t in await store.list_tasks()] == ["nightly"]
    assert len(await store.list_triggers("nightly")) == 1
    assert [e.kind for e in await store.list_events("nightly")] == ["task_created"]


async def test_the_existing_task_stands_whatever_inputs_a_later_start_gives(
    store: StateStore, rt: Runtime, ledger: str, tmp_path: Path
) -> None:
    await rt.submit(sequence, {"ledger": ledger}, task_id="order-7")

    with pytest.raises(Crash):  # `run` takes up the submitted task, not the new inputs
        await rt.run(sequence, {"ledger": str(tmp_path / "other.jsonl")}, task_id="order-7")

    task = await store.get_task("order-7")
    assert task.inputs_params == {"ledger": ledger}
    assert [len(entries(ledger, label)) for label in ("a", "b", "crash")] == [1, 1, 1]


async def test_run_again_returns_a_task_that_waits_on_a_person_as_it_stands(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    waiting = await rt.run(mail, {"ledger": ledger}, task_id="mail-1")
    assert waiting.waiting_on is WaitReason.APPROVAL

    again = await rt.run(mail, {"ledger": ledger}, task_id="mail-1")

    assert again == waiting
    assert sends(ledger) == []
    assert len(await store.list_approvals("mail-1")) == 1


async def test_an_id_taken_by_another_workflow_is_refused_and_nothing_is_stored(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    await rt.submit(sequence, {"ledger": ledger}, task_id="order-9")

    with pytest.raises(InputError) as refused:
        await rt.run(mail, {"ledger": ledger}, task_id="order-9")

    assert (
        "task id 'order-9' is taken by a task of workflow tests.engine.flows:sequence"
        in refused.value.message
    )
    assert "\n" not in refused.value.message
    task = await store.get_task("order-9")
    assert (task.workflow, task.status) == ("tests.engine.flows:sequence", TaskStatus.QUEUED)
    assert [t.id for t in await store.list_tasks()] == ["order-9"]
