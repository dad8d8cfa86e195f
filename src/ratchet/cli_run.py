"""`ratchet resume` and `ratchet worker`: the commands that run tasks in this process.

Both stop cleanly on a signal: the run in hand is cancelled, its lease is
released (so another worker, or a later ``ratchet resume``, takes the task
at once), and what the journal holds stays as it is. A tool call that was in
flight is settled on the next run like any other (DESIGN 3.4).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from typing import Annotated

import typer

from . import cli_render as render
from .cli_common import (
    StoreOption,
    TaskArgument,
    in_doubt_ops,
    load_outcome,
    open_for_task,
    open_store_for,
    run_async,
)
from .engine.runner import DEFAULT_LEASE_TTL, WorkerIdentity
from .engine.worker import Worker
from .engine.workflow import load_module
from .errors import CannotResume, InputError, LeaseLost, RatchetError
from .model import Task, TaskStatus
from .runtime import Runtime
from .store import DEFAULT_STORE_URL, StateStore, redact_url

__all__ = ["EXIT_CODES", "exit_code", "resume_command", "worker_command"]

log = logging.getLogger("ratchet.worker")

EXIT_FAILED = 1
EXIT_WAITS_ON_PERSON = 3
EXIT_WAITS_ON_TIMER = 4
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_CODES = {
    0: "the task completed",
    EXIT_FAILED: "the task failed or was cancelled",
    2: "bad input: unknown task, already ended, held by a live worker, bad option",
    EXIT_WAITS_ON_PERSON: "the task waits on a person (approval, input, or an in-doubt call)",
    EXIT_WAITS_ON_TIMER: "the task waits on a timer (a backoff or a durable sleep)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C); the task stays resumable",
    EXIT_TERMINATED: "terminated (SIGTERM); the task stays resumable",
}

EVENT_POLL_SECONDS = 0.2

LeaseTtlOption = Annotated[
    float,
    typer.Option(
        "--lease-ttl",
        min=1.0,
        metavar="SECONDS",
        help="How long a claim on a task lasts without a heartbeat (renewed every third of it).",
    ),
]


def exit_code(task: Task) -> int:
    """The exit code that tells a script how a run left `task` (see `EXIT_CODES`)."""
    if task.status is TaskStatus.COMPLETED:
        return 0
    if task.status.is_terminal:
        return EXIT_FAILED
    if task.waiting_on is not None and task.waiting_on.needs_person:
        return EXIT_WAITS_ON_PERSON
    return EXIT_WAITS_ON_TIMER


def make_cwd_importable() -> None:
    """Let tasks name workflows in modules of the current directory, as ``python -m`` would."""
    here = os.getcwd()
    if "" not in sys.path and here not in sys.path:
        sys.path.insert(0, here)


# --------------------------------------------------------------------------- resume


def resume_command(
    task_id: TaskArgument,
    store: StoreOption = DEFAULT_STORE_URL,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Resume even from a checkpoint older than its workflow trusts."
        ),
    ] = False,
    lease_ttl: LeaseTtlOption = DEFAULT_LEASE_TTL,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="End with one JSON line: the task's id, status and outcome."),
    ] = False,
) -> None:
    """Run a task here, from where its journal stopped, until it ends or waits.

    Exit code: 0 completed, 1 failed or cancelled, 3 waits on a person,
    4 waits on a timer, 2 bad input (e.g. another live worker holds the task),
    130 Ctrl-C, 143 SIGTERM (the task stays resumable).
    """
    make_cwd_importable()
    progress = None if as_json else render.print_event
    try:
        outcome = run_async(
            _resume(store, task_id, force=force, lease_ttl=lease_ttl, progress=progress)
        )
    except KeyboardInterrupt:
        say_stopped("interrupted", task_id, store)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except asyncio.CancelledError:  # SIGTERM (see _resume)
        say_stopped("terminated", task_id, store)
        raise typer.Exit(EXIT_TERMINATED) from None
    if as_json:
        render.print_outcome_json(outcome)
    else:
        render.print_outcome(outcome, store_url=store)
    raise typer.Exit(exit_code(outcome.task))


def say_stopped(how: str, task_id: str, store_url: str) -> None:
    """Tell, on stderr, that the task stopped resumable, and how to continue it."""
    again = render.command("resume", task_id, store_url=store_url)
    print(
        f"{how}: task {task_id} stopped where it was and its lease is released; "
        f"continue it with `{again}` (or a running `ratchet worker` picks it up)",
        file=sys.stderr,
    )


async def _resume(
    url: str,
    task_id: str,
    *,
    force: bool,
    lease_ttl: float,
    progress: render.EventPrinter | None,
) -> render.Outcome:
    # SIGTERM stops the run as Ctrl-C does (asyncio.run sees to SIGINT): cancelled, lease released.
    this_run = asyncio.current_task()
    assert this_run is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, this_run.cancel)
    async with open_for_task(url, task_id) as store:
        await _refuse_in_doubt(store, task_id, url)
        tail = _EventTail(store, task_id, progress)
        await tail.skip_past_events()
        following = asyncio.create_task(tail.follow()) if progress else None
        try:
            task = await Runtime(store, lease_ttl=lease_ttl).resume(task_id, force=force)
        except LeaseLost as lost:
            follow = render.command("events", task_id, "--follow", store_url=url)
            raise CannotResume(
                f"task {task_id} was taken over by another worker while it ran here ({lost.message}); "
                f"watch it with `{follow}`"
            ) from None
        finally:
            if following is not None:
                following.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await following
        if progress:
            await tail.print_new()
        return await load_outcome(store, task)


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

    def __init__(
        self, store: StateStore, task_id: str, printer: render.EventPrinter | None
    ) -> None:
        self.store, self.task_id, self.printer = store, task_id, printer
        self.last_seq = 0

    async def skip_past_events(self) -> None:
        last = await self.store.last_events(self.task_id, 1)
        self.last_seq = last[-1].seq if last else 0

    async def print_new(self) -> None:
        events = await self.store.list_events(self.task_id, after_seq=self.last_seq)
        for event in events:
            if self.printer is not None:
                self.printer(event)
        if events:
            self.last_seq = events[-1].seq
            render.flush()

    async def follow(self) -> None:
        while True:
            await self.print_new()
            await asyncio.sleep(EVENT_POLL_SECONDS)


# --------------------------------------------------------------------------- worker


def worker_command(
    store: StoreOption = DEFAULT_STORE_URL,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, metavar="N", help="Tasks run at once.")
    ] = 4,
    name: Annotated[
        str | None,
        typer.Option("--name", metavar="NAME", help="Who holds the leases (default: HOST:PID)."),
    ] = None,
    lease_ttl: LeaseTtlOption = DEFAULT_LEASE_TTL,
    poll: Annotated[
        float,
        typer.Option("--poll", min=0.01, metavar="SECONDS", help="How often to look for due work."),
    ] = 0.5,
    workflows: Annotated[
        list[str] | None,
        typer.Option(
            "--workflows",
            metavar="MODULE_OR_FILE",
            help="Import this module (dotted name or .py file) first; repeat for more.",
        ),
    ] = None,
    until_idle: Annotated[
        bool,
        typer.Option("--until-idle", help="Stop when no work is left instead of waiting for more."),
    ] = False,
    grace: Annotated[
        float,
        typer.Option(
            "--grace",
            min=0.0,
            metavar="SECONDS",
            help="On SIGTERM or Ctrl-C, how long running calls may take to finish before they are cancelled.",
        ),
    ] = 30.0,
) -> None:
    """Run tasks from the store until SIGTERM or Ctrl-C (or, with --until-idle, until none is left).

    On a signal the worker stops taking work; each running task finishes the
    call it is in (for up to --grace seconds) and stops before its next one,
    and its lease is released, so another worker resumes it at once. A
    second signal stops at once: calls in flight are cancelled, and settled
    when the task resumes. The exit code is 0 either way.
    """
    make_cwd_importable()
    for source in workflows or ():
        _import_workflows(source)
    _log_to_stderr()
    identity = WorkerIdentity(name=name) if name else WorkerIdentity()
    run_async(
        _work(
            store,
            identity,
            concurrency=concurrency,
            lease_ttl=lease_ttl,
            poll=poll,
            until_idle=until_idle,
            grace=grace,
        )
    )


def _import_workflows(source: str) -> None:
    try:
        load_module(source)
    except RatchetError:
        raise
    except Exception as error:  # noqa: BLE001 -- the user's module failed while it was imported
        raise InputError(
            f"cannot import workflows from {source}: {type(error).__name__}: {error}"
        ) from None


def _log_to_stderr() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S")
    )
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    logging.getLogger("ratchet").setLevel(logging.INFO)


async def _work(
    url: str,
    identity: WorkerIdentity,
    *,
    concurrency: int,
    lease_ttl: float,
    poll: float,
    until_idle: bool,
    grace: float,
) -> None:
    async with open_store_for(url, create=True) as store:
        worker = Worker(
            store,
            identity=identity,
            concurrency=concurrency,
            lease_ttl=lease_ttl,
            poll_interval=poll,
            grace=grace,
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        working = asyncio.current_task()
        assert working is not None
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, _stop_on, signal.Signals(signum), stop, working)
        ends = "stops when no work is left" if until_idle else "stop it with Ctrl-C or SIGTERM"
        wakes = "woken when work is queued" if store.change_poll is None else f"polling every {poll:g} s"
        render.print_line(
            f"worker {identity.name} on {redact_url(url)}: concurrency {concurrency}, lease {lease_ttl:g} s, "
            f"{wakes}; {ends}"
        )
        render.flush()
        try:
            await worker.run(stop, until_idle=until_idle)
        except asyncio.CancelledError:
            if not stop.is_set():
                raise
            working.uncancel()
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)
        log.info("worker %s stopped", identity.name)


def _stop_on(signum: signal.Signals, stop: asyncio.Event, working: asyncio.Task[None]) -> None:
    if not stop.is_set():
        log.info(
            "%s: stopping; running tasks finish their current call, then their leases are released "
            "(send it again to stop at once)",
            signum.name,
        )
        stop.set()
        return
    log.info("%s again: stopping at once; calls in flight are cancelled", signum.name)
    working.cancel()
