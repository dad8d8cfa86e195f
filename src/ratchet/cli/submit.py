"""`ratchet submit`: queue agent tasks for workers, now, later or on a cron.

`submit` builds the agent exactly as `ratchet run` does (the same options,
checked the same way) but runs nothing: the task is queued for any
`ratchet worker` on the store, and its id is printed. ``--at`` queues it for
a later time; ``--every CRON`` makes a schedule instead, which workers turn
into one task per due time (see `ratchet.schedules`; `ratchet schedules`
lists and controls them).
"""

from __future__ import annotations

import datetime as dt
import sys
from typing import Annotated

import typer

from ..agent import Agent
from ..engine.task_spec import check_queue
from ..errors import InputError, TaskNotFound
from ..limits import PRIORITY_DEFAULT, PRIORITY_MAX, PRIORITY_MIN
from ..policy import is_duration, parse_duration
from ..records import Task, utcnow
from ..runtime import Runtime
from ..schedules import OVERLAP_POLICIES, Overlap, check_cron, check_overlap, check_tz
from ..store import DEFAULT_STORE_URL
from ..views.task_filter import parse_iso_time
from . import json_output, render
from .agent_options import AgentOptions, with_agent_options
from .options import ForceOpenOption, StoreOption
from .store_access import open_store_for, run_async

__all__ = ["check_task_id", "parse_start_time", "submit_command"]


def check_task_id(task_id: str, every: str | None) -> None:
    """A task id given with --task-id: text a person can type back, and not for a schedule.

    Raises:
        InputError: it is empty or holds control characters, or --every is given too.
    """
    if every is not None:
        raise InputError("--task-id names one task; a schedule (--every) makes one task per due time")
    if not task_id.strip() or any(not c.isprintable() for c in task_id):
        raise InputError(f"--task-id {task_id!r}: give printable text, e.g. order-42")


def parse_start_time(text: str, *, now: dt.datetime | None = None) -> dt.datetime:
    """A time given on the command line: ISO 8601 (UTC unless it has an offset) or a delay (90s, 10m, 2h).

    Raises:
        InputError: neither.
    """
    now = now or utcnow()
    when = parse_iso_time("--at", text)
    if when is not None:
        return when
    if not is_duration(text):
        raise InputError(
            f"--at: {text!r} is neither a time (2026-12-01T09:00:00Z, UTC unless an offset "
            "is given) nor a delay (90s, 10m, 2h)"
        )
    try:
        return now + dt.timedelta(seconds=parse_duration(text))
    except InputError as error:
        raise InputError(f"--at: {error.message}") from None


@with_agent_options
def submit_command(
    options: AgentOptions,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            metavar="TIME",
            help="Start no sooner than TIME: 2026-12-01T09:00:00Z (UTC unless an offset is given) "
            "or a delay (10m).",
        ),
    ] = None,
    priority: Annotated[
        int,
        typer.Option(
            "--priority",
            min=PRIORITY_MIN,
            max=PRIORITY_MAX,
            metavar="N",
            help=f"{PRIORITY_MIN} (most urgent) to {PRIORITY_MAX}: workers take the due task with the "
            "lowest number first; its later wake-ups keep it.",
        ),
    ] = PRIORITY_DEFAULT,
    every: Annotated[
        str | None,
        typer.Option(
            "--every",
            metavar="CRON",
            help="Make a task at every time the cron expression matches (in --tz, UTC by default), "
            "e.g. '0 9 * * 1-5', or at a macro's: @hourly, @daily, @weekly, @monthly, @yearly.",
        ),
    ] = None,
    tz: Annotated[
        str | None,
        typer.Option(
            "--tz",
            metavar="ZONE",
            help="With --every: the IANA time zone the cron expression is read in (Europe/Paris); UTC "
            "by default. Daylight-saving changes are handled as croniter does.",
        ),
    ] = None,
    overlap: Annotated[
        str | None,
        typer.Option(
            "--overlap",
            metavar="POLICY",
            help=f"With --every: {' or '.join(OVERLAP_POLICIES)}. skip (the default) makes no task at a "
            "due time while the schedule's last task is still queued or running, and says so in that "
            "task's events; allow always makes one.",
        ),
    ] = None,
    queue: Annotated[
        str | None,
        typer.Option(
            "--queue",
            metavar="NAME",
            help="Run it in queue NAME: at most the queue's concurrency (`ratchet limit set queue:NAME "
            "--concurrency N`) of its tasks run at once, across every worker.",
        ),
    ] = None,
    partition: Annotated[
        str | None,
        typer.Option(
            "--partition",
            metavar="KEY",
            help="With --queue: the partition (a tenant, a user) it runs in; the queue's concurrency "
            "then holds per partition, so one tenant cannot take every place.",
        ),
    ] = None,
    task_id: Annotated[
        str | None,
        typer.Option(
            "--task-id",
            metavar="ID",
            help="The task's id. Submitting an id that names a task already queues nothing and prints "
            "that task's id, so a submit can be run again safely.",
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print one JSON object: the task (or schedule) id and when it starts."),
    ] = False,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
) -> None:
    """Queue INSTRUCTION for the workers (`ratchet worker`) and print the task's id.

    With --every, print the schedule's id instead: each due time makes a
    task of its own, once, whichever worker fires it. Stop a schedule with
    `ratchet schedules --delete ID`.
    """
    instruction = options.read_instruction()
    name = options.task_name(instruction)
    labels = options.labels()
    if at is not None and every is not None:
        raise InputError("give --at or --every, not both")
    if task_id is not None:
        check_task_id(task_id, every)
    if every is None and (tz is not None or overlap is not None):
        raise InputError(
            f"{'--tz' if tz is not None else '--overlap'} is for a schedule: give --every CRON too"
        )
    if store.partition(":")[0].strip().lower() == "memory":
        raise InputError(
            "a memory:// store would lose the task at once; use sqlite:///PATH or postgresql://..."
        )
    if every is not None and queue is not None:
        raise InputError("--queue is for one task: a schedule (--every) makes its tasks outside any queue")
    check_queue(queue, partition)
    start = None if at is None else parse_start_time(at)
    if every is not None:
        check_cron(every, check_tz(tz or "UTC"))
        policy = check_overlap(overlap or "skip")
    agent = options.agent(trust=None)  # the workers' trust decides
    seconds = options.deadline_seconds()
    if every is not None:
        schedule_id, next_due = run_async(
            _schedule(
                store,
                agent,
                instruction,
                seconds,
                every,
                name=name,
                labels=labels,
                limit=options.max_instruction_bytes,
                priority=priority,
                tz=tz or "UTC",
                overlap=policy,
            )
        )
        if as_json:
            json_output.print_json_line(json_output.scheduled_json(schedule_id, next_due))
            return
        print(schedule_id)
        print(
            f"scheduled '{every}' ({tz or 'UTC'}, overlap {policy}); first due {next_due.isoformat()}; "
            "workers make one task per due time "
            f"(`{render.command('schedules', store_url=store)}` lists schedules)",
            file=sys.stderr,
        )
        return
    task_id, existing = run_async(
        _queue(
            store,
            agent,
            instruction,
            seconds,
            start,
            name=name,
            labels=labels,
            limit=options.max_instruction_bytes,
            priority=priority,
            task_id=task_id,
            queue=queue,
            partition=partition,
        )
    )
    starts_at = start or utcnow()
    if as_json:
        json_output.print_json_line(json_output.queued_json(task_id, starts_at))
        return
    print(task_id)
    if existing is not None:
        print(
            f"task {task_id} exists already ({existing.status_text}): nothing new is queued; "
            f"`{render.command('show', task_id, store_url=store)}` shows it",
            file=sys.stderr,
        )
        return
    print(
        f"queued to start {'now' if start is None else 'at ' + starts_at.isoformat()}: "
        f"a `{render.command('worker', store_url=store)}` runs it; "
        f"`{render.command('show', task_id, store_url=store)}` shows it",
        file=sys.stderr,
    )


async def _queue(
    url: str,
    agent: Agent,
    instruction: str,
    deadline: float | None,
    start: dt.datetime | None,
    *,
    name: str,
    labels: dict[str, str],
    limit: int,
    priority: int,
    task_id: str | None,
    queue: str | None = None,
    partition: str | None = None,
) -> tuple[str, Task | None]:
    """Queue the task; return its id, and the task that had that id already, if one did."""
    async with open_store_for(url, create=True) as store:
        runtime = Runtime(store, max_instruction_bytes=limit)
        try:
            existing = None if task_id is None else await store.get_task(task_id)
        except TaskNotFound:
            existing = None
        submitted = await runtime.submit(
            agent,
            name=name,
            labels=labels,
            instruction=instruction,
            deadline=deadline,
            at=start,
            priority=priority,
            task_id=task_id,
            queue=True if queue is None else queue,
            partition=partition,
        )
        return submitted, existing


async def _schedule(
    url: str,
    agent: Agent,
    instruction: str,
    deadline: float | None,
    every: str,
    *,
    name: str,
    labels: dict[str, str],
    limit: int,
    priority: int,
    tz: str,
    overlap: Overlap,
) -> tuple[str, dt.datetime]:
    async with open_store_for(url, create=True) as store:
        runtime = Runtime(store, max_instruction_bytes=limit)
        trigger = await runtime.schedule(
            agent,
            name=name,
            labels=labels,
            instruction=instruction,
            deadline=deadline,
            every=every,
            priority=priority,
            tz=tz,
            overlap=overlap,
        )
        return str(trigger.payload["id"]), trigger.fire_at
