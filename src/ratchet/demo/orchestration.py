"""The demo's story: submit a deploy, kill its worker mid-deploy, resume, count the effects.

Every worker is a real ``python -m ratchet resume TASK --store URL`` process;
the first is killed with SIGKILL while ``apply_manifest`` is in flight (the
ledger shows it started and not finished), the second takes the task over and
finishes it. Then the ledger and the journal show what happened: each effect
exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from ..agent import Agent
from ..records import Constraints, HumanInTheLoop, OpStatus, TaskStatus
from ..runtime import Runtime
from ..store import store_from_url
from ..trust.code import CodeTrust
from . import findings, tools
from .findings import CrashState
from .ledger import LEDGER_ENV, Ledger
from .paths import SCRIPT_NAME, DemoPaths
from .report import Report

__all__ = ["DemoFailed", "WorkerProcess", "deploy_agent", "environment", "run_demo"]

INSTRUCTION = "Deploy service-x to staging"
WATCH_INTERVAL = 0.05
APPLY_START_TIMEOUT = 20.0
FINISH_TIMEOUT = 30.0


class DemoFailed(Exception):
    """Something in the demo did not go as it should; the message says what."""


def deploy_agent(script: Path) -> Agent:
    """The deploy agent: the five ledger tools, the scripted model, no person in the loop."""
    return Agent(
        name="deploy service-x",
        instructions="You deploy services: check, build, push, apply the manifest, verify.",
        tools=[
            tools.check_status,
            tools.build_image,
            tools.push_image,
            tools.apply_manifest,
            tools.verify_rollout,
        ],
        model=f"scripted:{script}",
        # The demo runs unattended: no risk level waits for a person's approval.
        constraints=Constraints(human_in_the_loop=HumanInTheLoop(required_for_risk_levels=[])),
    )


async def run_demo(paths: DemoPaths, report: Report) -> str:
    """Tell the whole story to `report`; return the task's id.

    Raises:
        DemoFailed: a step went wrong; the message says which and how.
    """
    workers: list[WorkerProcess] = []
    try:
        return await _tell(paths, report, workers)
    finally:
        for worker in workers:  # only when the demo ends early: each has ended by now otherwise
            await worker.stop()


async def _tell(paths: DemoPaths, report: Report, workers: list[WorkerProcess]) -> str:
    began = time.monotonic()
    report.intro(paths)
    script = resources.files(__package__).joinpath(SCRIPT_NAME).read_text("utf-8")
    paths.script.write_text(script, "utf-8")
    ledger = Ledger(paths.ledger)
    ledger.create()

    report.phase(1, "Submit the task")
    # Its workers run in the demo directory: the task names its script relative to that project root.
    with CodeTrust(root=paths.directory.resolve()).enforced():
        agent = deploy_agent(paths.script)
    with environment(RATCHET_HOME=str(paths.directory)):  # its workspace goes in the demo directory
        async with Runtime(paths.store_url) as runtime:
            task_id = await runtime.submit(agent, instruction=INSTRUCTION)
    report.submitted(task_id)

    report.phase(2, "Run it, and kill the worker in the middle of apply_manifest")
    first = await WorkerProcess.start(1, task_id, paths, report)
    workers.append(first)
    await _kill_during_apply(first, ledger, task_id, report)
    async with store_from_url(paths.store_url, create=False) as store:
        crash = CrashState(
            task=await store.get_task(task_id),
            steps=await store.list_steps(task_id),
            ops=await store.list_ops(task_id),
            lease=await store.get_lease(task_id),
        )

    report.phase(3, "The task right after the crash")
    _check_crash(crash)
    report.crash_state(crash, ledger.invocations(task_id), ledger.effects(task_id))

    report.phase(4, "Restart: a second worker takes the task over")
    second = await WorkerProcess.start(2, task_id, paths, report, after=first.pid)
    workers.append(second)
    code = await second.finish(FINISH_TIMEOUT)
    report.worker_exited(second.number, second.pid, code)

    report.phase(5, "What happened: the ledger and the journal")
    async with store_from_url(paths.store_url, create=False) as store:
        task = await store.get_task(task_id)
        ops = await store.list_ops(task_id)
        events = await store.list_events(task_id)
    runs = findings.how_the_resume_ran(ops, events)
    effects = ledger.effects(task_id)
    tallies = findings.tally(ledger.invocations(task_id), effects)
    report.ledger_table(tallies)
    report.resume_table(runs, events)
    wrong = findings.problems(task, ops, runs, tallies)
    if code != 0:
        wrong.insert(0, f"the second worker exited with code {code}, not 0")
    if wrong:
        raise DemoFailed("; ".join(wrong))
    elapsed = time.monotonic() - began
    report.verdict(tallies, elapsed)
    return task_id


# --------------------------------------------------------------------------- the workers


class WorkerProcess:
    """One ``python -m ratchet resume`` process, its output echoed as it comes."""

    def __init__(self, number: int, process: asyncio.subprocess.Process, report: Report) -> None:
        self.number = number
        self.process = process
        self.report = report
        self._echo = asyncio.create_task(self._pump())

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    async def start(
        cls, number: int, task_id: str, paths: DemoPaths, report: Report, *, after: int | None = None
    ) -> WorkerProcess:
        """Start worker `number` on the task; `after` is the pid of the worker it follows."""
        argv = [sys.executable, "-m", "ratchet", "resume", task_id, "--store", paths.store_url]
        env = {key: value for key, value in os.environ.items() if key != "RATCHET_CRASH_AT"}
        env.update(
            {LEDGER_ENV: str(paths.ledger), "RATCHET_HOME": str(paths.directory), "PYTHONUNBUFFERED": "1"}
        )
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=paths.directory,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        report.worker_started(number, process.pid, argv, after=after)
        return cls(number, process, report)

    async def _pump(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            self.report.worker_line(self.number, raw.decode("utf-8", "replace").rstrip())

    async def kill(self) -> None:
        """SIGKILL: no handler runs, nothing is flushed or released."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)
        await self.process.wait()  # reaped: its pid no longer exists, as after a real crash
        await self._echo

    async def finish(self, timeout: float) -> int:
        """Wait for the process to end by itself; return its exit code."""
        try:
            async with asyncio.timeout(timeout):
                code = await self.process.wait()
                await self._echo
        except TimeoutError:
            await self.kill()
            raise DemoFailed(f"worker {self.number} did not finish within {timeout:g} s") from None
        return code

    async def stop(self) -> None:
        """Kill the process if it still runs (the demo is ending early)."""
        if self.process.returncode is None:
            await self.kill()


async def _kill_during_apply(worker: WorkerProcess, ledger: Ledger, task_id: str, report: Report) -> None:
    """Watch the ledger until apply_manifest has started and not taken effect; then SIGKILL."""
    deadline = time.monotonic() + APPLY_START_TIMEOUT
    while True:
        if worker.process.returncode is not None:
            raise DemoFailed(
                f"worker 1 ended by itself (exit code {worker.process.returncode}) before "
                "apply_manifest started; its output is above"
            )
        if any(e.tool == "apply_manifest" for e in ledger.effects(task_id)):
            raise DemoFailed("apply_manifest took effect before the demo could stop its worker")
        if any(i.tool == "apply_manifest" for i in ledger.invocations(task_id)):
            break
        if time.monotonic() > deadline:
            raise DemoFailed(f"apply_manifest did not start within {APPLY_START_TIMEOUT:g} s")
        await asyncio.sleep(WATCH_INTERVAL)
    report.apply_started()
    await worker.kill()
    report.killed(worker.pid)


def _check_crash(crash: CrashState) -> None:
    if crash.task.status is not TaskStatus.RUNNING:
        raise DemoFailed(f"after the crash the task is {crash.task.status_text}, not running")
    open_ops = [op for op in crash.ops if op.status is OpStatus.STARTED]
    if [op.name for op in open_ops] != ["apply_manifest"]:
        raise DemoFailed(
            "after the crash the journal should hold apply_manifest's intent and no result; "
            f"operations without a result: {[op.name for op in open_ops]}"
        )


# --------------------------------------------------------------------------- plumbing


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
