"""`ratchet submit` and `ratchet schedules`: queue agent tasks for workers, now, later or on a cron.

`submit` builds the agent exactly as `ratchet run` does (the same options,
checked the same way) but runs nothing: the task is queued for any
`ratchet worker` on the store, and its id is printed. ``--at`` queues it for
a later time; ``--every CRON`` makes a schedule instead, which workers turn
into one task per due time (see `ratchet.schedules`).
"""

from __future__ import annotations

import datetime as dt
import sys
from typing import Annotated

import typer

from ..agent import Agent
from ..errors import InputError
from ..limits import (
    MAX_INSTRUCTION_BYTES,
    MAX_TOOL_CALLS_PER_ANSWER,
    PRIORITY_DEFAULT,
    PRIORITY_MAX,
    PRIORITY_MIN,
)
from ..model import utcnow
from ..policy import is_duration, parse_duration
from ..runtime import Runtime
from ..schedules import Schedule, check_cron
from ..store import DEFAULT_STORE_URL, redact_url
from . import json_output, render
from .agent_spec import build_agent, checkpoint_policy, deadline_seconds, duration_seconds
from .instruction import read_instruction
from .mcp_servers import checked_mcp_servers
from .options import (
    AllowShellOption,
    CheckpointMaxAgeOption,
    CheckpointStrategyOption,
    DeadlineOption,
    ForceOpenOption,
    InstructionArgument,
    InstructionsOption,
    JsonOption,
    KeepCheckpointsOption,
    MaxCostOption,
    MaxInstructionBytesOption,
    MaxStepsOption,
    MaxTokensOption,
    MaxToolCallsOption,
    McpOption,
    McpRiskOption,
    ModelOption,
    SessionOption,
    StepTimeoutOption,
    StoreOption,
    ToolsOption,
)
from .store_access import open_store_for, run_async

__all__ = ["parse_start_time", "schedules_command", "submit_command"]


def parse_start_time(text: str, *, now: dt.datetime | None = None) -> dt.datetime:
    """A time given on the command line: ISO 8601 (UTC unless it has an offset) or a delay (90s, 10m, 2h).

    Raises:
        InputError: neither.
    """
    now = now or utcnow()
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        if not is_duration(text):
            raise InputError(
                f"--at: {text!r} is neither a time (2026-12-01T09:00:00Z, UTC unless an offset "
                "is given) nor a delay (90s, 10m, 2h)"
            ) from None
        try:
            return now + dt.timedelta(seconds=parse_duration(text))
        except InputError as error:
            raise InputError(f"--at: {error.message}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    try:
        return when.astimezone(dt.UTC)
    except OverflowError:  # an offset that moves it past year 9999 or before year 1
        raise InputError(f"--at: {text!r} is out of the range of dates; give a time in UTC") from None


def submit_command(
    instruction: InstructionArgument,
    model: ModelOption,
    tools: ToolsOption = None,
    instructions: InstructionsOption = "",
    deadline: DeadlineOption = None,
    max_steps: MaxStepsOption = None,
    max_tokens: MaxTokensOption = None,
    max_cost: MaxCostOption = None,
    max_tool_calls: MaxToolCallsOption = MAX_TOOL_CALLS_PER_ANSWER,
    allow_shell: AllowShellOption = False,
    checkpoint_strategy: CheckpointStrategyOption = None,
    keep_checkpoints: KeepCheckpointsOption = None,
    checkpoint_max_age: CheckpointMaxAgeOption = None,
    step_timeout: StepTimeoutOption = None,
    session: SessionOption = None,
    mcp: McpOption = None,
    mcp_risk: McpRiskOption = None,
    max_instruction_bytes: MaxInstructionBytesOption = MAX_INSTRUCTION_BYTES,
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
            help="Make a task at every time the cron expression matches (UTC), e.g. '0 9 * * 1-5'.",
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
    instruction = read_instruction(instruction, limit=max_instruction_bytes)
    if at is not None and every is not None:
        raise InputError("give --at or --every, not both")
    if store.partition(":")[0].strip().lower() == "memory":
        raise InputError(
            "a memory:// store would lose the task at once; use sqlite:///PATH or postgresql://..."
        )
    start = None if at is None else parse_start_time(at)
    if every is not None:
        check_cron(every)
    agent = build_agent(
        model=model,
        tool_files=tools or [],
        instructions=instructions,
        max_steps=max_steps,
        max_tokens=max_tokens,
        max_cost=max_cost,
        max_tool_calls=max_tool_calls,
        allow_shell=allow_shell,
        checkpoint=checkpoint_policy(checkpoint_strategy, keep_checkpoints, checkpoint_max_age),
        step_timeout=duration_seconds("--step-timeout", step_timeout),
        session=session,
        mcp=checked_mcp_servers(mcp or [], mcp_risk or [], trust=None),  # the workers' trust decides
    )
    seconds = deadline_seconds(deadline)
    if every is not None:
        schedule_id, next_due = run_async(
            _schedule(
                store, agent, instruction, seconds, every, limit=max_instruction_bytes, priority=priority
            )
        )
        if as_json:
            json_output.print_json_line(json_output.scheduled_json(schedule_id, next_due))
            return
        print(schedule_id)
        print(
            f"scheduled '{every}' (UTC); first due {next_due.isoformat()}; workers make one task "
            f"per due time (`{render.command('schedules', store_url=store)}` lists schedules)",
            file=sys.stderr,
        )
        return
    task_id = run_async(
        _queue(store, agent, instruction, seconds, start, limit=max_instruction_bytes, priority=priority)
    )
    starts_at = start or utcnow()
    if as_json:
        json_output.print_json_line(json_output.queued_json(task_id, starts_at))
        return
    print(task_id)
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
    limit: int,
    priority: int,
) -> str:
    async with open_store_for(url, create=True) as store:
        runtime = Runtime(store, max_instruction_bytes=limit)
        return await runtime.submit(
            agent, instruction=instruction, deadline=deadline, at=start, priority=priority
        )


async def _schedule(
    url: str, agent: Agent, instruction: str, deadline: float | None, every: str, *, limit: int, priority: int
) -> tuple[str, dt.datetime]:
    async with open_store_for(url, create=True) as store:
        runtime = Runtime(store, max_instruction_bytes=limit)
        trigger = await runtime.schedule(
            agent, instruction=instruction, deadline=deadline, every=every, priority=priority
        )
        return str(trigger.payload["id"]), trigger.fire_at


def schedules_command(
    delete: Annotated[
        str | None,
        typer.Option("--delete", metavar="ID", help="Stop this schedule: no more tasks are made from it."),
    ] = None,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    as_json: JsonOption = False,
) -> None:
    """List the schedules (`ratchet submit --every`), soonest due first; or delete one."""
    if delete is not None:
        if not run_async(_delete(store, delete)):
            raise InputError(f"no schedule {delete!r} in {redact_url(store)}; `ratchet schedules` lists them")
        render.print_line(f"schedule {delete} deleted; the tasks it made are kept")
        return
    found = run_async(_list(store))
    if as_json:
        json_output.print_json([json_output.schedule_json(schedule, due) for schedule, due in found])
        return
    if not found:
        render.print_line(f"no schedules in {redact_url(store)}")
        return
    render.print_schedules(found)


async def _list(url: str) -> list[tuple[Schedule, dt.datetime]]:
    async with open_store_for(url, create=False) as store:
        return sorted(await Runtime(store).schedules(), key=lambda found: found[1])


async def _delete(url: str, schedule_id: str) -> bool:
    async with open_store_for(url, create=False) as store:
        return await Runtime(store).unschedule(schedule_id)
