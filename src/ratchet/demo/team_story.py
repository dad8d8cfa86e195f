"""`ratchet demo team`: the team builds a small package, its worker is killed, the run resumes.

An architect plans four modules, a coder child task writes each (two at
once), a reviewer asks one fix. The first worker (``python -m ratchet resume``)
is SIGKILLed while a coder's ``save_module`` is in flight and at least one
module is saved; a second worker resumes the tree. The ledger then proves
that no module saved before the crash was saved again, and the journal that
no model call was made twice.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from importlib import resources
from typing import TypeVar

from pydantic import JsonValue
from rich.table import Table
from rich.text import Text

from ..records import Operation, Task, TaskStatus
from ..runtime import Runtime
from ..store import store_from_url
from .ledger import Effect, Invocation, Ledger
from .orchestration import DemoFailed, WorkerProcess, environment
from .paths import DemoPaths
from .report import Report

__all__ = ["TeamModels", "run_team_demo"]

_Row = TypeVar("_Row", Invocation, Effect)

GOAL = "a small calculator package"
KILL_TIMEOUT = 20.0
FINISH_TIMEOUT = 30.0
WATCH_INTERVAL = 0.05


@dataclass(frozen=True)
class TeamModels:
    """The model of each role, ``provider:name``; None for the role's script in the package."""

    architect: str | None = None
    coder: str | None = None
    reviewer: str | None = None

    def resolved(self) -> dict[str, str]:
        scripts = resources.files(__package__)
        return {
            role: given or f"scripted:{scripts.joinpath(f'team_{role}.json')}"
            for role, given in (
                ("architect", self.architect),
                ("coder", self.coder),
                ("reviewer", self.reviewer),
            )
        }


async def run_team_demo(paths: DemoPaths, report: Report, models: TeamModels) -> str:
    """Tell the team's story to `report`; return the parent task's id.

    Raises:
        DemoFailed: a step went wrong; the message says which and how.
    """
    workers: list[WorkerProcess] = []
    try:
        return await _tell(paths, report, models, workers)
    finally:
        for worker in workers:
            await worker.stop()


async def _tell(paths: DemoPaths, report: Report, models: TeamModels, workers: list[WorkerProcess]) -> str:
    began = time.monotonic()
    say = report.console
    say.print(
        Text("Ratchet demo: a team of agents builds a package, crash in the middle, resume.", style="bold")
    )
    roles = models.resolved()
    for role, model in roles.items():
        say.print(f"  {role:<9} {model}", soft_wrap=True)
    say.print(f"  directory {paths.directory}", soft_wrap=True)
    ledger = Ledger(paths.ledger)
    ledger.create()

    report.phase(1, "Submit the team's task")
    inputs: dict[str, JsonValue] = {
        "goal": GOAL,
        **roles,
        "directory": str(paths.directory / "package"),
        "max_concurrency": 2,
    }
    with environment(RATCHET_HOME=str(paths.directory)):
        async with Runtime(paths.store_url) as runtime:
            task_id = await runtime.submit("ratchet.demo.team:team", inputs)
    say.print(f"Submitted task {task_id}: architect, then one coder child per module (2 at once), reviewer.")

    report.phase(2, "Run it, and kill the worker while a coder saves its module")
    first = await WorkerProcess.start(1, task_id, paths, report)
    workers.append(first)
    saved_before = await _kill_mid_save(first, ledger, task_id)
    say.print(
        Text(
            f"Killed worker 1 (pid {first.pid}) with SIGKILL; saved before: {saved_before}.", style="bold red"
        )
    )
    before = await _tree_ops(paths.store_url, task_id)
    models_before = {(op.task_id, op.seq) for ops in before.values() for op in ops if _paid(op)}

    report.phase(3, "Restart: a second worker resumes the tree")
    second = await WorkerProcess.start(2, task_id, paths, report, after=first.pid)
    workers.append(second)
    code = await second.finish(FINISH_TIMEOUT)
    report.worker_exited(second.number, second.pid, code)

    report.phase(4, "The proof: the ledger and the journal")
    async with store_from_url(paths.store_url, create=False) as store:
        task = await store.get_task(task_id)
    after = await _tree_ops(paths.store_url, task_id)
    wrong = _problems(task, code, ledger, saved_before, models_before, after)
    _print_ledger(report, ledger, task_id)
    model_ops = [op for ops in after.values() for op in ops if op.kind == "model"]
    say.print(
        f"Model calls in the journal: {len(model_ops)}, each made once (attempt 1); "
        f"{len(models_before)} were paid before the crash and replayed from the journal after it.",
        soft_wrap=True,
    )
    if wrong:
        raise DemoFailed("; ".join(wrong))
    result = task.result if isinstance(task.result, dict) else {}
    review = result.get("review")
    summary = review.get("summary") if isinstance(review, dict) else None
    say.print(f"Modules: {result.get('modules')}; review: {summary}", soft_wrap=True)
    say.print(
        Text(
            f"No finished module was written twice, no model call was paid for twice "
            f"({time.monotonic() - began:.1f} s).",
            style="bold green",
        )
    )
    return task_id


def _paid(op: Operation) -> bool:
    return op.kind == "model" and op.finished_at is not None


async def _kill_mid_save(worker: WorkerProcess, ledger: Ledger, task_id: str) -> list[str]:
    """Wait until a module is saved and another save is in flight; SIGKILL; return the saved keys."""
    deadline = time.monotonic() + KILL_TIMEOUT
    while True:
        if worker.process.returncode is not None:
            raise DemoFailed(f"worker 1 ended by itself (exit code {worker.process.returncode}) too early")
        invoked = {i.idempotency_key for i in _saves(ledger.invocations(tree=task_id))}
        saved = {e.idempotency_key for e in _saves(ledger.effects(tree=task_id))}
        if saved and invoked - saved:
            break
        if time.monotonic() > deadline:
            raise DemoFailed(f"no save was in flight after a finished one within {KILL_TIMEOUT:g} s")
        await asyncio.sleep(WATCH_INTERVAL)
    await worker.kill()
    return sorted({e.idempotency_key for e in _saves(ledger.effects(tree=task_id))})


def _saves(rows: list[_Row]) -> list[_Row]:
    """The rows of ``save_module``: a store the deploy demo shares has its tools' rows too."""
    return [row for row in rows if row.tool == "save_module"]


async def _tree_ops(store_url: str, task_id: str) -> dict[str, list[Operation]]:
    async with store_from_url(store_url, create=False) as store:
        tree = [t.id for t in await store.list_tasks() if t.id == task_id or t.parent_id == task_id]
        return {tid: await store.list_ops(tid) for tid in tree}


def _problems(
    task: Task,
    code: int,
    ledger: Ledger,
    saved_before: list[str],
    models_before: set[tuple[str, int]],
    after: dict[str, list[Operation]],
) -> list[str]:
    found = []
    if code != 0:
        found.append(f"the second worker exited with code {code}, not 0")
    if task.status is not TaskStatus.COMPLETED:
        found.append(f"the task ended {task.status_text}, not completed ({task.error or 'no error'})")
    invocations = _saves(ledger.invocations(tree=task.id))
    for key in saved_before:
        runs = sum(1 for i in invocations if i.idempotency_key == key)
        if runs != 1:
            found.append(f"the module saved under {key} before the crash was saved {runs} times")
    effects = _saves(ledger.effects(tree=task.id))
    written = [e.detail["module"] for e in effects]
    planned = task.result.get("modules") if isinstance(task.result, dict) else None
    coders = len(after) - 1  # one child task per module, and one per fix the reviewer asked
    if len(written) != coders or not isinstance(planned, list) or not set(planned) <= set(written):
        found.append(f"the modules saved are {written}: not once for each of the {coders} coder tasks")
    for ops in after.values():
        for op in ops:
            if op.kind == "model" and op.attempt != 1:
                found.append(f"model call {op.task_id}#{op.seq} was made {op.attempt} times")
    paid_after = {(op.task_id, op.seq) for ops in after.values() for op in ops if _paid(op)}
    if not models_before <= paid_after:
        found.append("a model call paid before the crash is missing after the resume")
    return found


def _print_ledger(report: Report, ledger: Ledger, task_id: str) -> None:
    invocations = _saves(ledger.invocations(tree=task_id))
    table = Table(title="The ledger: save_module, by idempotency key")
    for header in ("module", "idempotency key", "invoked", "saved"):
        table.add_column(header, no_wrap=True)
    for effect in _saves(ledger.effects(tree=task_id)):
        runs = sum(1 for i in invocations if i.idempotency_key == effect.idempotency_key)
        table.add_row(str(effect.detail["module"]), effect.idempotency_key, str(runs), "1")
    report.console.print(table)
    report.flush()
