"""The task listing (`list_task_rows`, `count_task_rows`): filters, order and paging run in the
store, on every store kind, and only the listed columns come back; `get_tasks` reads a page's
whole records at once."""

from __future__ import annotations

import datetime as dt

import pytest

from ratchet.records import TaskFilter, TaskRow, TaskStatus, WaitReason
from ratchet.store import StateStore

from ..helpers.builders import make_task

T0 = dt.datetime(2026, 1, 1, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
async def listed(store: StateStore) -> list[str]:
    """Six tasks a minute apart: two agents, three names, and every kind of status."""
    specs = [
        ("a1", "build", "alpha", TaskStatus.QUEUED, None),
        ("a2", "deploy", "alpha", TaskStatus.RUNNING, None),
        ("b1", "build", "beta", TaskStatus.WAITING, WaitReason.APPROVAL),
        ("b2", "report", "beta", TaskStatus.COMPLETED, None),
        ("a3", "build", "alpha", TaskStatus.FAILED, None),
        ("b3", "deploy", "beta", TaskStatus.COMPLETED, None),
    ]
    for i, (task_id, name, agent, status, waits) in enumerate(specs):
        at = T0 + dt.timedelta(minutes=i)
        task = make_task(
            task_id, name=name, agent=agent, status=status, waiting_on=waits, created_at=at, updated_at=at
        )
        await store.create_task(task)
    return [spec[0] for spec in specs]


def _ids(found: list[TaskRow]) -> list[str]:
    return [row.id for row in found]


async def test_rows_carry_the_listed_columns_oldest_first(store: StateStore, listed: list[str]) -> None:
    found = await store.list_task_rows()

    assert _ids(found) == listed
    waiting = found[2]
    assert (waiting.name, waiting.agent, waiting.status_text) == ("build", "beta", "waiting(approval)")
    assert waiting.created_at == waiting.updated_at == T0 + dt.timedelta(minutes=2)
    assert await store.count_task_rows() == 6


async def test_newest_first_limit_and_offset_page_the_listing(store: StateStore, listed: list[str]) -> None:
    assert _ids(await store.list_task_rows(limit=2, newest_first=True)) == ["b3", "a3"]
    assert _ids(await store.list_task_rows(limit=2, offset=2, newest_first=True)) == ["b2", "b1"]
    assert _ids(await store.list_task_rows(limit=2, offset=5)) == ["b3"]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (TaskFilter(name="build"), ["a1", "b1", "a3"]),
        (TaskFilter(agent="beta"), ["b1", "b2", "b3"]),
        (TaskFilter(name="build", agent="alpha"), ["a1", "a3"]),
        (TaskFilter(statuses=frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED})), ["b2", "a3", "b3"]),
        (TaskFilter(agent="alpha", statuses=frozenset({TaskStatus.RUNNING})), ["a2"]),
        (TaskFilter(since=T0 + dt.timedelta(minutes=4)), ["a3", "b3"]),
        (TaskFilter(until=T0 + dt.timedelta(minutes=2)), ["a1", "a2"]),
        (
            TaskFilter(name="deploy", since=T0 + dt.timedelta(minutes=1), until=T0 + dt.timedelta(minutes=5)),
            ["a2"],
        ),
        (TaskFilter(name="nobody"), []),
    ],
)
async def test_each_filter_and_their_combinations(
    store: StateStore, listed: list[str], where: TaskFilter, expected: list[str]
) -> None:
    assert _ids(await store.list_task_rows(where)) == expected
    assert _ids(await store.list_task_rows(where, newest_first=True)) == expected[::-1]
    assert await store.count_task_rows(where) == len(expected)


async def test_children_are_listed_by_their_parent(store: StateStore, listed: list[str]) -> None:
    await store.create_task(make_task("kid", parent_id="a1", created_at=T0 + dt.timedelta(hours=1)))

    assert _ids(await store.list_task_rows(TaskFilter(parent_id="a1"))) == ["kid"]


async def test_a_task_change_shows_in_its_row(store: StateStore, listed: list[str]) -> None:
    task = await store.get_task("a1")
    moved = await store.update_task(task.transition(TaskStatus.RUNNING))

    [row] = await store.list_task_rows(
        TaskFilter(statuses=frozenset({TaskStatus.RUNNING}), agent="alpha"), limit=1
    )

    assert row.id == "a1"
    assert row.updated_at == moved.updated_at


async def test_a_page_of_whole_records_comes_in_the_order_asked(store: StateStore, listed: list[str]) -> None:
    page = await store.get_tasks(["b3", "a1", "gone", "b1"])

    assert [task.id for task in page] == ["b3", "a1", "b1"]  # a task not stored is left out
    assert page[2] == await store.get_task("b1")
    assert await store.get_tasks([]) == []
