"""`ratchet run` and `ratchet cancel`: run the planning agent on an instruction, or stop a task.

`run` builds an `Agent` from its options and checks every one of them before
anything is stored (bad input: one line, exit 2). Then it creates the task and
runs it in this process, showing its progress as the store holds it: the plan
and each step's status, the tool calls of the journal (every call, also those
no event reports), the model's tokens against the budget, and the model's text
as it is written (the task's stream; not with ``--json``, whose one line is
all it prints). On a terminal that
is a Rich Live panel; otherwise plain lines, one per event or tool call.
``--detach`` only queues the task, for ``ratchet resume`` or a worker.

Ctrl-C and SIGTERM stop a run as they stop ``ratchet resume``: a tool call
in progress finishes and is journaled first (a second signal stops at once),
the lease is released, and the exact command that continues the task is
printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import sys
from dataclasses import dataclass
from typing import Annotated

import typer

from ..agent import Agent
from ..engine.calls.in_flight import cut_short
from ..errors import CannotResume, InputError, LeaseLost, StoreError
from ..limits import check_text
from ..pricing import price_unpriced_as
from ..records import Lease, Step, StepStatus, Task, TaskStatus
from ..runtime import Runtime
from ..store import DEFAULT_STORE_URL
from ..trust.code import CodeTrust
from . import json_output, render
from .agent_options import AgentOptions, with_agent_options
from .batch import Verb, YesOption, batch_filter, run_batch
from .exits import (
    EXIT_INTERRUPTED,
    EXIT_STORE_FAILED,
    EXIT_TERMINATED,
    exit_code,
    say_stopped,
    say_store_failed,
)
from .filter_options import NO_FILTERS, FilterOptions, with_filter_options
from .logs import LogFormat, LogLevel, observe_process
from .options import (
    AllowCodeOption,
    ForceOpenOption,
    LogFormatOption,
    LogLevelOption,
    OptionalTaskArgument,
    PricedAsOption,
    StoreOption,
)
from .progress import RunProgress, Screen, StreamTail, Watcher, screen_for, usage_text
from .resume import refuse_waiting_for_code
from .store_access import open_for_task, open_store_for, run_async
from .views import Outcome, load_outcome

__all__ = ["cancel_command", "run_command"]

POLL_SECONDS = 0.2


# --------------------------------------------------------------------------- run


@dataclass
class _Started:
    """What `run` made before it was stopped: the id of its task, once created."""

    task_id: str | None = None


@with_agent_options
def run_command(
    options: AgentOptions,
    detach: Annotated[
        bool, typer.Option("--detach", "-d", help="Only queue the task and print its id.")
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="No progress; end with one JSON line: status, result, steps, usage."),
    ] = False,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    allow_code: AllowCodeOption = None,
    priced_as: PricedAsOption = None,
    log_level: LogLevelOption = LogLevel.WARNING,
    log_format: LogFormatOption = LogFormat.TEXT,
) -> None:
    """Plan INSTRUCTION into steps and carry them out with the agent's model and tools.

    Exit code: 0 completed, 1 failed or cancelled, 3 waits on a person,
    4 waits on a timer, 2 bad input, 5 the store failed while the task ran
    (a full disk, say), 130 Ctrl-C and 143 SIGTERM (for 5, 130 and 143 the
    task stays resumable; the command that continues it is printed).
    """
    instruction = options.read_instruction()
    name = options.task_name(instruction)
    labels = options.labels()
    if detach and store.partition(":")[0].strip().lower() == "memory":
        raise InputError("--detach with a memory:// store would lose the task at once; use sqlite:///PATH")
    CodeTrust.here(allow_code or ())  # a bad allowance is bad input now, before anything is stored
    price_unpriced_as(priced_as)  # a model no table prices is bad input now
    agent = options.agent(trust=CodeTrust.here(allow_code or ()))
    observe_process(log_level, log_format)
    seconds = options.deadline_seconds()
    started = _Started()
    screen = screen_for(quiet=as_json or detach)
    try:
        progress, outcome = run_async(
            _run(
                store,
                agent,
                instruction,
                seconds,
                name=name,
                labels=labels,
                limit=options.max_instruction_bytes,
                detach=detach,
                screen=screen,
                started=started,
                allow_code=allow_code or [],
            )
        )
    except KeyboardInterrupt:
        _say_stopped("interrupted", started.task_id, store)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except asyncio.CancelledError:  # SIGTERM (see _run)
        _say_stopped("terminated", started.task_id, store)
        raise typer.Exit(EXIT_TERMINATED) from None
    except StoreError as failure:
        if started.task_id is None:  # nothing was stored: a store error like any other command's
            raise
        say_store_failed(started.task_id, failure, store)
        raise typer.Exit(EXIT_STORE_FAILED) from None
    if as_json:
        json_output.print_json_line(json_output.run_json(progress))
    elif detach:
        print(progress.task.id)
        run_it = render.command("resume", progress.task.id, store_url=store)
        print(f"queued: run it with `{run_it}`, or let a `ratchet worker` pick it up", file=sys.stderr)
    else:
        assert outcome is not None
        render.print_outcome(outcome, store_url=store)
        render.print_line(f"used: {usage_text(progress)}")
    raise typer.Exit(0 if detach else exit_code(progress.task))


def _say_stopped(how: str, task_id: str | None, store_url: str) -> None:
    if task_id is None:
        print(f"{how}: stopped before the task was created; nothing was stored", file=sys.stderr)
        return
    say_stopped(how, task_id, store_url)


async def _run(
    url: str,
    agent: Agent,
    instruction: str,
    deadline: float | None,
    *,
    name: str,
    labels: dict[str, str],
    limit: int,
    detach: bool,
    screen: Screen,
    started: _Started,
    allow_code: list[str],
) -> tuple[RunProgress, Outcome | None]:
    # SIGTERM stops the run as Ctrl-C does (asyncio.run sees to SIGINT): cancelled, lease released.
    this_run = asyncio.current_task()
    assert this_run is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, this_run.cancel)
    async with open_store_for(url, create=True) as store:
        runtime = Runtime(store, allow_code=allow_code, max_instruction_bytes=limit)
        task_id = await runtime.submit(
            agent, name=name, labels=labels, instruction=instruction, deadline=deadline, queue=detach
        )
        started.task_id = task_id
        watcher = Watcher(store, task_id)
        if detach:
            return (await watcher.poll()).progress, None
        screen.created(task_id, url)
        tail = StreamTail(store, task_id, screen) if screen.wants_stream else None
        gc.freeze()  # start-up's objects live as long as the run: out of the collector's full passes
        with screen:
            task = await _run_watched(runtime, task_id, watcher, screen, tail)
            if tail is not None:
                await tail.catch_up()
            seen = await watcher.poll()
            screen.show(seen)
        await refuse_waiting_for_code(store, task, url)
        return seen.progress, await load_outcome(store, task)


async def _run_watched(
    runtime: Runtime, task_id: str, watcher: Watcher, screen: Screen, tail: StreamTail | None
) -> Task:
    """Run the task here while the screen follows it (and its stream, given `tail`); stop at once
    if it is cancelled elsewhere."""
    running = asyncio.create_task(_run_here(runtime, task_id))
    following = asyncio.create_task(_follow(watcher, screen, running))
    streaming = asyncio.create_task(tail.follow()) if tail is not None else None
    try:
        return await running
    except asyncio.CancelledError:
        this_run = asyncio.current_task()
        if this_run is not None and this_run.cancelling():  # Ctrl-C or SIGTERM
            raise
        return await runtime.store.get_task(task_id)  # `ratchet cancel` ended it
    finally:
        for watching in (following, streaming):
            if watching is not None:
                watching.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watching


async def _run_here(runtime: Runtime, task_id: str) -> Task:
    try:
        return await runtime.resume(task_id)
    except LeaseLost as lost:
        task = await runtime.store.get_task(task_id)
        if task.status.is_terminal:  # `ratchet cancel` took it over
            return task
        raise CannotResume(
            f"task {task_id} was taken over by another worker while it ran here ({lost.message})"
        ) from None
    except CannotResume:
        if await runtime.store.get_lease(task_id) is None:
            raise
        return await runtime.wait(task_id)  # a worker claimed it first: follow it there


async def _follow(watcher: Watcher, screen: Screen, running: asyncio.Task[Task]) -> None:
    while True:
        try:
            seen = await watcher.poll()
        except StoreError:  # the file is busy a moment; the next round reads what this one missed
            pass
        else:
            screen.show(seen)
            if seen.progress.task.status is TaskStatus.CANCELLED:
                # Its worker would stop only at its next write or heartbeat; this one stops now, without
                # waiting for a tool in flight: the task is over, and nothing more of it can be journaled.
                cut_short(running)
                return
        await asyncio.sleep(POLL_SECONDS)


# --------------------------------------------------------------------------- cancel


@with_filter_options
def cancel_command(
    task_id: OptionalTaskArgument = None,
    filters: FilterOptions = NO_FILTERS,
    reason: Annotated[
        str, typer.Option("--reason", metavar="TEXT", help="Why; kept as the task's error.")
    ] = "cancelled by a person",
    yes: YesOption = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON: the task's record, or what a batch did.")
    ] = False,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
) -> None:
    """Cancel a task that has not ended, with its open steps and queued wake-ups.

    A worker running it stops at its next write. A task that already ended is
    bad input (exit 2). With the filters of `ratchet tasks` instead of TASK,
    every task they match: without --yes, only how many (and the first few);
    with it, each is cancelled as alone, those that ended skipped.
    """
    where = batch_filter(task_id, filters, verb="cancel")
    check_text(reason, "--reason")
    if where is not None:
        run_batch(
            Verb("cancel", "cancelled"),
            where,
            store=store,
            yes=yes,
            as_json=as_json,
            act=lambda runtime: runtime.cancel_tasks(where, reason=reason),
        )
        return
    assert task_id is not None
    done = run_async(_cancel(store, task_id, reason))
    if as_json:
        json_output.print_json(json_output.task_json(done.task))
        return
    render.print_line(f"task {task_id} cancelled (it was {done.before.status_text}): {done.task.error}")
    if done.steps_cancelled:
        names = ", ".join(step.name for step in done.steps_cancelled)
        render.print_line(f"steps cancelled: {len(done.steps_cancelled)} ({names})")
    if done.holder is not None:
        holder = done.holder
        render.print_line(
            f"worker {holder.owner} (pid {holder.pid} on {holder.host or '?'}) was running it; "
            "it stops at its next write"
        )


@dataclass(frozen=True)
class _Cancellation:
    """A task before and after `ratchet cancel`, and the live worker that held it, if any."""

    before: Task
    task: Task
    steps_cancelled: list[Step]
    holder: Lease | None


async def _cancel(url: str, task_id: str, reason: str) -> _Cancellation:
    async with open_for_task(url, task_id) as store:
        before = await store.get_task(task_id)
        open_steps = {s.index for s in await store.list_steps(task_id) if not s.status.is_terminal}
        lease = await store.get_lease(task_id)
        task = await Runtime(store).cancel(task_id, reason=reason)
        steps = await store.list_steps(task_id)
    return _Cancellation(
        before=before,
        task=task,
        steps_cancelled=[s for s in steps if s.index in open_steps and s.status is StepStatus.CANCELLED],
        holder=lease if lease is not None and lease.is_live() else None,
    )
