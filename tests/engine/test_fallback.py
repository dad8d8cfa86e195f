"""Fallback chains: a call that fails for good goes to the chain's next model, journaled, and
a resumed task takes the same path; budget pressure moves down the chain when asked to."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ratchet.policy import Budget
from ratchet.records import OpKind, OpStatus, TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..helpers.loopback import LoopbackServer, Reply
from .fallback_flows import FALLBACK_FLOWS
from .flows import Crash, entries


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_CUSTOM_HEADERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with LoopbackServer() as running:
        monkeypatch.setenv("OPENAI_BASE_URL", running.url + "/v1")
        yield running


async def model_ops(store: StateStore, task_id: str) -> list[Any]:
    return [op for op in await store.list_ops(task_id) if op.kind is OpKind.MODEL]


async def test_a_model_that_answers_500_every_time_falls_back_and_a_resume_does_not_call_it_again(
    store: StateStore,
    rt: Runtime,
    ledger: str,
    script: Callable[[dict[str, Any]], str],
    openai_server: LoopbackServer,
) -> None:
    backup = script({"act": [{"content": "from B"}]})
    task_id = await rt.submit(
        f"{FALLBACK_FLOWS}:ask_then_crash", {"ledger": ledger}, model=["openai:a", backup]
    )
    task = await store.get_task(task_id)
    assert (task.model, task.fallback_models) == ("openai:a", [backup])
    with pytest.raises(Crash):  # after the model calls, before the task ends
        await rt.resume(task_id)
    asked_a = len(openai_server.received)
    assert asked_a == 5  # each attempt its retry policy allows, then no more

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == "from B"
    assert len(openai_server.received) == asked_a  # the resume replayed; model A was not asked again
    failed, fell_back = await model_ops(store, task_id)
    assert (failed.status, failed.error_type, failed.input.get("model")) == (
        OpStatus.FAILED,
        "ModelError",
        None,
    )
    assert failed.meta["model_error"] == {"status": 500, "retryable": True}
    assert (fell_back.status, fell_back.input["model"]) == (OpStatus.SUCCEEDED, backup)
    (event,) = [e for e in await store.list_events(task_id) if e.kind == "model_fallback"]
    assert event.data["from"] == "openai:a" and event.data["to"] == backup
    assert event.data["reason"] == "error" and "HTTP 500" in event.message
    assert len(entries(ledger, "after")) == 2  # the crash, then the resume


async def test_a_400_does_not_fall_back(
    store: StateStore,
    rt: Runtime,
    ledger: str,
    script: Callable[[dict[str, Any]], str],
    openai_server: LoopbackServer,
) -> None:
    openai_server.answer(Reply({"error": {"message": "messages: bad role"}}, status=400))
    backup = script({"act": [{"content": "never asked"}]})

    task = await rt.run(f"{FALLBACK_FLOWS}:ask_then_crash", {"ledger": ledger}, model=["openai:a", backup])

    assert task.status is TaskStatus.FAILED
    assert "bad role" in (task.error or "")
    (op,) = await model_ops(store, task.id)
    assert op.meta["model_error"] == {"status": 400, "retryable": False}
    assert not [e for e in await store.list_events(task.id) if e.kind == "model_fallback"]


async def test_the_task_stays_on_the_model_it_fell_back_to_and_the_last_failure_ends_it(
    store: StateStore, rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    broken = {"error": {"status": 503, "retry_after": 0}}
    first = script({"act": [broken] * 5})
    second = script({"act": [{"content": "one"}, {"content": "two"}]})

    task = await rt.run(f"{FALLBACK_FLOWS}:ask", {"times": 2}, model=[first, second])

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == ["one", "two"]
    ops = await model_ops(store, task.id)
    assert [op.input.get("model") for op in ops] == [None, second, second]

    both = [script({"act": [broken] * 5}), script({"act": [broken] * 5})]
    ended = await rt.run(f"{FALLBACK_FLOWS}:ask", {"times": 1}, model=both)
    assert ended.status is TaskStatus.FAILED
    assert "operation 1" in (ended.error or "") and both[1].rpartition("/")[2] in (ended.error or "")
    assert [op.input.get("model") for op in await model_ops(store, ended.id)] == [None, both[1]]


async def test_budget_pressure_moves_down_the_chain_only_when_asked(
    store: StateStore, rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    def chain() -> list[str]:
        dear = {"content": "dear", "usage": {"prompt_tokens": 1, "completion_tokens": 1, "cost": 0.85}}
        cheap = {"content": "cheap", "usage": {"prompt_tokens": 1, "completion_tokens": 1, "cost": 0.01}}
        return [script({"act": [dear, dear]}), script({"act": [cheap, cheap]})]

    budget = Budget(max_cost=2.0)
    models = chain()
    pressed = await rt.run(
        f"{FALLBACK_FLOWS}:ask", {"times": 3}, model=models, budget=budget, fallback_on_pressure=True
    )
    assert pressed.status is TaskStatus.COMPLETED, pressed.error
    assert pressed.result == ["dear", "dear", "cheap"]  # 1.70 of 2.00 used after the second: 80 %
    ops = await model_ops(store, pressed.id)
    assert [op.input.get("model") for op in ops] == [None, None, models[1]]
    (event,) = [e for e in await store.list_events(pressed.id) if e.kind == "model_fallback"]
    assert event.data["reason"] == "budget_pressure"

    unasked = await rt.run(f"{FALLBACK_FLOWS}:ask", {"times": 2}, model=chain(), budget=budget)
    assert unasked.status is TaskStatus.COMPLETED, unasked.error
    assert unasked.result == ["dear", "dear"]
