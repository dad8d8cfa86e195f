"""A task's stream as its runs write it: a model call's pieces between its marks, a workflow's values.

The scripted model streams its answers in chunks (``chunks``); every test
runs on each store, and reads the stream back as readers do
(`Runtime.stream`, `attempts`, `answers`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ratchet.records import OpKind, OpStatus, StreamEntry, StreamKind, TaskStatus
from ratchet.runtime import Runtime
from ratchet.runtime.streams import answers, attempts
from ratchet.store import StateStore

from .flows import Crash
from .stream_flows import STREAM_FLOWS

Script = Callable[[dict[str, Any]], str]

WORDS = [f"word{i} " for i in range(40)]


async def _stream(rt: Runtime, task_id: str) -> list[StreamEntry]:
    return [entry async for entry in rt.stream(task_id, follow=False)]


async def _model_output(store: StateStore, task_id: str) -> list[Any]:
    return [op.output for op in await store.list_ops(task_id) if op.kind is OpKind.MODEL]


async def test_a_streamed_answer_arrives_in_order_between_its_marks_and_joins_to_the_journaled_one(
    store: StateStore, rt: Runtime, script: Script
) -> None:
    model = script({"act": [{"chunks": WORDS}]})

    task = await rt.run(f"{STREAM_FLOWS}:tell", model=model)

    assert task.status is TaskStatus.COMPLETED and task.result == "".join(WORDS)
    entries = await _stream(rt, task.id)
    assert [e.offset for e in entries] == list(range(len(entries)))
    assert [e.kind for e in entries] == [StreamKind.ATTEMPT, *[StreamKind.TEXT] * len(WORDS), StreamKind.END]
    assert {(e.seq, e.attempt) for e in entries} == {(0, 1)}
    assert [e.value for e in entries[1:-1]] == WORDS
    assert entries[0].value == {} and entries[-1].value == {"outcome": "succeeded"}
    [output] = await _model_output(store, task.id)
    assert answers(entries) == {0: output["content"]} == {0: "".join(WORDS)}


async def test_a_reader_that_comes_back_at_an_offset_mid_answer_gets_the_rest_of_that_attempt(
    rt: Runtime, script: Script
) -> None:
    model = script({"act": [{"chunks": WORDS}]})
    task = await rt.run(f"{STREAM_FLOWS}:tell", model=model)
    whole = await _stream(rt, task.id)

    rest = [entry async for entry in rt.stream(task.id, from_offset=11, follow=False)]

    [attempt] = attempts(rest)
    assert (attempt.start, attempt.stop, attempt.outcome) == (11, whole[-1].offset, "succeeded")
    assert attempt.text == "".join(WORDS[10:])
    assert answers(whole[:11]) == {0: "".join(WORDS[:10])}  # no end yet: what is written so far


async def test_an_attempt_that_failed_midway_is_told_apart_from_the_retry_that_answered(
    rt: Runtime, script: Script
) -> None:
    cut = {"chunks": ["Once upon ", "a ti"], "error": {"status": 503, "message": "overloaded"}}
    model = script({"act": [cut, {"chunks": ["Once upon ", "a time."]}]})

    task = await rt.run(f"{STREAM_FLOWS}:tell", model=model)

    assert task.result == "Once upon a time."
    entries = await _stream(rt, task.id)
    first, second = attempts(entries)
    assert (first.seq, first.attempt, first.text, first.outcome) == (0, 1, "Once upon a ti", "failed")
    assert (second.seq, second.attempt, second.text, second.outcome) == (
        0,
        2,
        "Once upon a time.",
        "succeeded",
    )
    assert entries[first.stop].value == {"outcome": "failed", "error_type": "ModelError"}
    assert not second.restarted and first.stop < second.start
    assert answers(entries) == {0: "Once upon a time."}


async def test_a_call_with_streaming_off_writes_nothing_to_the_stream(rt: Runtime, script: Script) -> None:
    model = script({"act": [{"chunks": WORDS}]})

    task = await rt.run(f"{STREAM_FLOWS}:tell", {"quiet": True}, model=model)

    assert task.result == "".join(WORDS)
    assert await _stream(rt, task.id) == []


async def test_a_resumed_run_writes_no_replayed_call_nor_value_again(
    store: StateStore, rt: Runtime, script: Script, ledger: str
) -> None:
    model = script({"act": [{"chunks": ["a", "b", "c"]}]})
    task_id = await rt.submit(f"{STREAM_FLOWS}:noted", {"ledger": ledger}, model=model)
    with pytest.raises(Crash):  # after the model call, before the second value
        await rt.resume(task_id)
    before = await _stream(rt, task_id)

    task = await rt.resume(task_id)

    assert task.status is TaskStatus.COMPLETED and task.result == "abc"
    entries = await _stream(rt, task_id)
    assert entries[: len(before)] == before  # nothing of the first run's is written again
    kinds = [(e.kind, e.key, e.value) for e in entries if e.kind in (StreamKind.VALUE, StreamKind.END)]
    assert kinds == [
        (StreamKind.VALUE, "phase", {"at": "start"}),
        (StreamKind.END, None, {"outcome": "succeeded"}),
        (StreamKind.VALUE, "phase", {"at": "end"}),
    ]
    values = [e for e in entries if e.kind is StreamKind.VALUE]
    ops = {op.seq: op for op in await store.list_ops(task_id)}
    assert [v.seq for v in values] == [0, 3]  # the journal seqs they took: 1 the model, 2 the tool
    assert 0 not in ops and ops[1].kind is OpKind.MODEL and ops[1].status is OpStatus.SUCCEEDED
    assert answers(entries) == {1: "abc"}


async def test_a_value_that_is_not_json_or_has_no_key_is_refused_and_nothing_is_written(rt: Runtime) -> None:
    task = await rt.run(f"{STREAM_FLOWS}:refused")

    assert task.result == [
        "ctx.write_stream needs a key: a non-empty string, not ''",
        "ctx.write_stream('k', ...): the value: input was not a valid JSON value",
    ]
    assert await _stream(rt, task.id) == []
