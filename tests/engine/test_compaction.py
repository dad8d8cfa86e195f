"""Compaction is a middleware of model requests: a workflow adds it, it shortens what is sent
(by a journaled summary), never what is kept, and never summarizes the same messages twice."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from ratchet import Runtime, TaskStatus
from ratchet.engine.calls.compaction import SUMMARY_PREFIX, Compaction, tokens
from ratchet.errors import InputError
from ratchet.records import Operation
from ratchet.store import StateStore

from .compaction_flows import compacted, whole

# An answer for each of the flows' requests (at most 8 turns, at most one summary a turn).
_ANSWERS = {
    "act": [{"content": f"reading part {turn}"} for turn in range(8)],
    "summarize": [{"content": f"summary {n}"} for n in range(8)],
}


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _ops(store: StateStore, task_id: str, name: str) -> list[Operation]:
    return [op for op in await store.list_ops(task_id) if op.name == name]


async def test_a_workflow_with_compaction_sends_shorter_requests_and_keeps_its_history(
    store: StateStore, script: Any
) -> None:
    task = await Runtime(store).run(compacted, {"turns": 6}, model=script(_ANSWERS))

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == 2 + 2 * 6  # the workflow's own history is whole
    acts = await _ops(store, task.id, "model:act")
    summaries = await _ops(store, task.id, "model:summarize")
    assert summaries
    late = acts[-1].input["messages"]
    assert late[:2] == acts[0].input["messages"][:2]  # the system prompt and the first ask stay
    assert late[2]["content"].startswith(SUMMARY_PREFIX)
    assert len(late) == 2 + 1 + 2  # head, summary, the 2 newest
    assert [e.kind for e in await store.list_events(task.id)].count("compacted") == len(summaries)


async def test_no_message_is_summarized_twice(store: StateStore, script: Any) -> None:
    task = await Runtime(store).run(compacted, {"turns": 8}, model=script(_ANSWERS))

    summaries = await _ops(store, task.id, "model:summarize")
    assert len(summaries) >= 2
    seen: list[str] = []
    for op in summaries:
        older = json.loads(op.input["messages"][-1]["content"])
        seen += [m["content"] for m in older]
    assert len(seen) == len(set(seen))  # each message went into one summary only
    assert all("The summary so far" in str(op.input["messages"][1]["content"]) for op in summaries[1:])


async def test_a_resumed_run_replays_the_summaries_and_sends_the_same_requests(
    store: StateStore, script: Any
) -> None:
    rt = Runtime(store)
    straight = await rt.run(compacted, {"turns": 8}, model=script(_ANSWERS))
    paused = await rt.run(compacted, {"turns": 8, "pause_after": 4}, model=script(_ANSWERS))
    assert paused.status is TaskStatus.WAITING
    await asyncio.sleep(0.3)
    resumed = await rt.resume(paused.id)

    assert resumed.status is TaskStatus.COMPLETED, resumed.error

    def sent(ops: list[Operation]) -> list[Any]:
        return [(op.name, op.input) for op in ops if op.name.startswith("model:")]

    assert sent(await store.list_ops(paused.id)) == sent(await store.list_ops(straight.id))


async def test_without_compaction_every_request_is_whole(store: StateStore, script: Any) -> None:
    task = await Runtime(store).run(whole, {"turns": 6}, model=script(_ANSWERS))

    assert await _ops(store, task.id, "model:summarize") == []
    last = (await _ops(store, task.id, "model:act"))[-1].input["messages"]
    assert len(last) == 2 + 2 * 5
    assert tokens(last) > 200


def test_compaction_settings_are_checked() -> None:
    with pytest.raises(InputError, match="token_budget"):
        Compaction(token_budget=10)
    with pytest.raises(InputError, match="keep_recent"):
        Compaction(keep_recent=1)
