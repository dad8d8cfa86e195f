"""Content addressing of journal inputs: what a store gives back is what was recorded.

Large recurring parts of an operation's input (a system prompt, tool schemas,
a message history that grows by a turn per call) are stored once per task in
SQL stores (store/sql/content.py); every store returns inputs exactly as recorded.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from typing import Any

import hypothesis
import psycopg
import pytest
from hypothesis import strategies as st

from ratchet.errors import CorruptRecord
from ratchet.records import OpKind, OpStatus, Task, TaskStatus
from ratchet.runtime.fork import fork_task
from ratchet.store import StateStore, open_store
from ratchet.store.sql import content

from ..helpers.builders import finish, make_checkpoint, make_op, make_task

SYSTEM = {"role": "system", "content": "You are a careful agent. " + "Check before you act. " * 30}
TOOLS = [
    {"type": "function", "function": {"name": f"tool_{i}", "description": "does it " * 40}} for i in range(4)
]


def message(turn: int, role: str) -> dict[str, Any]:
    return {"role": role, "content": f"turn {turn}: " + f"{role} says something new about turn {turn}. " * 6}


def history(turns: int) -> list[dict[str, Any]]:
    found = [SYSTEM, {"role": "user", "content": "Upgrade the cluster."}]
    for turn in range(turns):
        found += [message(turn, "assistant"), message(turn, "user")]
    return found


def model_op(task_id: str, seq: int, messages: list[dict[str, Any]], **changes: Any) -> Any:
    request = {"purpose": "act", "messages": messages, "tools": TOOLS, "json_output": False}
    return make_op(task_id, seq, kind=OpKind.MODEL, name="model:act", input=request, **changes)


async def record_conversation(store: StateStore, task_id: str, turns: int) -> list[Any]:
    recorded = []
    for turn in range(turns):
        started = await store.record_op_started(model_op(task_id, turn, history(turn)))
        recorded.append(await store.record_op_finished(finish(started)))
    return recorded


async def test_a_growing_conversation_reads_back_as_recorded(store: StateStore, task: Task) -> None:
    recorded = await record_conversation(store, task.id, 12)
    assert await store.list_ops(task.id) == recorded
    assert await store.list_ops(task.id, after_seq=7) == recorded[8:]
    for op in recorded:
        assert await store.get_op(task.id, op.seq) == op


async def test_intents_and_finished_ops_read_back_as_recorded(store: StateStore, task: Task) -> None:
    intent = await store.record_op_started(model_op(task.id, 0, history(3)))
    done = model_op(task.id, 1, history(4), status=OpStatus.SUCCEEDED, output={"content": "ok"})
    await store.record_op_finished(done)
    assert await store.list_ops(task.id) == [intent, done]


async def test_a_list_shortened_or_rewritten_reads_back_as_recorded(store: StateStore, task: Task) -> None:
    # Compaction rewrites a history; a retry sends the same one again; another purpose has its own.
    inputs = [history(6), history(6), history(2), [SYSTEM, message(9, "user"), *history(6)[2:]], history(7)]
    for seq, messages in enumerate(inputs):
        await store.record_op_started(model_op(task.id, seq, messages))
    assert [op.input["messages"] for op in await store.list_ops(task.id)] == inputs


async def test_a_rolled_back_write_leaves_nothing_a_later_one_needs(store: StateStore, task: Task) -> None:
    await store.record_op_started(model_op(task.id, 0, history(1)))
    with pytest.raises(RuntimeError):
        async with store.transaction() as tx:
            await tx.record_op_started(model_op(task.id, 1, history(2)))
            raise RuntimeError("the transaction fails after the write")
    # The next call extends the history the rolled-back one wrote: it must not name it.
    later = await store.record_op_started(model_op(task.id, 1, history(3)))
    assert (await store.get_op(task.id, 1)) == later
    assert [op.seq for op in await store.list_ops(task.id)] == [0, 1]


async def test_inputs_that_look_like_stored_ones_read_back_as_recorded(store: StateStore, task: Task) -> None:
    lookalikes = [
        {"$content": 1, "value": "x", "b": [], "l": []},
        {"$content": 1, "value": ["a" * 300], "b": [[]], "l": []},
        {"$content": "mine"},
        {"n": 3, "i": ["a" * 300], "b": [0], "prev": None},
        ["$content", {"$content": 1}] * 40,
        "s" * 1000,
        [],
        None,
    ]
    for seq, value in enumerate(lookalikes):
        await store.record_op_started(make_op(task.id, seq, input=value))
    assert [op.input for op in await store.list_ops(task.id)] == lookalikes


async def test_a_fork_has_its_own_copy_of_the_content(store: StateStore, task: Task) -> None:
    recorded = await record_conversation(store, task.id, 6)
    await store.put_checkpoint(make_checkpoint(task, last_seq=5))
    fork = await fork_task(store, task.id, 1)
    await store.update_task(task.model_copy(update={"status": TaskStatus.CANCELLED}))
    await store.delete_task(task.id)
    copied = await store.list_ops(fork)
    assert [op.input for op in copied] == [op.input for op in recorded]
    assert [op.output for op in copied] == [op.output for op in recorded]


# --------------------------------------------------------------------------- arbitrary JSON

_CHARS = st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")  # what PostgreSQL text holds
_TEXT = st.text(_CHARS, max_size=20)
_LONG = st.text(_CHARS, min_size=240, max_size=400)
_KEYS = st.one_of(_TEXT, st.sampled_from(["$content", "value", "b", "l", "n", "i", "prev", "messages"]))
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    _TEXT,
    _LONG,
)
JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(_KEYS, inner, max_size=6),
    max_leaves=40,
)
_task_ids = (f"hyp-{n}" for n in itertools.count())


async def _round_trip(url: str, values: list[Any], growing: list[Any]) -> None:
    store = await open_store(url)
    try:
        task = await store.create_task(make_task(next(_task_ids)))
        inputs = [*values, *(growing[:end] for end in range(len(growing) + 1))]
        for seq, value in enumerate(inputs):
            started = await store.record_op_started(make_op(task.id, seq, input=value))
            if seq % 2:
                await store.record_op_finished(finish(started))
        assert [op.input for op in await store.list_ops(task.id)] == inputs
        for seq, value in enumerate(inputs):
            op = await store.get_op(task.id, seq)
            assert op is not None and op.input == value
    finally:
        await store.close()


@hypothesis.settings(max_examples=40, deadline=None, suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(values=st.lists(JSON, max_size=4), growing=st.lists(JSON, max_size=6))
def test_arbitrary_json_inputs_read_back_equal(store_url: str, values: list[Any], growing: list[Any]) -> None:
    asyncio.run(_round_trip(store_url, values, growing))


# --------------------------------------------------------------------------- bytes stored


def _journal_bytes(url: str, task_id: str) -> int:
    query = (
        "SELECT (SELECT COALESCE(SUM(LENGTH(input)), 0) FROM operations WHERE task_id = {p})"
        " + (SELECT COALESCE(SUM(LENGTH(body) + LENGTH(hash)), 0) FROM contents WHERE task_id = {p})"
    )
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return int(conn.execute(query.format(p="?"), (task_id, task_id)).fetchone()[0])
    with psycopg.connect(url) as pg:
        row = pg.execute(query.format(p="%s"), (task_id, task_id)).fetchone()
        assert row is not None
        return int(row[0])


@pytest.mark.parametrize("store_kind", ["sqlite", "postgres"], indirect=True)
async def test_a_conversation_stores_each_message_once(store: StateStore, store_url: str, task: Task) -> None:
    await record_conversation(store, task.id, 60)
    unique = sum(len(str(m)) for m in history(59)) + len(str(TOOLS))
    stored = _journal_bytes(store_url, task.id)
    assert stored < 2 * unique  # as they were: ~20x (every call carried the whole history)


@pytest.mark.parametrize("store_kind", ["sqlite"], indirect=True)
async def test_an_input_whose_content_is_gone_is_unreadable_and_says_which(
    store: StateStore, store_url: str, task: Task
) -> None:
    await record_conversation(store, task.id, 3)
    with sqlite3.connect(store_url.removeprefix("sqlite:///")) as conn:
        conn.execute("DELETE FROM contents WHERE prev IS NOT NULL")
    with pytest.raises(
        CorruptRecord,
        match=r"stored content of operation\(s\) 1, 2 of task t1 is unreadable: content \S+ is missing",
    ):
        await store.list_ops(task.id)
    assert (await store.get_op(task.id, 0)) is not None  # the first call's list was stored whole


@pytest.mark.parametrize(
    ("value", "may"),
    [
        ({"a": "x" * 246}, False),  # 254 characters as JSON, about: kept inline
        ({"a": "x" * 248}, True),  # 256: the threshold
        ({"k" * 250: None}, True),
        ({"n": 1, "f": 1.5, "b": True, "s": "short"}, False),
        ({"nested": ["x" * 100, "y" * 100, {"z": "w" * 60}]}, True),  # not flat: measured as a whole
        ({"$content": 1}, True),  # must be wrapped, however short
        ("x" * 300, True),
        (7, False),
    ],
)
def test_which_inputs_may_have_parts_stored_by_content(value: Any, may: bool) -> None:
    assert content.may_apply(value) is may
