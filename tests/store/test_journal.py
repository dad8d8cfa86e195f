"""The journal of operations, keyed by ``(task_id, seq)``."""

from __future__ import annotations

import pytest

from ratchet.errors import DuplicateRecord
from ratchet.records import OpStatus, Task
from ratchet.store import StateStore

from ..helpers.builders import at, finish, make_op, make_task
from ..helpers.fences import leased_task


async def test_started_op_is_recorded(store: StateStore, task: Task) -> None:
    op = make_op(task.id, 0)
    assert await store.record_op_started(op) == op
    assert await store.get_op(task.id, 0) == op


async def test_finishing_a_started_op_records_its_outcome(store: StateStore, task: Task) -> None:
    started = await store.record_op_started(make_op(task.id, 0))
    done = finish(started)
    assert await store.record_op_finished(done) == done
    assert await store.get_op(task.id, 0) == done


async def test_finishing_without_intent_inserts_the_row(store: StateStore, task: Task) -> None:
    done = make_op(task.id, 3, OpStatus.SUCCEEDED, name="read_file")
    await store.record_op_finished(done)
    assert await store.get_op(task.id, 3) == done
    assert await store.list_ops(task.id) == [done]


async def test_a_later_attempt_brings_its_own_start_and_the_same_attempt_keeps_its_intents(
    store: StateStore, task: Task
) -> None:
    first = make_op(task.id, 0, OpStatus.FAILED, name="read_file", started_at=at(0), finished_at=at(1))
    await store.record_op_finished(first.model_copy(update={"next_attempt_at": at(2)}))
    second = make_op(task.id, 0, OpStatus.SUCCEEDED, name="read_file", attempt=2, started_at=at(2))
    await store.record_op_finished(second.model_copy(update={"finished_at": at(3)}))
    assert (await store.get_op(task.id, 0)).started_at == at(2)  # type: ignore[union-attr]

    intent = await store.record_op_started(make_op(task.id, 1, started_at=at(5)))
    settled = finish(intent).model_copy(update={"started_at": at(9)})  # e.g. a person settles it later
    await store.record_op_finished(settled)
    assert (await store.get_op(task.id, 1)).started_at == at(5)  # type: ignore[union-attr]


async def test_a_failure_is_recorded_as_finished(store: StateStore, task: Task) -> None:
    started = await store.record_op_started(make_op(task.id, 0))
    failed = finish(started, OpStatus.FAILED)
    await store.record_op_finished(failed)
    stored = await store.get_op(task.id, 0)
    assert stored == failed
    assert stored is not None and stored.is_finished and stored.error == "smtp timeout"


async def test_finishing_with_status_started_is_refused(store: StateStore, task: Task) -> None:
    with pytest.raises(ValueError, match="succeeded or failed"):
        await store.record_op_finished(make_op(task.id, 0))
    assert await store.get_op(task.id, 0) is None


async def test_restarting_a_failed_op_overwrites_it(store: StateStore, task: Task) -> None:
    started = await store.record_op_started(make_op(task.id, 0))
    await store.record_op_finished(finish(started, OpStatus.FAILED))
    retry = make_op(task.id, 0, attempt=2)
    await store.record_op_started(retry)
    assert await store.get_op(task.id, 0) == retry
    assert await store.list_ops(task.id) == [retry]


async def test_restarting_an_unfinished_op_overwrites_it(store: StateStore, task: Task) -> None:
    await store.record_op_started(make_op(task.id, 0))
    retry = make_op(task.id, 0, attempt=2)
    await store.record_op_started(retry)
    assert await store.get_op(task.id, 0) == retry


async def test_a_succeeded_op_cannot_be_overwritten(store: StateStore, task: Task) -> None:
    done = make_op(task.id, 0, OpStatus.SUCCEEDED)
    await store.record_op_finished(done)
    with pytest.raises(DuplicateRecord):
        await store.record_op_started(make_op(task.id, 0, attempt=2))
    with pytest.raises(DuplicateRecord):
        await store.record_op_finished(finish(done, OpStatus.FAILED, attempt=2))
    with pytest.raises(DuplicateRecord):
        await store.record_op_finished(finish(done, output="again"))
    assert await store.get_op(task.id, 0) == done


async def test_get_op_unknown_is_none(store: StateStore, task: Task) -> None:
    await store.record_op_started(make_op(task.id, 0))
    assert await store.get_op(task.id, 1) is None
    assert await store.get_op("ghost", 0) is None


async def test_list_ops_by_seq_after_seq(store: StateStore, task: Task) -> None:
    ops = [make_op(task.id, seq, OpStatus.SUCCEEDED) for seq in range(5)]
    for op in reversed(ops):
        await store.record_op_finished(op)
    assert await store.list_ops(task.id) == ops
    assert await store.list_ops(task.id, after_seq=2) == ops[3:]
    assert await store.list_ops(task.id, after_seq=4) == []


async def test_list_ops_keeps_tasks_apart(store: StateStore, task: Task) -> None:
    other = await store.create_task(make_task("t2"))
    mine = make_op(task.id, 0)
    theirs = make_op(other.id, 0, name="charge_card")
    await store.record_op_started(mine)
    await store.record_op_started(theirs)
    assert await store.list_ops(task.id) == [mine]
    assert await store.get_op(other.id, 0) == theirs


async def test_op_values_round_trip(store: StateStore, task: Task) -> None:
    done = make_op(
        task.id,
        0,
        OpStatus.SUCCEEDED,
        input={"nested": [1, 2.5, None, True, "é"]},
        output=["a", {"b": None}],
    )
    await store.record_op_finished(done)
    assert await store.get_op(task.id, 0) == done


# Text a statement bound on the client (PostgreSQL sends a journal write and its commit as one
# string) must quote: SQL's own quotes, comments, a statement's end, dollar quoting, escapes.
AWKWARD = [
    "it's",
    "'); DROP TABLE operations; --",
    "\\'; SELECT 1; /* x */",
    "$$ $tag$ E'\\x' \\0",
    "line\nbreak\ttab \u2028 é 中 🙂",
    "%s %(name)s {} ?",
]


async def test_awkward_text_in_a_fenced_journal_write_comes_back_as_it_went(store: StateStore) -> None:
    task, lease = await leased_task(store)
    for seq, text in enumerate(AWKWARD):
        started = make_op(task.id, seq, name=text, input={text: [text, 2**53, -0.5]})
        await store.record_op_started(started, fence=lease)
        done = finish(started, output={"echo": text})
        await store.record_op_finished(done, fence=lease)
        assert await store.get_op(task.id, seq) == done
    assert [op.seq for op in await store.list_ops(task.id)] == list(range(len(AWKWARD)))


async def test_the_journal_is_read_a_page_at_a_time_by_seq_and_counted(store: StateStore, task: Task) -> None:
    other = await store.create_task(make_task("t2"))
    for seq in (0, 1, 2, 5, 6):  # a journal may skip a seq
        await store.record_op_finished(make_op(task.id, seq, OpStatus.SUCCEEDED, name="read_file"))
    await store.record_op_finished(make_op(other.id, 0, OpStatus.SUCCEEDED, name="read_file"))

    first = await store.list_ops(task.id, limit=2)
    rest = await store.list_ops(task.id, after_seq=first[-1].seq, limit=2)
    last = await store.list_ops(task.id, after_seq=rest[-1].seq, limit=2)

    assert [[op.seq for op in page] for page in (first, rest, last)] == [[0, 1], [2, 5], [6]]
    assert await store.list_ops(task.id, after_seq=6, limit=2) == []
    assert [op.seq for op in await store.list_ops(task.id, after_seq=1)] == [2, 5, 6]  # no limit: all
    assert (
        await store.count_ops(task.id),
        await store.count_ops(other.id),
        await store.count_ops("nobody"),
    ) == (
        5,
        1,
        0,
    )
