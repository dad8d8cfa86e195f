"""A workflow's ``call_model(request, schema=Model)``, and tools passed to ``call_tool`` as objects."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ratchet.records import OpKind, OpStatus, TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..helpers.loopback import LoopbackServer, Reply
from .flows import Crash, entries
from .schema_flows import SCHEMA_FLOWS

pytestmark = pytest.mark.parametrize("store_kind", ["memory", "sqlite"])

PARIS = {"city": "Paris", "celsius": 21}


async def model_ops(store: StateStore, task_id: str) -> list[Any]:
    return [op for op in await store.list_ops(task_id) if op.kind is OpKind.MODEL]


async def test_an_answer_that_fits_comes_back_as_an_instance(
    store: StateStore, rt: Runtime, ledger: str, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script({"act": [{"content": PARIS}]})
    task_id = await rt.submit(f"{SCHEMA_FLOWS}:forecast", {"ledger": ledger}, model=model)
    with pytest.raises(Crash):
        await rt.resume(task_id)

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == PARIS
    (op,) = await model_ops(store, task_id)
    assert op.input["output_schema"]["name"] == "Forecast"
    assert op.input["output_schema"]["json_schema"]["properties"]["celsius"]["maximum"] == 60
    assert op.input["json_output"] is True


async def test_answers_that_do_not_fit_are_repaired_and_replayed_the_same(
    store: StateStore, rt: Runtime, ledger: str, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script(
        {
            "act": [
                {"content": {"city": "Paris", "celsius": 300}},
                {"content": "It is sunny."},
                {"content": '```json\n{"city": "Paris", "celsius": 21}\n```'},
                {"content": {"city": "never asked", "celsius": 0}},
            ]
        }
    )
    task_id = await rt.submit(f"{SCHEMA_FLOWS}:forecast", {"ledger": ledger}, model=model)
    with pytest.raises(Crash):  # after the model calls, before the task ends
        await rt.resume(task_id)
    before = await model_ops(store, task_id)

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == PARIS
    ops = await model_ops(store, task_id)
    # Each repair is a journaled call; the resume replayed all three and asked nothing more.
    assert [(op.seq, op.output) for op in ops] == [(op.seq, op.output) for op in before]
    assert [op.meta["ordinal"] for op in ops] == [0, 1, 2]
    first_repair = ops[1].input["messages"][-2:]
    assert first_repair[0] == {"role": "assistant", "content": '{"city": "Paris", "celsius": 300}'}
    assert first_repair[1]["role"] == "user"
    assert "celsius: Input should be less than or equal to 60" in first_repair[1]["content"]
    assert "Invalid JSON" in ops[2].input["messages"][-1]["content"]
    warnings = [e for e in await store.list_events(task_id) if e.kind == "model_output_invalid"]
    assert [e.data["repair"] for e in warnings] == [1, 2]
    assert len(entries(ledger, "after")) == 2  # the crash, then the resume


async def test_after_its_repairs_the_call_fails_with_a_clear_error(
    store: StateStore, rt: Runtime, ledger: str, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script({"act": [{"content": {"city": "Paris"}}, {"content": {"celsius": 20}}]})

    task = await rt.run(f"{SCHEMA_FLOWS}:forecast", {"ledger": ledger, "max_repairs": 1}, model=model)

    assert task.status is TaskStatus.FAILED
    assert task.error is not None
    assert "InvalidModelOutput" in task.error
    assert "did not fit Forecast after 1 repair: city: Field required" in task.error
    assert len(await model_ops(store, task.id)) == 2
    assert entries(ledger, "after") == []


async def test_tools_are_called_by_object_as_by_name(store: StateStore, rt: Runtime, ledger: str) -> None:
    task = await rt.run(f"{SCHEMA_FLOWS}:tool_objects", {"ledger": ledger})

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == ["one", "HI", "A", "two"]
    ops = await store.list_ops(task.id)
    assert [(op.seq, op.name, op.status) for op in ops] == [
        (0, "record", OpStatus.SUCCEEDED),
        (1, "shout", OpStatus.SUCCEEDED),
        (2, "shout", OpStatus.SUCCEEDED),
        (3, "record", OpStatus.SUCCEEDED),
    ]
    assert [e["label"] for e in entries(ledger)] == ["one", "two"]


async def test_a_tool_object_named_like_another_of_the_workflow_is_refused(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task = await rt.run(f"{SCHEMA_FLOWS}:tool_objects", {"ledger": ledger, "clash": True})

    assert task.status is TaskStatus.FAILED
    assert "already has another tool named 'record'" in (task.error or "")
    assert await store.list_ops(task.id) == []


def _completion(content: str) -> Reply:
    message = {"role": "assistant", "content": content}
    return Reply(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
    )


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_CUSTOM_HEADERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with LoopbackServer() as running:
        monkeypatch.setenv("OPENAI_BASE_URL", running.url + "/v1")
        yield running


async def test_malformed_json_from_a_provider_is_repaired_but_a_provider_failure_is_not(
    store: StateStore, rt: Runtime, ledger: str, openai_server: LoopbackServer
) -> None:
    openai_server.answer(
        _completion('{"city": "Paris", "celsius": '),
        _completion('{"city": "Paris", "celsius": 21}'),
        Reply({"error": {"message": "Invalid API key"}}, status=401),
    )
    task_id = await rt.submit(f"{SCHEMA_FLOWS}:forecast", {"ledger": ledger}, model="openai:m")
    with pytest.raises(Crash):
        await rt.resume(task_id)

    ops = await model_ops(store, task_id)
    assert [(op.status, op.error_type) for op in ops] == [
        (OpStatus.FAILED, "MalformedAnswer"),
        (OpStatus.SUCCEEDED, None),
    ]
    assert "malformed JSON" in ops[1].input["messages"][-1]["content"]
    sent = openai_server.received[0].body["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["name"] == "Forecast"

    failed = await rt.run(f"{SCHEMA_FLOWS}:forecast", {"ledger": ledger}, model="openai:m")
    assert failed.status is TaskStatus.FAILED
    assert "Invalid API key" in (failed.error or "") and "InvalidModelOutput" not in (failed.error or "")
    assert len(await model_ops(store, failed.id)) == 1
