"""The counters a process keeps while `recording`: retries, calls in doubt, takeovers, commits.

The task runs in this process; it "dies" in a tool call (`SimulatedCrash`:
the call's intent committed, its result not) and is resumed, as a worker
taking over a task whose worker died would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ratchet import Runtime, TaskStatus
from ratchet.observe import recording
from ratchet.observe.metrics import Metrics
from ratchet.store import StateStore

from ..agent.support import GUARD, INSTRUCTION, make_agent
from ..helpers.agent_tools import CRASH_VARIABLE, SimulatedCrash
from ..helpers.ledger import Ledger
from ..helpers.scripts import calls, plan, say, verdict
from .metrics_support import parse, value

SCRIPT: dict[str, Any] = {
    "plan": [plan("ship v2")],
    "act": [
        {"error": {"status": 503, "retry_after": 0.01}},
        calls(("deploy", {"version": "v2"})),
        say("v2 is live"),
    ],
    "verify": [verdict(True, "v2 answers")],
}


async def test_retries_in_doubt_calls_and_takeovers_are_counted(
    store: StateStore,
    script: Callable[[dict[str, Any]], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tools_ledger: Ledger,
) -> None:
    marker = tmp_path / "crash-once"
    marker.touch()
    monkeypatch.setenv(CRASH_VARIABLE, str(marker))
    metrics = Metrics(store)
    rt = Runtime(store)
    with recording(metrics):
        with pytest.raises(SimulatedCrash):
            await asyncio.wait_for(
                rt.run(make_agent(script(SCRIPT)), instruction=INSTRUCTION, task_id="t"), GUARD
            )
        crashed = parse((await metrics.exposition()).decode())
        task = await asyncio.wait_for(rt.resume("t"), GUARD)
    assert task.status is TaskStatus.COMPLETED, task.error
    done = parse((await metrics.exposition()).decode())

    assert value(crashed, "ratchet_call_retries_total", kind="model") == 1
    assert value(crashed, "ratchet_lease_takeovers_total") == 0
    assert value(crashed, "ratchet_tasks", status="running") == 1
    assert value(done, "ratchet_in_doubt_calls_total") == 1
    assert value(done, "ratchet_lease_takeovers_total") == 1
    assert value(done, "ratchet_calls_total", kind="tool", outcome="succeeded") == 1  # deploy, run again
    assert value(done, "ratchet_tasks", status="completed") == 1
    assert value(done, "ratchet_journal_commit_seconds_count") > value(
        crashed, "ratchet_journal_commit_seconds_count"
    )


async def test_without_recording_nothing_is_counted(
    store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    metrics = Metrics(store)
    script_text = {"plan": [plan("ship v2")], "act": [say("nothing to do")], "verify": [verdict(True)]}
    task = await asyncio.wait_for(
        Runtime(store).run(make_agent(script(script_text)), instruction=INSTRUCTION), GUARD
    )
    assert task.status is TaskStatus.COMPLETED
    counted = parse((await metrics.exposition()).decode())
    assert value(counted, "ratchet_calls_total", kind="model", outcome="succeeded") == 0
    assert value(counted, "ratchet_tasks", status="completed") == 1  # the store's gauges still read
