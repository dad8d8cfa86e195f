"""Rows that do not decode: one read of one record says what is wrong, listings go on without them.

Only the SQL stores have rows another hand can write, so this suite runs on those.
"""

from __future__ import annotations

from typing import Any

import pytest

from ratchet.errors import CorruptRecord
from ratchet.records import Task, TaskStatus
from ratchet.store import StateStore

from ..helpers.builders import at, make_event, make_task, make_trigger
from ..helpers.raw_sql import change_task_record, run_sql


@pytest.fixture(params=["sqlite", "postgres"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def three(store: StateStore) -> list[Task]:
    """Three queued tasks, oldest first."""
    return [await store.create_task(make_task(f"t{n}", created_at=at(n))) for n in range(3)]


def _break_facts(record: dict[str, Any]) -> None:
    record["state"]["known_facts"] = 5


async def test_reading_a_task_whose_json_does_not_validate_names_the_task_and_the_field(
    store: StateStore, store_url: str, three: list[Task]
) -> None:
    change_task_record(store_url, "t1", _break_facts)

    with pytest.raises(CorruptRecord) as caught:
        await store.get_task("t1")

    error = caught.value
    assert (error.what, error.table, error.key) == ("task t1", "tasks", ("t1",))
    assert error.problem == "state.known_facts: Input should be a valid array"
    assert error.message == "task t1 is unreadable: state.known_facts: Input should be a valid array"


@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        ("record", "not json at all", "Invalid JSON"),
        ("record", '{"id": "t1"}', "(and "),  # every required field missing: the first, and a count
        ("status", "bogus", "its status column says 'bogus' but its record says 'queued'"),
        ("status", "completed", "its status column says 'completed' but its record says 'queued'"),
    ],
)
async def test_a_record_that_is_not_json_or_columns_that_disagree_are_unreadable(
    store: StateStore, store_url: str, three: list[Task], column: str, value: str, problem: str
) -> None:
    run_sql(store_url, f"UPDATE tasks SET {column} = ? WHERE id = 't1'", value)

    with pytest.raises(CorruptRecord, match="task t1 is unreadable") as caught:
        await store.get_task("t1")

    assert problem in caught.value.problem
    assert "\n" not in caught.value.message


async def test_a_status_column_that_names_no_status_stops_an_update_with_corrupt_record(
    store: StateStore, store_url: str, three: list[Task]
) -> None:
    run_sql(store_url, "UPDATE tasks SET status = 'bogus' WHERE id = 't1'")

    with pytest.raises(CorruptRecord, match="holds 'bogus', not a task status"):
        await store.update_task(three[1].transition(TaskStatus.RUNNING))


async def test_control_characters_in_a_stored_value_are_shown_escaped(
    store: StateStore, store_url: str, three: list[Task]
) -> None:
    change_task_record(store_url, "t1", lambda record: record["state"].update({"\x1b[2J": 1}))

    with pytest.raises(CorruptRecord) as caught:
        await store.get_task("t1")

    assert "\x1b" not in caught.value.message
    assert "\\x1b[2J" in caught.value.problem


async def test_listing_tasks_leaves_out_an_unreadable_row_and_reports_it(
    store: StateStore, store_url: str, three: list[Task]
) -> None:
    change_task_record(store_url, "t1", _break_facts)
    unreadable: list[CorruptRecord] = []

    listed = await store.list_tasks(unreadable=unreadable)

    assert [task.id for task in listed] == ["t0", "t2"]
    assert [(row.key, row.problem) for row in unreadable] == [
        (("t1",), "state.known_facts: Input should be a valid array")
    ]
    assert [task.id for task in await store.list_tasks(TaskStatus.QUEUED)] == ["t0", "t2"]


async def test_reading_a_page_of_tasks_leaves_out_an_unreadable_row_and_reports_it(
    store: StateStore, store_url: str, three: list[Task]
) -> None:
    change_task_record(store_url, "t1", _break_facts)
    unreadable: list[CorruptRecord] = []

    page = await store.get_tasks(["t2", "t1", "t0"], unreadable=unreadable)

    assert [task.id for task in page] == ["t2", "t0"]
    assert [(row.key, row.problem) for row in unreadable] == [
        (("t1",), "state.known_facts: Input should be a valid array")
    ]


async def test_orphaned_tasks_leave_out_an_unreadable_row(
    store: StateStore, store_url: str, three: list[Task]
) -> None:
    change_task_record(store_url, "t0", _break_facts)
    unreadable: list[CorruptRecord] = []

    orphans = await store.list_orphaned_tasks(unreadable=unreadable)

    assert [task.id for task in orphans] == ["t1", "t2"]
    assert [row.key for row in unreadable] == [("t0",)]


async def test_listing_events_leaves_out_an_unreadable_row_and_reports_its_seq(
    store: StateStore, store_url: str, three: list[Task]
) -> None:
    for n in range(3):
        await store.append_event(make_event("t0", f"event {n}"))
    run_sql(store_url, "UPDATE events SET data = '{oops' WHERE task_id = 't0' AND seq = 2")
    unreadable: list[CorruptRecord] = []

    listed = await store.list_events("t0", unreadable=unreadable)
    newest: list[CorruptRecord] = []
    last = await store.last_events("t0", 2, unreadable=newest)

    assert [event.seq for event in listed] == [1, 3]
    [row] = unreadable
    assert (row.what, row.table, row.key) == ("event 2 of task t0", "events", ("t0", 2))
    assert row.problem.startswith("data: not JSON")
    assert [event.seq for event in last] == [3]
    assert [row.key for row in newest] == [("t0", 2)]


async def test_an_unreadable_due_trigger_is_taken_off_the_queue_and_reported(
    store: StateStore, store_url: str, three: list[Task]
) -> None:
    for task in three:
        await store.put_trigger(make_trigger(at(0), task_id=task.id))
    run_sql(store_url, "UPDATE triggers SET payload = 'nope' WHERE task_id = 't1'")
    dropped: list[CorruptRecord] = []

    claimed = await store.claim_due_triggers(now=at(1), unreadable=dropped)

    assert [trigger.task_id for trigger in claimed] == ["t0", "t2"]
    assert [row.table for row in dropped] == ["triggers"]
    assert await store.list_triggers() == []
    # t1 has no trigger now: an orphan, which the next claim of orphans finds
    assert "t1" in [task.id for task in await store.list_orphaned_tasks(now=at(1))]
