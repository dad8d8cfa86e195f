"""The agent against a real OpenAI-compatible server on loopback (``openai:MODEL`` + OPENAI_BASE_URL)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from ratchet import ModelSettings, Runtime, StepStatus, TaskStatus
from ratchet.agent.output_schemas import PLAN_OUTPUT
from ratchet.agent.spec import AgentSpec
from ratchet.store import StateStore

from ..helpers.ledger import Ledger
from ..helpers.loopback import LoopbackServer, Reply, chat_completion
from .support import event_kinds, events_of, make_agent, model_ops, run_agent

PLAN = {
    "goal": "X is fast again",
    "steps": [
        {
            "step_name": "look at X",
            "description": "read X's status",
            "action_instruction": "call check_status for X",
            "validation_instruction": "the status was read",
        }
    ],
}


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


ACT_AND_VERIFY = (
    chat_completion(None, [tool_call("call_a", "check_status", {"service": "X"})]),
    chat_completion("X is degraded"),
    chat_completion(json.dumps({"passed": True, "reason": "status read"})),
)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_CUSTOM_HEADERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with LoopbackServer() as running:
        monkeypatch.setenv("OPENAI_BASE_URL", running.url + "/v1")
        yield running


async def test_an_agent_task_completes_against_an_openai_compatible_server(
    store: StateStore, server: LoopbackServer, tools_ledger: Ledger
) -> None:
    server.answer(chat_completion(json.dumps(PLAN)), *ACT_AND_VERIFY)
    task = await run_agent(Runtime(store), make_agent("openai:some-model"))

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == "X is degraded"
    assert [(s.name, s.status) for s in await store.list_steps(task.id)] == [
        ("look at X", StepStatus.COMPLETED)
    ]
    assert tools_ledger.invocations() == {("check_status", "X"): 1}
    assert [r.path for r in server.received] == ["/v1/chat/completions"] * 4
    plan_request, first_act, second_act, verify = (r.body for r in server.received)
    assert plan_request["model"] == "some-model"
    assert plan_request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "plan", "schema": PLAN_OUTPUT.json_schema},
    }
    assert {t["function"]["name"] for t in first_act["tools"]} >= {
        "check_status",
        "update_state",
        "read_artifact",
    }
    assert second_act["messages"][-2]["tool_calls"][0]["id"] == "call_a"
    assert second_act["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": json.dumps({"service": "X", "status": "degraded"}),
    }
    assert verify["response_format"]["json_schema"]["name"] == "verdict"
    assert "tools" not in plan_request and "response_format" not in first_act
    acts = await model_ops(store, task.id, "act")
    assert [op.meta["usage"]["prompt_tokens"] for op in acts] == [20, 20]


async def test_a_malformed_json_plan_is_repaired_once_and_the_task_completes(
    store: StateStore, server: LoopbackServer
) -> None:
    server.answer(
        chat_completion('{"goal": "X is fast again", "steps": [{"step_name": '),
        chat_completion(json.dumps(PLAN)),
        *ACT_AND_VERIFY,
    )
    task = await run_agent(Runtime(store), make_agent("openai:some-model"))

    assert task.status is TaskStatus.COMPLETED, task.error
    first, second = await model_ops(store, task.id, "plan")
    assert first.status == "failed" and "malformed JSON" in (first.error or "")
    assert second.status == "succeeded"
    (invalid,) = await events_of(store, task.id, "plan_invalid")
    assert "malformed JSON" in invalid.message
    assert "plan_failed" not in await event_kinds(store, task.id)
    repair = server.received[1].body["messages"][-1]
    assert repair["role"] == "user" and "malformed JSON" in repair["content"]
    assert len(server.received) == 5


async def test_a_server_that_takes_only_json_object_with_a_schema_plans_with_it(
    store: StateStore, server: LoopbackServer
) -> None:
    # llama-cpp-python's server refuses json_schema (FastAPI's 422) and takes the schema in json_object.
    refusal = {"detail": [{"loc": ["body", "response_format", "type"], "msg": "Input should be 'text'"}]}
    server.answer(Reply(refusal, status=422), chat_completion(json.dumps(PLAN)), *ACT_AND_VERIFY)
    task = await run_agent(Runtime(store), make_agent("openai:some-model"))

    assert task.status is TaskStatus.COMPLETED, task.error
    formats = [r.body.get("response_format") for r in server.received]
    assert formats[:2] == [
        {"type": "json_schema", "json_schema": {"name": "plan", "schema": PLAN_OUTPUT.json_schema}},
        {"type": "json_object", "schema": PLAN_OUTPUT.json_schema},
    ]
    # The refusal cost no attempt: one plan operation, and the verify request went straight there.
    assert len(await model_ops(store, task.id, "plan")) == 1
    assert formats[-1] is not None and formats[-1]["type"] == "json_object" and "schema" in formats[-1]


async def test_a_server_refusing_json_schema_with_a_500_still_plans(
    store: StateStore, server: LoopbackServer
) -> None:
    # llama-cpp-python's server: its route's error handler turns FastAPI's validation error into a 500.
    refusal = {
        "error": {
            "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
            "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}",
            "type": "internal_server_error",
            "param": None,
            "code": None,
        }
    }
    server.answer(Reply(refusal, status=500), chat_completion(json.dumps(PLAN)), *ACT_AND_VERIFY)
    task = await run_agent(Runtime(store), make_agent("openai:model-behind-a-500"))

    assert task.status is TaskStatus.COMPLETED, task.error
    (plan,) = await model_ops(store, task.id, "plan")
    assert (plan.status, plan.attempt) == ("succeeded", 1)
    formats = [r.body.get("response_format") for r in server.received]
    assert [f and f["type"] for f in formats] == ["json_schema", "json_object", None, None, "json_object"]
    # The verify request went straight to the way the plan request found.
    assert formats[-1] == {"type": "json_object", "schema": formats[-1]["schema"]}


async def test_a_500_naming_no_parameter_is_retried_per_policy(
    store: StateStore, server: LoopbackServer
) -> None:
    outage = Reply({"error": {"message": "the model is loading"}}, status=500, headers={"retry-after": "0"})
    server.answer(outage, chat_completion(json.dumps(PLAN)), *ACT_AND_VERIFY)
    task = await run_agent(Runtime(store), make_agent("openai:model-loading"))

    assert task.status is TaskStatus.COMPLETED, task.error
    (plan,) = await model_ops(store, task.id, "plan")
    assert (plan.status, plan.attempt) == ("succeeded", 2)
    # The retry asked the same way: a 500 that names no parameter refuses nothing.
    first, second = (r.body["response_format"] for r in server.received[:2])
    assert first == second and first["type"] == "json_schema"


async def test_the_agent_s_model_settings_go_with_every_request_and_into_the_journal(
    store: StateStore, server: LoopbackServer
) -> None:
    server.answer(chat_completion(json.dumps(PLAN)), *ACT_AND_VERIFY)
    agent = make_agent("openai:some-model")
    agent.spec = agent.spec.model_copy(
        update={"model_settings": ModelSettings(temperature=0.1, max_output_tokens=500, seed=9)}
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    # Recorded with the task: a worker that resumes it rebuilds the same settings.
    recorded = AgentSpec.model_validate(task.inputs_params["agent"]).model_settings
    assert recorded == ModelSettings(temperature=0.1, max_output_tokens=500, seed=9)
    sent = [{key: r.body.get(key) for key in ("temperature", "max_tokens", "seed")} for r in server.received]
    assert sent == [{"temperature": 0.1, "max_tokens": 500, "seed": 9}] * 4  # plan, act, act, verify
    ops = [op for op in await store.list_ops(task.id) if op.name.startswith("model:")]
    assert [op.name for op in ops] == ["model:plan", "model:act", "model:act", "model:verify"]
    assert all(op.input["settings"] == recorded.model_dump(mode="json") for op in ops)


async def test_an_agent_without_model_settings_sends_none(store: StateStore, server: LoopbackServer) -> None:
    server.answer(chat_completion(json.dumps(PLAN)), *ACT_AND_VERIFY)
    task = await run_agent(Runtime(store), make_agent("openai:some-model"))

    assert task.status is TaskStatus.COMPLETED, task.error
    assert not any(
        {"temperature", "max_tokens", "seed", "reasoning_effort"} & set(r.body) for r in server.received
    )
    assert all(op.input["settings"] is None for op in await model_ops(store, task.id, "plan"))
