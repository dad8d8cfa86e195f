"""A tool output over the context budget becomes an artifact: the prompt carries its summary and id."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ratchet import Budget, Runtime, TaskStatus
from ratchet.store import StateStore

from ..helpers.scripts import calls, plan, say, verdict
from .support import make_agent, model_ops, run_agent

LIMIT = 1000
LOG_SIZE = 5000


def _script(*reads: dict[str, Any]) -> dict[str, Any]:
    return {
        "plan": [plan("read the logs", "sum up")],
        "act": [
            calls(("fetch_logs", {"service": "X", "size": LOG_SIZE})),
            *(calls(("read_artifact", read)) for read in reads),
            say("the logs look normal"),
            say("summed up"),
        ],
        "verify": [verdict(True), verdict(True)],
    }


def _log(size: int = LOG_SIZE) -> str:
    line = "X: request served in 12 ms\n"
    return (line * (size // len(line) + 1))[:size]


async def _run(store: StateStore, script: Callable[[dict[str, Any]], str], *reads: dict[str, Any]) -> Any:
    agent = make_agent(script(_script(*reads)), budget=Budget(max_artifact_bytes_in_context=LIMIT))
    task = await run_agent(Runtime(store), agent)
    assert task.status is TaskStatus.COMPLETED, task.error
    return task


async def test_a_big_tool_output_is_stored_as_an_artifact_and_listed_in_the_state(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await _run(store, script)

    (artifact,) = await store.list_artifacts(task.id)
    assert artifact.bytes == LOG_SIZE and artifact.type == "tool_result.fetch_logs"
    assert (await store.read_artifact(artifact.id)).decode() == _log()
    (ref,) = task.state.artifacts
    assert ref.artifact_id == artifact.id and ref.bytes == LOG_SIZE
    assert ref.summary == artifact.summary and len(ref.summary) < LIMIT
    fetch = next(op for op in await store.list_ops(task.id) if op.name == "fetch_logs")
    assert fetch.output == _log()  # the journal keeps the whole result: a resume replays it


async def test_the_next_prompt_carries_the_summary_and_id_not_the_body(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await _run(store, script)

    (ref,) = task.state.artifacts
    acts = await model_ops(store, task.id, "act")
    reply = acts[1].input["messages"][-1]
    assert reply["role"] == "tool" and reply["name"] == "fetch_logs"
    assert ref.artifact_id in reply["content"] and "read_artifact" in reply["content"]
    assert len(reply["content"].encode()) < LIMIT
    assert _log() not in str(acts[1].input)
    next_step_system = acts[2].input["messages"][0]["content"]
    assert ref.artifact_id in next_step_system and f"{LOG_SIZE} bytes" in next_step_system
    stored = [m for m in await store.list_messages(task.id) if m.role == "tool"]
    assert stored[0].content == reply["content"]


async def test_read_artifact_returns_the_slice_asked_for(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task_id = "ops-reads"
    agent = make_agent(
        script(_script({"artifact_id": f"{task_id}-artifact-1", "offset": 100, "length": 50})),
        budget=Budget(max_artifact_bytes_in_context=LIMIT),
    )
    task = await run_agent(Runtime(store), agent, task_id=task_id)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert [a.artifact_id for a in task.state.artifacts] == [f"{task_id}-artifact-1"]
    read = next(op for op in await store.list_ops(task.id) if op.name == "read_artifact")
    assert read.status == "succeeded" and read.output == _log()[100:150]
    reply = (await model_ops(store, task.id, "act"))[2].input["messages"][-1]
    assert reply["content"] == _log()[100:150]


async def test_reading_an_artifact_with_the_default_length_does_not_make_another_artifact(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    """read_artifact is how the model brings an artifact into the prompt: its answer must fit it.

    With the default length (4000) over a 1000-byte context budget, the slice
    itself was turned into a second artifact, and the model got a summary of a
    summary instead of the text it asked for.
    """
    task_id = "ops-reads-default"
    agent = make_agent(
        script(_script({"artifact_id": f"{task_id}-artifact-1"})),
        budget=Budget(max_artifact_bytes_in_context=LIMIT),
    )
    task = await run_agent(Runtime(store), agent, task_id=task_id)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert [a.type for a in await store.list_artifacts(task.id)] == ["tool_result.fetch_logs"]
    reply = (await model_ops(store, task.id, "act"))[2].input["messages"][-1]
    assert reply["content"] and _log().startswith(reply["content"])
