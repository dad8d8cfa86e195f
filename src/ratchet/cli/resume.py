"""`ratchet resume`: run one task here, from where its journal stopped, until it ends or waits.

It stops cleanly on a signal: the run in hand is cancelled, its lease is
released (so a worker, or a later ``ratchet resume``, takes the task at
once), and what the journal holds stays as it is. A tool call in flight
finishes first and its outcome is journaled (`ratchet.engine.calls.in_flight`);
one a second signal cut off is settled on the next run like any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from dataclasses import dataclass
from typing import Annotated

import typer

from ..engine.run.code_wait import CODE_EVENT_KINDS
from ..engine.run.runner import DEFAULT_LEASE_TTL
from ..errors import CannotResume, InputError, LeaseLost, StoreError
from ..pricing import price_unpriced_as
from ..records import Task, WaitReason
from ..runtime import Runtime
from ..store import DEFAULT_STORE_URL, StateStore
from ..trust.code import CodeTrust
from . import json_output, render
from .exits import (
    EXIT_INTERRUPTED,
    EXIT_STORE_FAILED,
    EXIT_TERMINATED,
    exit_code,
    say_stopped,
    say_store_failed,
)
from .logs import LogFormat, LogLevel, observe_process
from .options import (
    AllowCodeOption,
    CompatibleVersionsOption,
    ForceOpenOption,
    LeaseTtlOption,
    LogFormatOption,
    LogLevelOption,
    PricedAsOption,
    StoreOption,
    TaskArgument,
)
from .store_access import open_for_task, run_async
from .views import Outcome, in_doubt_ops, load_outcome

__all__ = ["make_cwd_importable", "refuse_waiting_for_code", "resume_command"]

EVENT_POLL_SECONDS = 0.2


def make_cwd_importable() -> None:
    """Let tasks name workflows in modules of the current directory, as ``python -m`` would."""
    here = os.getcwd()
    if "" not in sys.path and here not in sys.path:
        sys.path.insert(0, here)


def resume_command(
    task_id: TaskArgument,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    force: Annotated[
        bool,
        typer.Option("--force", help="Resume even from a checkpoint older than its workflow trusts."),
    ] = False,
    lease_ttl: LeaseTtlOption = DEFAULT_LEASE_TTL,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="End with one JSON line: the task's id, status and outcome."),
    ] = False,
    allow_code: AllowCodeOption = None,
    seal: Annotated[
        bool,
        typer.Option(
            "--seal",
            help="Seal the task's code references with this process's signing key first: for a task "
            "made before seals or with another key, once you have checked them (`ratchet show TASK`).",
        ),
    ] = False,
    compatible_versions: CompatibleVersionsOption = False,
    priced_as: PricedAsOption = None,
    log_level: LogLevelOption = LogLevel.WARNING,
    log_format: LogFormatOption = LogFormat.TEXT,
) -> None:
    """Run a task here, from where its journal stopped, until it ends or waits.

    The task's code is loaded only from the project root (this directory),
    installed packages and what --allow-code admits. If it is refused or
    missing, the task waits for it (waiting(code)) and this says what is
    wrong in one line, exit code 2; resume it again once the code is there.

    Exit code: 0 completed, 1 failed or cancelled, 3 waits on a person,
    4 waits on a timer, 2 bad input (e.g. another live worker holds the task,
    or its code is refused or missing), 5 the store failed while the task ran
    (a full disk, say), 130 Ctrl-C, 143 SIGTERM (for 5, 130 and 143 the task
    stays resumable).
    """
    allowed = allow_code or []
    CodeTrust.here(allowed)  # a bad allowance is bad input now, before the task is touched
    price_unpriced_as(priced_as)  # a model no table prices is bad input now
    make_cwd_importable()
    observe_process(log_level, log_format)
    progress = None if as_json else render.print_event
    running = _Running()
    try:
        outcome = run_async(
            _resume(
                store,
                task_id,
                force=force,
                lease_ttl=lease_ttl,
                allow_code=allowed,
                progress=progress,
                running=running,
                seal=seal,
                compatible_versions=compatible_versions or None,
            )
        )
    except KeyboardInterrupt:
        say_stopped("interrupted", task_id, store)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except asyncio.CancelledError:  # SIGTERM (see _resume)
        say_stopped("terminated", task_id, store)
        raise typer.Exit(EXIT_TERMINATED) from None
    except StoreError as failure:
        if not running.started:  # opening or looking failed: a store error like any other command's
            raise
        say_store_failed(task_id, failure, store)
        raise typer.Exit(EXIT_STORE_FAILED) from None
    if as_json:
        json_output.print_json_line(json_output.outcome_json(outcome))
    else:
        render.print_outcome(outcome, store_url=store)
    raise typer.Exit(exit_code(outcome.task))


@dataclass
class _Running:
    """Whether `_resume` got as far as running the task (a store error then is exit code 5)."""

    started: bool = False


async def _resume(
    url: str,
    task_id: str,
    *,
    force: bool,
    lease_ttl: float,
    allow_code: list[str],
    progress: render.EventPrinter | None,
    running: _Running,
    seal: bool = False,
    compatible_versions: bool | None = None,
) -> Outcome:
    # SIGTERM stops the run as Ctrl-C does (asyncio.run sees to SIGINT): cancelled, lease released.
    this_run = asyncio.current_task()
    assert this_run is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, this_run.cancel)
    async with open_for_task(url, task_id) as store:
        await _refuse_in_doubt(store, task_id, url)
        tail = _EventTail(store, task_id, progress)
        await tail.skip_past_events()
        following = asyncio.create_task(tail.follow()) if progress else None
        runtime = Runtime(store, lease_ttl=lease_ttl, allow_code=allow_code)
        if seal:
            await runtime.seal(task_id)
            where = runtime.signing_key.where
            render.print_note(f"sealed the code references of task {task_id} with the key of {where}")
        running.started = True
        try:
            task = await runtime.resume(task_id, force=force, compatible_versions=compatible_versions)
        except LeaseLost as lost:
            follow = render.command("events", task_id, "--follow", store_url=url)
            raise CannotResume(
                f"task {task_id} was taken over by another worker while it ran here ({lost.message}); "
                f"watch it with `{follow}`"
            ) from None
        finally:
            if following is not None:
                await tail.stop(following)
        await refuse_waiting_for_code(store, task, url)
        if progress:
            await tail.print_new()
        return await load_outcome(store, task)


async def refuse_waiting_for_code(store: StateStore, task: Task, url: str) -> None:
    """A run that left its task waiting for its code ends in one line saying what is wrong (exit 2).

    Raises:
        InputError: `task` waits for its code.
    """
    if task.waiting_on is not WaitReason.CODE:
        return
    said = [e for e in await store.last_events(task.id, 5) if e.kind in CODE_EVENT_KINDS][-1:]
    problem = said[0].message if said else "its code cannot be loaded here"
    error = said[0].data.get("error") if said else None
    again = render.command("resume", task.id, store_url=url)
    if error == "CodeVersionDiffers":  # its event says what to do: run it where its version is
        raise InputError(f"task {task.id} waits for its code: {problem}")
    if error == "WorkspaceRefused":
        cancel = render.command("cancel", task.id, store_url=url)
        what_next = f"it runs only where that directory is under the workspace root (or `{cancel}`)"
    elif error == "CodeUnsealed":
        show = render.command("show", task.id, store_url=url)
        what_next = f"check them (`{show}`), then `{again} --seal`"
    elif error == "CodeRefused":
        what_next = f"then `{again} --allow-code ...`"
    else:
        what_next = f"put it in place, then `{again}`"
    raise InputError(f"task {task.id} waits for its code: {problem}; {what_next}")


async def _refuse_in_doubt(store: StateStore, task_id: str, url: str) -> None:
    """A task already in doubt can't be resumed; say exactly which command settles it."""
    task = await store.get_task(task_id)
    ops = await in_doubt_ops(store, task)
    if not ops:
        return
    op = ops[0]
    settle = render.command("resolve", task_id, "--op", str(op.seq), store_url=url)
    show = render.command("show", task_id, store_url=url)
    raise CannotResume(
        f"task {task_id} is {task.status_text}: operation {op.seq} ({op.name}) may or may not "
        f"have happened; settle it first with `{settle} --retry|--skip|--result JSON` "
        f"(`{show}` shows the call)"
    )


class _EventTail:
    """Prints a task's new events while it runs here (the progress of a long run)."""

    def __init__(self, store: StateStore, task_id: str, printer: render.EventPrinter | None) -> None:
        self.store, self.task_id, self.printer = store, task_id, printer
        self.last_seq = 0
        self._stopping = asyncio.Event()

    async def skip_past_events(self) -> None:
        last = await self.store.last_events(self.task_id, 1)
        self.last_seq = last[-1].seq if last else 0

    async def print_new(self) -> None:
        events = await self.store.list_events(self.task_id, after_seq=self.last_seq)
        for event in events:
            # Code that cannot be loaded is said once, as the command's error line.
            if self.printer is not None and event.kind not in CODE_EVENT_KINDS:
                self.printer(event)
        if events:
            self.last_seq = events[-1].seq
            render.flush()

    async def follow(self) -> None:
        while not self._stopping.is_set():
            await self.print_new()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), EVENT_POLL_SECONDS)

    async def stop(self, following: asyncio.Task[None]) -> None:
        """End `follow` (running as `following`) and wait for it.

        Asked, not cancelled: on Python 3.11 a cancellation that arrives as the
        store's connection pool hands over a connection is lost (`wait_for`
        returns the connection), so a cancelled follower could poll forever and
        the command never end (a completed task, resumed on PostgreSQL, did).
        """
        self._stopping.set()
        await following
