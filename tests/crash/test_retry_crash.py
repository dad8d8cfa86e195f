"""A retried agent task whose worker is SIGKILLed during the retried run; fresh workers finish it.

The task failed at its third step (its model refused); the model is fixed
and the task retried (``ratchet retry --queue``). A worker runs the retry
(``ratchet resume``) and dies at a crash point or at a random moment, and
fresh workers resume it until it completes. Steps 1 and 2 ran once, in the
failed task, and never again; step 3's deploy took effect once.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ratchet import Agent, Runtime, TaskStatus
from ratchet.store import open_store

from ..helpers import agent_tools
from ..helpers.scripts import calls, plan, say, verdict
from .harness import EXIT_COMPLETED, KILLED, REPO, STORE_KINDS, Place, Stores, finish_worker

TASK_ID = "retry-crash"
RETRY_ID = f"{TASK_ID}-retry1"
MAX_RESUMES = 4
STEPS = ("restart X", "ship v1", "ship v2")
ACT = [
    calls(("restart_service", {"service": "X"})),
    say("X restarted"),
    calls(("deploy", {"version": "v1"})),
    say("v1 is live"),
    {**calls(("deploy", {"version": "v2"})), "delay": 0.2},
    {**say("v2 is live"), "delay": 0.2},
]
FAILING = {
    "plan": [plan(*STEPS)],
    "act": [*ACT[:4], {"error": {"status": 401}}],
    "verify": [verdict(True)] * 3,
}
FIXED = {"plan": [plan(*STEPS)], "act": ACT, "verify": [verdict(True)] * 3}
# In the retried run the live calls are act (seq n), deploy (n + 1), act, verify: deploy's intent is the
# run's first, its result the second it records.
CASES = ("after_intent_commit@1", "before_result_commit@2", "after_result_commit@2", "random-0", "random-1")


class RetryRun(Place):
    """The failed task and its retry, with their store, ledger, script and RATCHET_HOME under `root`."""

    @property
    def script(self) -> Path:
        return self.root / "script.json"

    def environment(self, crash_at: str | None = None) -> dict[str, str]:
        env = {
            k: v for k, v in os.environ.items() if k not in ("RATCHET_CRASH_AT", agent_tools.CRASH_VARIABLE)
        }
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        env["RATCHET_HOME"] = str(self.root / "home")
        env[agent_tools.LEDGER_VARIABLE] = self.ledger.path
        if crash_at is not None:
            env["RATCHET_CRASH_AT"] = crash_at
        return env

    def ratchet(self, *args: str, crash_at: str | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "ratchet", *args, "--store", self.store_url],
            cwd=REPO,
            env=self.environment(crash_at),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def status(self, task_id: str) -> TaskStatus:
        async def read() -> TaskStatus:
            store = await open_store(self.store_url)
            try:
                return (await store.get_task(task_id)).status
            finally:
                await store.close()

        return asyncio.run(read())


def _failed_then_retried(root: Path, stores: Stores) -> RetryRun:
    """The task run to its failure at step 3 (in a worker), the script fixed, the retry queued."""
    run = RetryRun(root, stores.fresh(root))
    run.ledger.create()
    run.script.write_text(json.dumps(FAILING), encoding="utf-8")
    agent = Agent(
        "ops",
        "You keep X running.",
        model=f"scripted:{run.script}",
        tools=[agent_tools.check_status, agent_tools.restart_service, agent_tools.deploy],
    )

    async def submit() -> None:
        async with Runtime(run.store_url) as rt:
            await rt.submit(agent, instruction="Ship v2 of X.", task_id=TASK_ID)

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RATCHET_HOME", str(run.root / "home"))  # the workspace is fixed when the task is made
        asyncio.run(submit())
    failed = run.ratchet("resume", TASK_ID)
    _, err = failed.communicate(timeout=60)
    assert failed.returncode == 1, err
    run.script.write_text(json.dumps(FIXED), encoding="utf-8")
    queued = run.ratchet("retry", TASK_ID, "--queue", "--json")
    out, err = queued.communicate(timeout=60)
    assert queued.returncode == 0, err
    assert json.loads(out)["task_id"] == RETRY_ID
    return run


def _kill_during_the_retry(run: RetryRun, case: str) -> None:
    if not case.startswith("random-"):
        assert finish_worker(run.ratchet("resume", RETRY_ID, crash_at=case)) == KILLED
        return
    worker = run.ratchet("resume", RETRY_ID)
    deadline = time.monotonic() + 30
    while worker.poll() is None and run.status(RETRY_ID) is TaskStatus.QUEUED and time.monotonic() < deadline:
        time.sleep(0.01)
    finish_worker(worker, time.monotonic() + random.Random(case).uniform(0, 0.8))


def _invocations_by_task(run: RetryRun) -> Counter[tuple[str, str]]:
    return Counter({(tool, key.rpartition(":")[0]): n for (tool, key), n in run.ledger.invocations().items()})


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_retry_killed_midway_completes_with_each_effect_once(tmp_path: Path, kind: str, case: str) -> None:
    with Stores(kind) as stores:
        run = _failed_then_retried(tmp_path, stores)
        before = run.ledger.invocations()

        _kill_during_the_retry(run, case)
        for _ in range(MAX_RESUMES):
            if finish_worker(run.ratchet("resume", RETRY_ID)) == EXIT_COMPLETED:
                break
        else:
            raise AssertionError(f"the retry did not complete in {MAX_RESUMES} resumes")

        assert run.status(RETRY_ID) is TaskStatus.COMPLETED
        assert run.status(TASK_ID) is TaskStatus.FAILED
        # Steps 1 and 2 ran in the failed task only: the retry and its recoveries replayed them.
        assert {k: n for k, n in run.ledger.invocations().items() if k[1].startswith(f"{TASK_ID}:")} == dict(
            before
        )
        effects: Counter[Any] = run.ledger.effects()
        assert all(n == 1 for n in effects.values()), effects
        by_task = Counter((tool, key.rpartition(":")[0]) for tool, key in effects)
        assert by_task == Counter(
            {("restart_service", TASK_ID): 1, ("deploy", TASK_ID): 1, ("deploy", RETRY_ID): 1}
        )
