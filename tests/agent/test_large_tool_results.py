"""A tool output too large for the journal is kept once: the prompt refers to the journal's artifact."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ratchet import Runtime, TaskStatus
from ratchet.engine.journal.large_results import RESULT_ARTIFACT
from ratchet.store import StateStore

from ..helpers.agent_tools import CRASH_VARIABLE, SimulatedCrash
from ..helpers.ledger import Ledger
from ..helpers.scripts import calls, plan, say, verdict
from ..helpers.sizes import stored_bytes
from .support import GUARD, make_agent, model_ops, run_agent

TEN_MB = 10 * 1024 * 1024

SCRIPT: dict[str, Any] = {
    "plan": [plan("read the logs")],
    "act": [
        calls(("fetch_logs", {"service": "X", "size": TEN_MB})),
        calls(("deploy", {"version": "v2"})),
        say("the logs look normal; v2 is live"),
    ],
    "verify": [verdict(True)],
}


async def _assert_kept_once(store: StateStore, task_id: str) -> None:
    task = await store.get_task(task_id)
    assert task.status is TaskStatus.COMPLETED, task.error
    assert await stored_bytes(store, task_id) < 1.2 * TEN_MB
    (artifact,) = await store.list_artifacts(task_id)
    fetch = next(op for op in await store.list_ops(task_id) if op.name == "fetch_logs")
    assert fetch.output is None and fetch.meta[RESULT_ARTIFACT]["artifact_id"] == artifact.id
    assert artifact.bytes == TEN_MB and artifact.type == "tool_result.fetch_logs"
    (ref,) = task.state.artifacts  # the prompt names the journal's artifact, not a copy
    assert ref.artifact_id == artifact.id and ref.bytes == TEN_MB
    reply = (await model_ops(store, task_id, "act"))[1].input["messages"][-1]
    assert reply["role"] == "tool" and artifact.id in reply["content"] and len(reply["content"]) < 1000


async def test_a_ten_megabyte_tool_output_is_kept_once_and_the_prompt_refers_to_it(
    store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    task = await run_agent(Runtime(store), make_agent(script(SCRIPT)))

    await _assert_kept_once(store, task.id)
    assert tools_ledger.invocations()[("fetch_logs", "X")] == 1


async def test_a_resumed_agent_reads_the_large_output_back_and_carries_on(
    store_url: str,
    script: Callable[[dict[str, Any]], str],
    tools_ledger: Ledger,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    marker = tmp_path / "crash-once"
    marker.touch()
    monkeypatch.setenv(CRASH_VARIABLE, str(marker))  # `deploy` "kills" the process once
    model = script(SCRIPT)
    async with Runtime(store_url) as rt:
        with pytest.raises(SimulatedCrash):
            await run_agent(rt, make_agent(model), task_id="big-logs")
    async with Runtime(store_url) as rt:  # a new process: the output is read back from its artifact
        task = await asyncio.wait_for(rt.resume("big-logs"), GUARD)
        assert task.status is TaskStatus.COMPLETED, task.error
        assert task.result == "the logs look normal; v2 is live"
        await _assert_kept_once(rt.store, "big-logs")
    assert tools_ledger.invocations()[("fetch_logs", "X")] == 1
