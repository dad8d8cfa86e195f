"""Spans across a SIGKILL: the agent's worker is killed mid-run, fresh workers finish the task.

Each worker is a real ``ratchet resume`` process (`tests.observe.traced`)
writing its spans to a file as they end. Whatever the kill cut short, every
call the journal holds is reported by exactly one span, every step and the
task once, all in the task's one trace.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from ratchet.observe import span_id_for, trace_id_for
from ratchet.records import OpKind, OpStatus

from ..crash.harness import EXIT_COMPLETED, KILLED, REPO, Stores, finish_worker
from ..crash.test_agent_crash import STEP_NAMES, TASK_ID, AgentRun, agent_script, new_agent_run
from .span_file import PLAIN_VARIABLE, SPANS_VARIABLE, read_spans

__all__ = ["agent_script"]  # the fixture, shared with the agent's crash tests

MAX_RESUMES = 4


def traced_worker(
    run: AgentRun, spans: Path, crash_at: str | None = None, plain: bool = False
) -> subprocess.Popen[str]:
    env = run.environment(crash_at) | {SPANS_VARIABLE: str(spans)} | ({PLAIN_VARIABLE: "1"} if plain else {})
    command = [sys.executable, "-m", "tests.observe.traced", "resume", TASK_ID, "--store", run.store_url]
    return subprocess.Popen(
        [*command, "--lease-ttl", "3"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize(
    ("crash_at", "plain"),
    [
        ("during_model_call@3", False),  # the second act request, after restart_service ran
        ("after_intent_commit@2", False),  # deploy's intent committed, deploy not run: in doubt, run again
        # The workers' own plain TracerProvider(), without stable_ids: the same trace, the same parents.
        ("after_intent_commit@2", True),
    ],
)
def test_each_live_call_is_one_span_in_one_trace_across_a_kill(
    tmp_path: Path, agent_script: Path, crash_at: str, plain: bool
) -> None:
    spans_file = tmp_path / "spans.jsonl"
    with Stores("sqlite") as stores:
        run = new_agent_run(tmp_path, agent_script, stores)
        assert finish_worker(traced_worker(run, spans_file, crash_at, plain)) == KILLED
        before_kill = read_spans(spans_file)
        for _ in range(MAX_RESUMES):
            if finish_worker(traced_worker(run, spans_file, plain=plain)) == EXIT_COMPLETED:
                break
        else:
            raise AssertionError(f"the task did not complete in {MAX_RESUMES} resumes")
        outcome = run.outcome()

    spans = read_spans(spans_file)
    assert before_kill and len(spans) > len(before_kill)
    assert len({span["pid"] for span in spans}) >= 2  # the killed worker and one that resumed
    assert {span["trace_id"] for span in spans} == {trace_id_for(TASK_ID)}
    assert not [sid for sid, n in Counter(s["span_id"] for s in spans).items() if n > 1]

    calls = [s for s in spans if "ratchet.op.seq" in s["attributes"]]
    reported = Counter(s["attributes"]["ratchet.op.seq"] for s in calls)
    journal = {
        seq
        for seq, kind, _name, status in outcome.journal
        if kind in (OpKind.MODEL, OpKind.TOOL) and status == OpStatus.SUCCEEDED
    }
    assert reported == Counter(journal)  # each call once: none lost, none again on replay

    steps = [s for s in spans if "ratchet.step.name" in s["attributes"]]
    assert sorted(s["attributes"]["ratchet.step.name"] for s in steps) == sorted(STEP_NAMES)
    [task] = [s for s in spans if "ratchet.task.status" in s["attributes"]]
    assert task["name"] == "invoke_agent ops"  # an agent's task is the agent's run
    assert task["span_id"] == span_id_for(TASK_ID, "task") and task["parent_id"] is None
    assert {s["parent_id"] for s in steps} == {task["span_id"]}
    step_ids = {s["attributes"]["ratchet.step.index"]: s["span_id"] for s in steps}
    for call in calls:
        index = call["attributes"].get("ratchet.step.index")
        assert call["parent_id"] == (task["span_id"] if index is None else step_ids[index])

    models = [s for s in calls if s["attributes"]["gen_ai.operation.name"] == "chat"]
    assert models and all(s["attributes"]["gen_ai.system"] == "scripted" for s in models)
    assert all("gen_ai.usage.input_tokens" in s["attributes"] for s in models)
    tools = {s["attributes"].get("gen_ai.tool.name") for s in calls} - {None}
    assert {"restart_service", "check_status", "deploy"} <= tools
