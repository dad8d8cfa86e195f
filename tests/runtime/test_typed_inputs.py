"""A workflow's inputs are checked against its signature before its task exists; its result reads back typed.

Every test runs on every store: a refused input leaves nothing stored, and
the values a run gets are the types its parameters name.
"""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import JsonValue

from ratchet.engine.task_spec import new_task
from ratchet.errors import InputError, InvalidInputs, InvalidResult, TaskNotCompleted
from ratchet.records import TaskStatus, WaitReason
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from . import flows
from .flows import FLOWS, Order, Receipt


async def _nothing_stored(store: StateStore) -> None:
    assert await store.list_tasks() == []
    assert await store.list_triggers() == []


@pytest.mark.parametrize(
    ("inputs", "said"),
    [
        ({"n": "five"}, "inputs of double: n: Input should be a valid integer"),
        ({}, "inputs of double: n: missing; double needs it"),
        ({"n": 1, "m": 2}, "inputs of double: m: not an input of double (it takes n)"),
        ({"m": 2}, "n: missing; double needs it; m: not an input of double"),
    ],
    ids=["wrong type", "missing", "unknown", "misspelt"],
)
async def test_inputs_that_do_not_fit_are_refused_before_the_task_exists(
    store: StateStore, inputs: dict[str, JsonValue], said: str
) -> None:
    rt = Runtime(store)
    for attempt in (
        rt.submit(f"{FLOWS}:double", inputs),  # by reference
        rt.submit(flows.double, inputs),  # by the Workflow itself
        rt.run(flows.double, inputs),
        rt.schedule(flows.double, inputs, every="0 9 * * *"),
    ):
        with pytest.raises(InvalidInputs) as refused:
            await attempt
        assert said in refused.value.message
        assert "\n" not in refused.value.message
        assert isinstance(refused.value, InputError)  # exit 2 on the CLI, a 400 over HTTP
    await _nothing_stored(store)


async def test_inputs_are_coerced_as_pydantic_does_and_stored_as_coerced(store: StateStore) -> None:
    rt = Runtime(store)
    task = await rt.run(flows.typed, {"n": "5", "ratio": 2, "tags": ("a", "b")})
    assert task.status is TaskStatus.COMPLETED
    assert task.result == {"n": [5, "int"], "ratio": [2.0, "float"], "tags": ["a", "b"]}
    assert (await store.get_task(task.id)).inputs_params == {"n": 5, "ratio": 2.0, "tags": ["a", "b"]}


async def test_a_model_and_a_time_reach_the_run_as_their_types(store: StateStore) -> None:
    rt = Runtime(store)
    when = "2026-03-01T09:30:00Z"
    task = await rt.run(flows.checkout, {"order": {"sku": "tea", "quantity": "3"}, "when": when})
    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == {"sku": "tea", "total_cents": 750, "at": when}
    assert task.inputs_params == {"order": {"sku": "tea", "quantity": 3}, "when": when}
    receipt = await rt.result(task.id)
    assert receipt == Receipt(sku="tea", total_cents=750, at=dt.datetime(2026, 3, 1, 9, 30, tzinfo=dt.UTC))
    assert await Runtime(store).result(task.id) == receipt  # a runtime that loads it by reference


async def test_a_model_given_as_an_input_is_stored_as_its_json(store: StateStore) -> None:
    rt = Runtime(store)
    order = Order(sku="tea", quantity=2)
    task_id = await rt.submit(flows.checkout, {"order": order, "when": "2026-03-01T09:30:00Z"})
    assert (await store.get_task(task_id)).inputs_params["order"] == {"sku": "tea", "quantity": 2}


async def test_a_workflow_with_kwargs_takes_any_other_key(store: StateStore) -> None:
    rt = Runtime(store)
    task = await rt.run(flows.open_ended, {"n": "1", "colour": "blue", "nested": {"a": [1]}})
    assert task.result == {"n": 1, "more": {"colour": "blue", "nested": {"a": [1]}}}
    with pytest.raises(InvalidInputs, match="n: Input should be a valid integer"):
        await rt.submit(flows.open_ended, {"n": "one", "colour": "blue"})


async def test_what_no_annotation_checks_takes_any_value(store: StateStore) -> None:
    rt = Runtime(store)
    task = await rt.run(flows.untyped, {"anything": [1, "two"], "odd": {"x": 1}})
    assert task.result == {"anything": [1, "two"], "odd": {"x": 1}}
    with pytest.raises(InvalidInputs, match="anything: missing"):
        await rt.submit(flows.untyped, {})


async def test_a_child_with_inputs_that_do_not_fit_fails_its_parent_and_is_never_made(
    store: StateStore,
) -> None:
    rt = Runtime(store)
    parent = await rt.run(flows.starts_child, {"n": "many"})
    assert parent.status is TaskStatus.FAILED
    assert parent.error is not None
    assert "InvalidInputs: inputs of double: n: Input should be a valid integer" in parent.error
    assert [task.id for task in await store.list_tasks()] == [parent.id]


async def test_a_task_stored_with_inputs_that_no_longer_fit_fails_with_the_reason(store: StateStore) -> None:
    # As a task made before its workflow's signature changed: its record holds what no longer fits.
    made = new_task(flows.double, {"n": 1})
    await store.create_task(made.model_copy(update={"inputs_params": {"n": "one"}}))
    task = await Runtime(store).resume(made.id)
    assert task.status is TaskStatus.FAILED
    assert task.error == (
        "InvalidInputs: inputs of double: n: Input should be a valid integer, "
        "unable to parse string as an integer"
    )


async def test_a_result_reads_back_as_another_type_when_asked(store: StateStore) -> None:
    rt = Runtime(store)
    task = await rt.run(flows.double, {"n": 21})
    assert await rt.result(task.id) == 42
    as_float = await rt.result(task.id, float)
    assert isinstance(as_float, float)
    assert as_float == 42.0
    with pytest.raises(InvalidResult, match=f"the result of task {task.id} does not fit str: Input should"):
        await rt.result(task.id, str)  # pydantic's lax mode makes no text of a number
    with pytest.raises(InvalidResult, match=f"the result of task {task.id} does not fit Order: "):
        await rt.result(task.id, Order)


async def test_only_a_completed_task_has_a_result(store: StateStore) -> None:
    rt = Runtime(store)
    asked = await rt.run(flows.asks, {"question": "Which region?"})
    assert asked.waiting_on is WaitReason.INPUT
    with pytest.raises(TaskNotCompleted, match=f"task {asked.id} is waiting\\(input\\); only a completed"):
        await rt.result(asked.id)
    failed = await rt.run(flows.starts_child, {"n": "many"})
    with pytest.raises(TaskNotCompleted, match="is failed: InvalidInputs"):
        await rt.result(failed.id)
