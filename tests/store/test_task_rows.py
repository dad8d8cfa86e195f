"""The task listing (`list_task_rows`, `count_task_rows`): filters, order and paging run in the
store, on every store kind, and only the listed columns come back; `get_tasks` reads a page's
whole records at once."""

from __future__ import annotations

import datetime as dt

import pytest

from ratchet.errors import InputError
from ratchet.records import TaskCursor, TaskFilter, TaskOrder, TaskRow, TaskSort, TaskStatus, WaitReason
from ratchet.store import StateStore

from ..helpers.builders import make_task

T0 = dt.datetime(2026, 1, 1, 9, 0, tzinfo=dt.UTC)
NEWEST_FIRST = TaskOrder(descending=True)


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
    assert _ids(await store.list_task_rows(order=NEWEST_FIRST, limit=2)) == ["b3", "a3"]
    assert _ids(await store.list_task_rows(order=NEWEST_FIRST, limit=2, offset=2)) == ["b2", "b1"]
    assert _ids(await store.list_task_rows(limit=2, offset=5)) == ["b3"]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (TaskFilter(name="build"), ["a1", "b1", "a3"]),
        (TaskFilter(agent="beta"), ["b1", "b2", "b3"]),
        (TaskFilter(name="build", agent="alpha"), ["a1", "a3"]),
        (TaskFilter(statuses=frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED})), ["b2", "a3", "b3"]),
        (TaskFilter(agent="alpha", statuses=frozenset({TaskStatus.RUNNING})), ["a2"]),
        (TaskFilter(waiting_on=frozenset({WaitReason.APPROVAL, WaitReason.INPUT})), ["b1"]),
        (TaskFilter(waiting_on=frozenset({WaitReason.TIMER})), []),
        (TaskFilter(since=T0 + dt.timedelta(minutes=4)), ["a3", "b3"]),
        (TaskFilter(until=T0 + dt.timedelta(minutes=2)), ["a1", "a2"]),
        (
            TaskFilter(name="deploy", since=T0 + dt.timedelta(minutes=1), until=T0 + dt.timedelta(minutes=5)),
            ["a2"],
        ),
        (TaskFilter(id_prefix="a"), ["a1", "a2", "a3"]),
        (TaskFilter(id_prefix="b2"), ["b2"]),
        (TaskFilter(id_prefix="B"), []),  # ids are matched as they are written
        (TaskFilter(name="nobody"), []),
        (TaskFilter(updated_before=T0 + dt.timedelta(minutes=2)), ["a1", "a2"]),  # what retention walks
        (
            TaskFilter(
                statuses=frozenset({TaskStatus.COMPLETED}), updated_before=T0 + dt.timedelta(minutes=5)
            ),
            ["b2"],
        ),
    ],
)
async def test_each_filter_and_their_combinations(
    store: StateStore, listed: list[str], where: TaskFilter, expected: list[str]
) -> None:
    assert _ids(await store.list_task_rows(where)) == expected
    assert _ids(await store.list_task_rows(where, order=NEWEST_FIRST)) == expected[::-1]
    assert await store.count_task_rows(where) == len(expected)


async def test_children_are_listed_by_their_parent(store: StateStore, listed: list[str]) -> None:
    await store.create_task(make_task("kid", parent_id="a1", created_at=T0 + dt.timedelta(hours=1)))

    assert _ids(await store.list_task_rows(TaskFilter(parent_id="a1"))) == ["kid"]
    assert await store.count_task_rows(TaskFilter(parent_id="a1", name="nobody")) == 0


async def test_a_task_change_shows_in_its_row(store: StateStore, listed: list[str]) -> None:
    task = await store.get_task("a1")
    moved = await store.update_task(task.transition(TaskStatus.RUNNING, cost=0.25))

    [row] = await store.list_task_rows(
        TaskFilter(statuses=frozenset({TaskStatus.RUNNING}), agent="alpha", min_cost=0.25), limit=1
    )

    assert row.id == "a1"
    assert (row.updated_at, row.cost) == (moved.updated_at, 0.25)


async def test_a_page_of_whole_records_comes_in_the_order_asked(store: StateStore, listed: list[str]) -> None:
    page = await store.get_tasks(["b3", "a1", "gone", "b1"])

    assert [task.id for task in page] == ["b3", "a1", "b1"]  # a task not stored is left out
    assert page[2] == await store.get_task("b1")
    assert await store.get_tasks([]) == []


# --------------------------------------------------------------------------- labels, model, cost


@pytest.fixture
async def labelled(store: StateStore) -> None:
    """Four tasks with labels, models and costs."""
    specs = [
        ("l1", {"team": "ops", "env": "prod"}, "openai:gpt-4o-mini", 0.5),
        ("l2", {"team": "ops", "env": "staging"}, "anthropic:claude", 1.25),
        ("l3", {"team": "data"}, None, 0.0),
        ("l4", {"team": "x' OR '1'='1", "env": "%"}, "openai:gpt-4o-mini", 3.0),
    ]
    for i, (task_id, labels, model, cost) in enumerate(specs):
        at = T0 + dt.timedelta(minutes=i)
        await store.create_task(
            make_task(task_id, labels=labels, model=model, cost=cost, created_at=at, updated_at=at)
        )


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (TaskFilter(labels=(("team", "ops"),)), ["l1", "l2"]),
        (TaskFilter(labels=(("team", "ops"), ("env", "prod"))), ["l1"]),
        (TaskFilter(labels=(("env", "prod"), ("team", "data"))), []),
        (TaskFilter(labels=(("team", "x' OR '1'='1"),)), ["l4"]),  # a value, never SQL
        (TaskFilter(labels=(("env", "%"),)), ["l4"]),
        (TaskFilter(labels=(("env", "_"),)), []),
        (TaskFilter(labels=(("nope", "ops"),)), []),
        (TaskFilter(model="openai:gpt-4o-mini"), ["l1", "l4"]),
        (TaskFilter(model="openai"), []),
        (TaskFilter(min_cost=0.5), ["l1", "l2", "l4"]),
        (TaskFilter(max_cost=0.5), ["l1", "l3"]),
        (TaskFilter(min_cost=1.0, max_cost=1.25), ["l2"]),
        (TaskFilter(labels=(("team", "ops"),), min_cost=1.0), ["l2"]),
    ],
)
async def test_labels_model_and_cost_filter(
    store: StateStore, labelled: None, where: TaskFilter, expected: list[str]
) -> None:
    assert _ids(await store.list_task_rows(where)) == expected
    assert await store.count_task_rows(where) == len(expected)


async def test_a_tasks_labels_and_cost_are_in_its_record_and_go_with_it(
    store: StateStore, labelled: None
) -> None:
    task = await store.get_task("l1")
    assert (task.labels, task.cost) == ({"team": "ops", "env": "prod"}, 0.5)

    await store.update_task(task.transition(TaskStatus.CANCELLED))
    await store.delete_task("l1")
    await store.create_task(make_task("l1", created_at=T0))

    assert await store.count_task_rows(TaskFilter(labels=(("team", "ops"),))) == 1  # l2 only
    assert (await store.get_task("l1")).labels == {}


# --------------------------------------------------------------------------- search


@pytest.fixture
async def searched(store: StateStore) -> None:
    """Tasks whose name, instruction, result and error hold words to find."""
    specs = [
        ("s1", "Nightly report", "Summarize the Café sales", TaskStatus.COMPLETED, "Revenue grew", None),
        ("s2", "deploy-prod", "Roll out version 2.4 to PROD", TaskStatus.FAILED, None, "rate limit (429)"),
        ("s3", "cleanup", "remove stale branches", TaskStatus.RUNNING, None, None),
        ("s4", "ledger", "keep the Straße ledger", TaskStatus.COMPLETED, {"total": 42, "note": "ok"}, None),
        ("s5", "quote", 'say "NEAR(x y)" * AND OR', TaskStatus.QUEUED, None, None),
    ]
    for i, (task_id, name, instruction, status, result, error) in enumerate(specs):
        at = T0 + dt.timedelta(minutes=i)
        task = make_task(
            task_id,
            name=name,
            instruction=instruction,
            status=status,
            result=result,
            error=error,
            created_at=at,
            updated_at=at,
        )
        await store.create_task(task)


@pytest.mark.parametrize(
    ("search", "expected"),
    [
        ("report", ["s1"]),  # the name
        ("REPORT", ["s1"]),  # any case
        ("rep", ["s1"]),  # the start of a word (report); deploy-prod has none starting with rep
        ("cafe", ["s1"]),  # accents dropped
        ("café", ["s1"]),
        ("strasse", ["s4"]),  # case folded
        ("revenue", ["s1"]),  # a completed task's result
        ("ok", ["s4"]),  # a result that is JSON: its text
        ("total", ["s4"]),
        ("429", ["s2"]),  # a failed task's error
        ("limit rate", ["s2"]),  # every word, in any order
        ("rate nightly", []),
        ("deploy prod", ["s2"]),  # punctuation parts words
        ("prod", ["s2"]),
        ("2 4", ["s2"]),
        ("stale", ["s3"]),
        ('"NEAR(x', ["s5"]),  # FTS syntax is only words
        ("near", ["s5"]),
        ("* and or", ["s5"]),
        ("x' OR '1'='1", []),  # words: x, or, 1, 1 -- s5 has x and or, not 1
        ("ales", []),  # a word's middle is not its start
        ("nothing-here", []),
    ],
)
async def test_a_search_finds_tasks_whose_words_start_with_every_word_given(
    store: StateStore, searched: None, search: str, expected: list[str]
) -> None:
    where = TaskFilter(search=search)

    assert _ids(await store.list_task_rows(where)) == expected
    assert _ids(await store.list_task_rows(where, order=NEWEST_FIRST)) == expected[::-1]
    assert await store.count_task_rows(where) == len(expected)


async def test_a_result_is_searched_once_the_task_ends(store: StateStore) -> None:
    task = await store.create_task(make_task("r1", instruction="count the sheep"))
    running = await store.update_task(task.transition(TaskStatus.RUNNING))
    assert await store.count_task_rows(TaskFilter(search="woolly")) == 0

    await store.update_task(running.transition(TaskStatus.COMPLETED, result="seven woolly sheep"))

    assert _ids(await store.list_task_rows(TaskFilter(search="wool"))) == ["r1"]
    assert _ids(await store.list_task_rows(TaskFilter(search="sheep count"))) == ["r1"]


async def test_a_search_narrows_with_the_other_filters(store: StateStore, searched: None) -> None:
    where = TaskFilter(search="r", statuses=frozenset({TaskStatus.COMPLETED}), id_prefix="s")

    assert _ids(await store.list_task_rows(where)) == ["s1"]  # report, revenue; s2 failed
    assert await store.count_task_rows(where) == 1


async def test_a_huge_search_is_only_words_and_finds_nothing(store: StateStore, searched: None) -> None:
    where = TaskFilter(search="q" * 10_000 + " " + "'\";--" * 1000)

    assert await store.list_task_rows(where) == []
    assert await store.count_task_rows(where) == 0


# --------------------------------------------------------------------------- order and cursor


def _reference(rows: list[TaskRow], order: TaskOrder) -> list[str]:
    return [row.id for row in sorted(rows, key=order.key, reverse=order.descending)]


ORDERS = [TaskOrder(by, descending) for by in TaskSort for descending in (False, True)]


@pytest.fixture
async def mixed(store: StateStore) -> list[TaskRow]:
    """Nine tasks with ties in every sorted column (two created at one moment)."""
    names = ["b", "a", "b", "c", "a", "b", "Z", "é", "b"]
    costs = [0.0, 1.0, 0.5, 0.0, 1.0, 2.0, 0.5, 0.0, 1.0]
    statuses = [TaskStatus.QUEUED, TaskStatus.RUNNING, TaskStatus.COMPLETED] * 3
    for i in range(9):
        at = T0 + dt.timedelta(minutes=min(i, 7))  # the last two at one moment
        changed = T0 + dt.timedelta(hours=1, minutes=(i * 5) % 9)
        task = make_task(
            f"m{8 - i}",
            name=names[i],
            cost=costs[i],
            status=statuses[i],
            created_at=at,
            updated_at=changed,
        )
        await store.create_task(task)
    return await store.list_task_rows()


@pytest.mark.parametrize("order", ORDERS, ids=str)
async def test_every_order_is_total_and_the_same_on_every_store(
    store: StateStore, mixed: list[TaskRow], order: TaskOrder
) -> None:
    assert _ids(await store.list_task_rows(order=order)) == _reference(mixed, order)


@pytest.mark.parametrize("order", ORDERS, ids=str)
async def test_a_cursor_pages_through_every_task_once(
    store: StateStore, mixed: list[TaskRow], order: TaskOrder
) -> None:
    seen: list[str] = []
    after: TaskCursor | None = None
    while True:
        page = await store.list_task_rows(order=order, after=after, limit=2)
        if not page:
            break
        seen += _ids(page)
        after = TaskCursor.decode(TaskCursor.after(page[-1], order).encode())  # as a client hands it back

    assert seen == _reference(mixed, order)


@pytest.mark.parametrize("descending", [False, True])
async def test_a_task_made_while_paging_neither_repeats_nor_shifts_a_page(
    store: StateStore, mixed: list[TaskRow], descending: bool
) -> None:
    order = TaskOrder(descending=descending)
    where = TaskFilter(name="b")
    first = await store.list_task_rows(where, order=order, limit=2)
    after = TaskCursor.after(first[-1], order)
    expected_rest = _ids(await store.list_task_rows(where, order=order, after=after))

    # One made now (newest), one backdated before everything (oldest): neither is on a page seen.
    await store.create_task(make_task("new", name="b", created_at=T0 + dt.timedelta(days=1)))
    await store.create_task(make_task("old", name="b", created_at=T0 - dt.timedelta(days=1)))
    rest = _ids(await store.list_task_rows(where, order=order, after=after))

    assert not set(rest) & set(_ids(first))
    assert rest == ([*expected_rest, "new"] if not descending else [*expected_rest, "old"])
    assert await store.count_task_rows(where) == 6


async def test_a_cursor_of_another_order_is_refused(store: StateStore, mixed: list[TaskRow]) -> None:
    cursor = TaskCursor.after(mixed[0], TaskOrder(TaskSort.NAME))

    with pytest.raises(InputError, match="sorted by name, not by -name"):
        await store.list_task_rows(order=TaskOrder(TaskSort.NAME, descending=True), after=cursor)
