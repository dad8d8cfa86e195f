"""The planning agent's worker SIGKILLed at crash points and at random moments; fresh workers finish it.

Each run is one agent task (scripted model, the ledger tools of
`tests.helpers.agent_tools`) in its own store (SQLite or PostgreSQL), ledger and
RATCHET_HOME. A
worker is a real ``python -m ratchet resume TASK --store URL`` process. After
the kill, workers resume the task until it completes; it must end as an
uninterrupted run did, with no effect twice under one key.

Pass counts in the first worker follow the script: intents are
restart_service (1) and deploy (2); results are model:plan (1), model:act (2),
restart_service (3) ...; model requests are plan (1), act (2, 3), verify (4).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ratchet import Agent, Runtime, TaskStatus
from ratchet.records import OpStatus
from ratchet.store import open_store

from ..helpers import agent_tools
from ..helpers.scripts import calls, plan_step, say, verdict
from .harness import (
    EXIT_COMPLETED,
    KILLED,
    REPO,
    STORE_KINDS,
    Place,
    Stores,
    assert_no_duplicate_effects,
    finish_worker,
    worker_command,
)

TASK_ID = "agent-crash"
RANDOM_SEEDS = range(5)
MAX_RESUMES = 4


STEP_NAMES = ("restart X", "look at X", "ship v2")
SCRIPT: dict[str, Any] = {
    "plan": [{"content": {"goal": "X runs v2", "steps": [plan_step(name) for name in STEP_NAMES]}}],
    "act": [
        calls(("restart_service", {"service": "X"})),
        {**say("X restarted"), "delay": 0.15},
        calls(("check_status", {"service": "X"})),
        say("X is degraded"),
        {**calls(("deploy", {"version": "v2"})), "delay": 0.15},
        say("v2 is live"),
    ],
    "verify": [verdict(True)] * 3,
}


# --------------------------------------------------------------------------- one run


@dataclass(frozen=True)
class Outcome:
    """What a run left in its store and its ledger."""

    status: TaskStatus
    result: Any
    steps: tuple[tuple[str, str], ...]
    journal: tuple[tuple[int, str, str, str], ...]
    messages: tuple[tuple[Any, ...], ...]
    loop_events: Counter[str]
    checkpoints: tuple[int, ...]
    effects: Counter[tuple[str, str]]


@dataclass(frozen=True)
class AgentRun(Place):
    """One planned agent task, with its store and ledger under `root`."""

    @property
    def home(self) -> Path:
        return self.root / "home"

    def environment(self, crash_at: str | None) -> dict[str, str]:
        env = {
            k: v for k, v in os.environ.items() if k not in ("RATCHET_CRASH_AT", agent_tools.CRASH_VARIABLE)
        }
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        env["RATCHET_HOME"] = str(self.home)
        env[agent_tools.LEDGER_VARIABLE] = self.ledger.path
        if crash_at is not None:
            env["RATCHET_CRASH_AT"] = crash_at
        return env

    def worker(self, crash_at: str | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            worker_command(self.store_url, TASK_ID),
            cwd=REPO,
            env=self.environment(crash_at),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def outcome(self) -> Outcome:
        return asyncio.run(self._read())

    def status(self) -> TaskStatus:
        async def read() -> TaskStatus:
            store = await open_store(self.store_url)
            try:
                return (await store.get_task(TASK_ID)).status
            finally:
                await store.close()

        return asyncio.run(read())

    def active_seconds(self) -> float:
        async def read() -> float:
            store = await open_store(self.store_url)
            try:
                task = await store.get_task(TASK_ID)
                assert task.started_at is not None
                return (task.updated_at - task.started_at).total_seconds()
            finally:
                await store.close()

        return asyncio.run(read())

    async def _read(self) -> Outcome:
        store = await open_store(self.store_url)
        try:
            task = await store.get_task(TASK_ID)
            loop_kinds = (
                "plan",
                "step_started",
                "step_completed",
                "step_retry",
                "replanned",
                "step_skipped",
                "task_completed_by_agent",
                "task_completed",
            )
            return Outcome(
                status=task.status,
                result=task.result,
                steps=tuple((s.name, str(s.status)) for s in await store.list_steps(TASK_ID)),
                journal=tuple(
                    (op.seq, str(op.kind), op.name, str(op.status)) for op in await store.list_ops(TASK_ID)
                ),
                messages=tuple(
                    (m.role, m.content, json.dumps(m.tool_calls), m.tool_call_id)
                    for m in await store.list_messages(TASK_ID)
                ),
                loop_events=Counter(e.kind for e in await store.list_events(TASK_ID) if e.kind in loop_kinds),
                checkpoints=tuple(c.last_seq for c in await store.list_checkpoints(TASK_ID)),
                effects=self.ledger.effects(),
            )
        finally:
            await store.close()


def new_agent_run(root: Path, script: Path, stores: Stores) -> AgentRun:
    """The run's store and ledger, and its task submitted (queued; no worker yet)."""
    run = AgentRun(root, stores.fresh(root))
    run.ledger.create()
    agent = Agent(
        "ops",
        "You keep X running.",
        model=f"scripted:{script}",
        tools=[agent_tools.check_status, agent_tools.restart_service, agent_tools.deploy],
    )

    async def submit() -> None:
        async with Runtime(run.store_url) as rt:
            await rt.submit(agent, instruction="Ship v2 of X.", task_id=TASK_ID)

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RATCHET_HOME", str(run.home))  # the workspace is fixed when the task is created
        asyncio.run(submit())
    return run


def kill_while_running(run: AgentRun, after: float) -> int:
    """Start a worker and SIGKILL it `after` seconds into the task's run (its startup left out)."""
    worker = run.worker()
    deadline = time.monotonic() + 30
    while worker.poll() is None and run.status() is TaskStatus.QUEUED and time.monotonic() < deadline:
        time.sleep(0.01)
    return finish_worker(worker, time.monotonic() + after)


def resume_until_done(run: AgentRun) -> int:
    """Resume the task in fresh workers until one exits saying it completed; return how many ran."""
    for resumes in range(1, MAX_RESUMES + 1):
        if finish_worker(run.worker()) == EXIT_COMPLETED:
            return resumes
    raise AssertionError(f"the task did not complete in {MAX_RESUMES} resumes: {run.outcome()}")


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def agent_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("agent-script") / "script.json"
    path.write_text(json.dumps(SCRIPT), encoding="utf-8")
    return path


@dataclass(frozen=True)
class AgentReference:
    outcome: Outcome
    active: float  # seconds from the task's start to its end, startup of the process left out


@pytest.fixture(scope="module")
def agent_reference(tmp_path_factory: pytest.TempPathFactory, agent_script: Path) -> AgentReference:
    """One uninterrupted run on SQLite, by one worker nobody kills."""
    with Stores("sqlite") as stores:
        run = new_agent_run(tmp_path_factory.mktemp("agent-reference"), agent_script, stores)
        assert finish_worker(run.worker()) == EXIT_COMPLETED
        outcome = run.outcome()
        assert outcome.status is TaskStatus.COMPLETED
        assert outcome.steps == tuple((name, "completed") for name in STEP_NAMES)
        assert outcome.result == "v2 is live"
        assert {tool for tool, _ in outcome.effects} == {"restart_service", "deploy"}
        assert not (run.home / "workspaces" / TASK_ID).exists()
        return AgentReference(outcome, run.active_seconds())


CRASH_POINTS = ("after_intent_commit@2", "before_result_commit@3", "during_model_call@4")
RANDOM_CASES = tuple(f"random-{seed}" for seed in RANDOM_SEEDS)


@dataclass(frozen=True)
class Recovered:
    at_kill: Outcome
    final: Outcome
    resumes: int


@pytest.fixture(scope="module", params=STORE_KINDS)
def recovered(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    agent_script: Path,
    agent_reference: AgentReference,
) -> Iterator[dict[str, Recovered | Exception]]:
    """Every case killed and recovered once, a few at a time, on each store kind; its tests read the result.

    The tasks are submitted first, one after the other: submitting sets
    RATCHET_HOME in this process's environment for a moment.
    """
    root = tmp_path_factory.mktemp(f"agent-crash-{request.param}")
    cases = CRASH_POINTS + RANDOM_CASES
    stores = Stores(request.param)
    runs = {case: new_agent_run(root / case, agent_script, stores) for case in cases}

    def one(case: str) -> Recovered | Exception:
        run = runs[case]
        try:
            if case.startswith("random-"):
                rng = random.Random(int(case.removeprefix("random-")))
                kill_while_running(run, rng.uniform(0, agent_reference.active))
            else:
                code = finish_worker(run.worker(case))
                assert code == KILLED, (
                    f"RATCHET_CRASH_AT={case}: the worker exited {code} instead of being killed"
                )
            at_kill = run.outcome()
            resumes = resume_until_done(run)
            return Recovered(at_kill, run.outcome(), resumes)
        except (AssertionError, subprocess.SubprocessError) as error:  # reported by the case's own tests
            return error

    with stores, ThreadPoolExecutor(4) as pool:
        yield dict(zip(cases, pool.map(one, cases), strict=True))


def _case(recovered: dict[str, Recovered | Exception], case: str) -> Recovered:
    result = recovered[case]
    if isinstance(result, Exception):
        raise result
    return result


# --------------------------------------------------------------------------- the checks


def test_each_crash_point_kills_where_expected(recovered: dict[str, Recovered | Exception]) -> None:
    intent = _case(recovered, "after_intent_commit@2").at_kill
    assert intent.journal[-1][2:] == ("deploy", str(OpStatus.STARTED))
    assert "deploy" not in {tool for tool, _ in intent.effects}
    result = _case(recovered, "before_result_commit@3").at_kill
    assert result.journal[-1][2:] == ("restart_service", str(OpStatus.STARTED))
    assert "restart_service" in {tool for tool, _ in result.effects}  # it acted; its result is not recorded
    model = _case(recovered, "during_model_call@4").at_kill
    assert model.journal[-1][2] == "model:act" and "model:verify" not in {op[2] for op in model.journal}


@pytest.mark.parametrize("case", CRASH_POINTS + RANDOM_CASES)
def test_a_killed_agent_task_recovers_as_an_uninterrupted_run(
    case: str, recovered: dict[str, Recovered | Exception], agent_reference: AgentReference
) -> None:
    final, reference = _case(recovered, case).final, agent_reference.outcome
    assert final.status is TaskStatus.COMPLETED
    assert final.steps == reference.steps
    assert final.result == reference.result
    assert final.journal == reference.journal
    assert_no_duplicate_effects(final.effects)
    assert set(final.effects) == set(reference.effects)


@pytest.mark.parametrize("case", CRASH_POINTS + RANDOM_CASES)
def test_a_killed_agent_task_writes_its_history_once(
    case: str, recovered: dict[str, Recovered | Exception], agent_reference: AgentReference
) -> None:
    """Messages, the loop's events and checkpoints: as many as an uninterrupted run's, no repeats."""
    final, reference = _case(recovered, case).final, agent_reference.outcome
    assert len(final.messages) == len(reference.messages), "messages stored twice"
    assert final.messages == reference.messages
    assert final.loop_events == reference.loop_events
    assert final.checkpoints == reference.checkpoints
