"""What-if forks: `ratchet fork` with another model, a tool result given, from a step; as the real program.

The origin is a planning agent's task of three steps run to completion with
scripted model A; each fork is made and resumed by `ratchet` programs.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ratchet import Runtime, TaskStatus
from ratchet.policy import CheckpointPolicy, CheckpointStrategy
from ratchet.records import Operation, OpKind, StepStatus, Task

from ..agent.support import GUARD, INSTRUCTION, INSTRUCTIONS, make_agent
from ..helpers.cli import RunRatchet, assert_one_line_error
from ..helpers.ledger import Ledger
from ..helpers.scripts import calls, plan, say, verdict
from .task_support import with_store

REPO = Path(__file__).resolve().parents[2]
STEPS = ("restart X", "ship v1", "ship v2")
TUESDAYS = "You keep the shop's services running, and you deploy only on Tuesdays."


def act(step_2_version: str) -> list[dict[str, Any]]:
    """The act answers of the three steps; the second deploys `step_2_version`."""
    return [
        calls(("restart_service", {"service": "X"})),
        say("X restarted"),
        calls(("deploy", {"version": step_2_version})),
        say("shipped"),
        calls(("deploy", {"version": "v2"})),
        say("v2 is live"),
    ]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """RATCHET_HOME under the test's directory, and the agent's test tools importable, for the programs
    started (they inherit the environment)."""
    monkeypatch.setenv("RATCHET_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return tmp_path / "home"


def model_script(script: Callable[[dict[str, Any]], str], step_2_version: str = "v1") -> str:
    return script({"plan": [plan(*STEPS)], "act": act(step_2_version), "verify": [verdict(True)] * 3})


def run_origin(url: str, model: str, *, every_iteration: bool = False) -> Task:
    """The origin task, run to completion in this process with `model`."""
    spec: dict[str, Any] = {}
    if every_iteration:  # a checkpoint before each model call: one right after each tool call
        spec["checkpoint"] = CheckpointPolicy(strategy=CheckpointStrategy.EVERY_ITERATION)

    async def run() -> Task:
        async with Runtime(url) as rt:
            return await asyncio.wait_for(rt.run(make_agent(model, **spec), instruction=INSTRUCTION), GUARD)

    task = asyncio.run(run())
    assert task.status is TaskStatus.COMPLETED, task.error
    return task


def journal(url: str, task_id: str) -> list[Operation]:
    return with_store(url, lambda store: store.list_ops(task_id))


def fork(run_ratchet: RunRatchet, url: str, *args: str) -> str:
    done = run_ratchet("fork", *args, "--json", "--store", url)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["task_id"])


def resume(run_ratchet: RunRatchet, url: str, task_id: str) -> None:
    done = run_ratchet("resume", task_id, "--json", "--store", url)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["status"] == "completed"


def answer(op: Operation) -> tuple[Any, Any]:
    """What a model call answered (its text and the tool calls it asked for), without its usage."""
    return op.output["content"], [(c["name"], c["arguments"]) for c in op.output["tool_calls"]]


def tool_calls(ops: list[Operation]) -> list[tuple[int, str, Any, Any]]:
    return [(op.seq, op.name, op.input, op.output) for op in ops if op.kind is OpKind.TOOL]


# --------------------------------------------------------------------------- --model


def test_a_fork_with_another_model_differs_from_its_origin_exactly_where_the_model_does(
    run_ratchet: RunRatchet, url: str, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    origin = run_origin(url, model_script(script))
    other = model_script(script, step_2_version="v1.1")  # model B: step 2 deploys v1.1

    new_id = fork(run_ratchet, url, origin.id, "--checkpoint", "1", "--model", other)
    forked = with_store(url, lambda store: store.get_task(new_id))
    recorded = f"scripted:{Path(other.removeprefix('scripted:')).name}"  # as `run` records it
    assert (forked.model, forked.status, forked.forked_from) == (recorded, TaskStatus.QUEUED, origin.id)
    resume(run_ratchet, url, new_id)

    was, now = journal(url, origin.id), journal(url, new_id)
    kept = with_store(url, lambda store: store.get_checkpoint(origin.id, 1)).last_seq
    assert [op.model_dump(exclude={"task_id"}) for op in now[: kept + 1]] == [
        op.model_dump(exclude={"task_id"}) for op in was[: kept + 1]
    ]  # the journal up to the checkpoint, copied as it was
    assert [(op.kind, op.name) for op in now] == [(op.kind, op.name) for op in was]
    differ = [
        op.seq
        for op, then in zip(now, was, strict=True)
        if op.kind is OpKind.MODEL and answer(op) != answer(then)
    ]
    step_2_call = next(op.seq for op in was if op.name == "model:act" and op.meta["step"] == 1)
    assert differ == [step_2_call]  # the one answer B gives otherwise
    assert answer(now[step_2_call]) == (None, [("deploy", {"version": "v1.1"})])
    assert tool_calls(now) == [
        (seq, name, {"version": "v1.1"}, {"deployed": "v1.1"})
        if args == {"version": "v1"}
        else (seq, name, args, out)
        for (seq, name, args, out) in tool_calls(was)
    ]
    [event] = with_store(url, lambda store: store.list_events(new_id, kinds={"task_forked"}))
    assert event.data["overrides"] == {"model": {"from": origin.model, "to": recorded}}
    assert event.data["checkpoint"] == 1

    # `ratchet compare` says exactly that: one tool call differs (step 2's deploy), and the journals
    # part at the model call that chose it.
    done = run_ratchet("compare", origin.id, new_id, "--json", "--store", url)
    assert done.returncode == 0, done.stderr
    compared = json.loads(done.stdout)
    marks = [(row["step"], row["position"], row["mark"]) for row in compared["tool_calls"]]
    assert marks == [(1, 1, "same"), (2, 1, "differs"), (3, 1, "same")]
    differing = compared["tool_calls"][1]["calls"]
    assert [call["arguments"] for call in differing] == [{"version": "v1"}, {"version": "v1.1"}]
    assert compared["parted_at_seq"] == step_2_call
    assert [row["same"] for row in compared["steps"]] == [True, True, True]


# --------------------------------------------------------------------------- --tool-result


def test_a_tool_result_given_to_a_fork_is_what_the_agent_sees_next(
    run_ratchet: RunRatchet, url: str, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    origin = run_origin(url, model_script(script), every_iteration=True)
    was = journal(url, origin.id)
    restart = next(op for op in was if op.name == "restart_service")
    saved = with_store(url, lambda store: store.list_checkpoints(origin.id))
    right_after = next(c.number for c in saved if c.last_seq == restart.seq)

    new_id = fork(
        run_ratchet,
        url,
        origin.id,
        "--checkpoint",
        str(right_after),
        "--tool-result",
        f'{restart.seq}={{"restarted": "nothing: X is down"}}',
    )
    resume(run_ratchet, url, new_id)

    now = journal(url, new_id)
    given = now[restart.seq]
    assert given.output == {"restarted": "nothing: X is down"}
    assert given.meta["overridden"] == {"from": {"restarted": "X"}}
    seen = json.dumps(now[restart.seq + 1].input["messages"])  # the next model call, made live
    assert "nothing: X is down" in seen
    assert "nothing: X is down" not in json.dumps(was[restart.seq + 1].input["messages"])
    assert tools_ledger.invocations()[("restart_service", restart.idempotency_key)] == 1  # not run again

    shown = run_ratchet("journal", new_id, "--store", url)
    assert shown.returncode == 0, shown.stderr
    assert (
        f"Operation {restart.seq} (restart_service) replays the result this task was forked with"
        in shown.stdout
    )
    said = run_ratchet("show", new_id, "--store", url)
    assert said.returncode == 0, said.stderr
    assert f"the result of operation {restart.seq} (restart_service) set to" in " ".join(said.stdout.split())
    forked = json.loads(run_ratchet("show", new_id, "--json", "--store", url).stdout)["forked"]
    assert (forked["kind"], forked["data"]["from"]) == ("task_forked", origin.id)
    assert forked["data"]["overrides"]["tool_results"] == [
        {"seq": restart.seq, "name": "restart_service", "from": {"restarted": "X"}, "to": given.output}
    ]
    entries = json.loads(run_ratchet("journal", new_id, "--json", "--store", url).stdout)
    assert entries[restart.seq]["meta"]["overridden"] == {"from": {"restarted": "X"}}


# ------------------------------------------------------------------ --step, --instructions, --set-input


def test_a_fork_from_a_step_keeps_the_journal_before_it_and_runs_on_other_instructions_and_inputs(
    run_ratchet: RunRatchet, url: str, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    origin = run_origin(url, model_script(script))
    was = journal(url, origin.id)
    step_2_starts = next(op.seq for op in was if op.meta.get("step") == 1)

    new_id = fork(
        run_ratchet,
        url,
        origin.id,
        "--step",
        "2",
        "--instructions",
        TUESDAYS,
        "--set-input",
        "ticket=42",
        "--set-input",
        "owner=ops team",
    )

    forked = with_store(url, lambda store: store.get_task(new_id))
    spec = forked.inputs_params["agent"]
    assert isinstance(spec, dict) and spec["instructions"] == TUESDAYS  # resealed over it: it runs below
    assert forked.instruction == INSTRUCTION  # what it planned from: its plan replays
    assert (forked.inputs_params["ticket"], forked.inputs_params["owner"]) == (42, "ops team")
    kept = journal(url, new_id)
    assert [op.model_dump(exclude={"task_id"}) for op in kept] == [
        op.model_dump(exclude={"task_id"}) for op in was[:step_2_starts]
    ]
    steps = with_store(url, lambda store: store.list_steps(new_id))
    assert [s.status for s in steps] == [StepStatus.COMPLETED, StepStatus.CURRENT, StepStatus.PENDING]
    [event] = with_store(url, lambda store: store.list_events(new_id, kinds={"task_forked"}))
    assert (event.data["step"], event.data["last_seq"]) == (2, step_2_starts - 1)
    overrides = event.data["overrides"]
    assert isinstance(overrides, dict)
    assert overrides["instructions"] == {"from": INSTRUCTIONS, "to": TUESDAYS}
    assert overrides["inputs"] == {
        "owner": {"from": None, "to": "ops team"},
        "ticket": {"from": None, "to": 42},
    }

    resume(run_ratchet, url, new_id)

    now = journal(url, new_id)
    assert [(op.name, op.input) for op in now if op.kind is OpKind.TOOL] == [
        (op.name, op.input) for op in was if op.kind is OpKind.TOOL
    ]
    asked = now[step_2_starts].input["messages"][0]["content"]  # the first call made live
    assert TUESDAYS in asked and INSTRUCTIONS not in asked
    assert INSTRUCTIONS in was[step_2_starts].input["messages"][0]["content"]


# --------------------------------------------------------------------------- bad input


def test_every_bad_fork_is_one_line_and_stores_nothing(
    run_ratchet: RunRatchet, url: str, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    origin = run_origin(url, model_script(script))
    model_call = next(op.seq for op in journal(url, origin.id) if op.kind is OpKind.MODEL)
    tool_call = next(op.seq for op in journal(url, origin.id) if op.kind is OpKind.TOOL)
    cases: list[tuple[list[str], list[str]]] = [
        (["--checkpoint", "1", "--step", "1"], ["--checkpoint N or --step N", "not both"]),
        ([], ["give --checkpoint N or --step N"]),
        (["--step", "9"], ["no step 9 to fork from", "1 to 3"]),
        (["--checkpoint", "1", "--set-input", "ticket"], ["--set-input 'ticket'", "KEY=VALUE"]),
        (
            ["--checkpoint", "1", "--tool-result", f"{model_call}=1"],
            [f"operation {model_call}", "not a tool call"],
        ),
        (["--checkpoint", "1", "--tool-result", "999=1"], ["no operation 999 before the fork point"]),
        (
            ["--checkpoint", "3", "--tool-result", f"{tool_call}={{oops"],
            [f"--tool-result {tool_call}", "must be JSON"],
        ),
        (["--checkpoint", "1", "--tool-result", "x=1"], ["--tool-result 'x=1'", "SEQ=JSON"]),
        (["--checkpoint", "1", "--set-input", "agent={}"], ["input 'agent' names the code"]),
        (["--checkpoint", "1", "--model", "gpt-4o"], ["model 'gpt-4o'", "provider:name"]),
    ]
    for args, expected in cases:
        done = run_ratchet("fork", origin.id, *args, "--store", url)

        assert_one_line_error(done, *expected)
    tasks = with_store(url, lambda store: store.list_tasks())
    assert [task.id for task in tasks] == [origin.id]  # nothing forked
