"""`Runtime.get_task` and `Runtime.list_tasks`: tasks read as records, filtered as `ratchet tasks` filters."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ratchet.errors import CorruptRecord, InputError, TaskNotFound
from ratchet.records import Task, TaskStatus, utcnow
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..helpers.raw_sql import change_task_record
from . import flows


def _ids(tasks: list[Task]) -> list[str]:
    return [task.id for task in tasks]


async def test_get_task_reads_the_task_as_stored(store: StateStore) -> None:
    rt = Runtime(store)
    task = await rt.run(flows.double, {"n": 2})
    got = await rt.get_task(task.id)
    assert got == await store.get_task(task.id)
    assert (got.status, got.result) == (TaskStatus.COMPLETED, 4)


async def test_get_task_of_an_unknown_id_is_task_not_found(store: StateStore) -> None:
    with pytest.raises(TaskNotFound, match="no task with id 'nope'"):
        await Runtime(store).get_task("nope")


async def test_list_tasks_filters_as_the_cli_does(store: StateStore) -> None:
    rt = Runtime(store)
    first = await rt.run(flows.double, {"n": 1}, name="first")
    between = utcnow()
    asked = await rt.run(flows.asks, {"question": "Which region?"}, name="asking")
    queued = await rt.submit(flows.double, {"n": 3}, name="later")
    parent = await rt.run(flows.starts_child, {"n": 4}, name="parent")
    [child] = [task for task in await store.list_tasks() if task.parent_id == parent.id]

    assert _ids(await rt.list_tasks()) == [first.id, asked.id, queued, parent.id, child.id]
    assert _ids(await rt.list_tasks(newest_first=True, limit=2)) == [child.id, parent.id]
    assert _ids(await rt.list_tasks(limit=2, offset=1)) == [asked.id, queued]
    assert _ids(await rt.list_tasks(status="waiting")) == [asked.id]
    assert _ids(await rt.list_tasks(status=TaskStatus.QUEUED)) == [queued]
    assert _ids(await rt.list_tasks(status=["queued", TaskStatus.WAITING])) == [asked.id, queued]
    assert _ids(await rt.list_tasks(status=" Completed ")) == [first.id, parent.id, child.id]
    assert _ids(await rt.list_tasks(name="later")) == [queued]
    assert _ids(await rt.list_tasks(agent="asks")) == [asked.id]  # a workflow's tasks: its name
    assert _ids(await rt.list_tasks(parent_id=parent.id)) == [child.id]
    assert _ids(await rt.list_tasks(until=between)) == [first.id]
    assert _ids(await rt.list_tasks(since=between, status="completed")) == [parent.id, child.id]
    assert await rt.list_tasks(name="nobody") == []


async def test_list_tasks_refuses_what_filters_nothing(store: StateStore) -> None:
    rt = Runtime(store)
    with pytest.raises(InputError, match="unknown status 'done'; use one of queued, running, waiting"):
        await rt.list_tasks(status="done")
    with pytest.raises(InputError, match="limit -1 and offset 0: give whole numbers from 0"):
        await rt.list_tasks(limit=-1)


async def test_list_and_count_tasks_find_by_labels_search_and_sort(store: StateStore) -> None:
    rt = Runtime(store)
    one = await rt.run(flows.double, {"n": 1}, name="Nightly invoice", labels={"team": "billing"})
    two = await rt.run(flows.double, {"n": 2}, name="weekly invoice", labels={"team": "ops", "env": "prod"})
    three = await rt.submit(flows.double, {"n": 3}, name="backup", labels={"team": "ops"})

    assert _ids(await rt.list_tasks(search="INVOICE")) == [one.id, two.id]
    assert _ids(await rt.list_tasks(search="invoice", labels={"team": "ops"})) == [two.id]
    assert _ids(await rt.list_tasks(labels={"team": "ops"}, status="queued")) == [three]
    assert _ids(await rt.list_tasks(id_prefix=three[:6])) == [three]
    assert _ids(await rt.list_tasks(sort="name")) == [one.id, three, two.id]  # by code point: N < b < w
    assert _ids(await rt.list_tasks(sort="-created", limit=1)) == [three]
    assert _ids(await rt.list_tasks(search="4")) == [two.id]  # its result, once it ended
    assert await rt.count_tasks(labels={"team": "ops"}) == 2
    assert await rt.count_tasks(max_cost=0) == 3
    assert (await rt.get_task(three)).labels == {"team": "ops"}


@pytest.mark.parametrize(
    ("filters", "said"),
    [
        ({"search": "!!"}, "search '!!' has no word to search for"),
        ({"labels": {"team": ""}}, "labels: the label team has no value"),
        ({"waiting_on": "godot"}, "waiting_on 'godot': a task waits on one of approval"),
        ({"min_cost": -1}, "min_cost -1: give an amount of US dollars from 0"),
        ({"colour": "red"}, "unknown filter 'colour'; the filters are status, waiting_on"),
        ({"sort": "size"}, "sort 'size': sort by one of created, updated, name, status, cost"),
    ],
)
async def test_a_filter_that_is_not_one_is_an_input_error(
    store: StateStore, filters: dict[str, Any], said: str
) -> None:
    with pytest.raises(InputError, match=re.escape(said)):
        await Runtime(store).list_tasks(**filters)


async def test_a_label_that_is_not_one_stores_no_task(store: StateStore) -> None:
    with pytest.raises(InputError, match="labels: the key '1x' is not a label key"):
        await Runtime(store).submit(flows.double, {"n": 1}, labels={"1x": "y"})
    assert await store.count_task_rows() == 0


async def test_list_tasks_leaves_out_an_unreadable_row_and_reports_it(url: str) -> None:
    async with Runtime(url) as rt:
        good = await rt.run(flows.double, {"n": 1})
        bad = await rt.run(flows.double, {"n": 2})
        change_task_record(url, bad.id, lambda record: record["state"].update(known_facts=5))
        assert _ids(await rt.list_tasks()) == [good.id]
        unreadable: list[CorruptRecord] = []
        assert _ids(await rt.list_tasks(unreadable=unreadable)) == [good.id]
        assert [problem.key for problem in unreadable] == [(bad.id,)]
