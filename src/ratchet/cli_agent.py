"""`ratchet run` and `ratchet cancel`: run the planning agent on an instruction, or stop a task.

`run` builds an `Agent` from its options and checks every one of them before
anything is stored (bad input: one line, exit 2). Then it creates the task and
runs it in this process, showing its progress as the store holds it: the plan
and each step's status, the tool calls of the journal (every call, also those
no event reports), the model's tokens against the budget. On a terminal that
is a Rich Live panel; otherwise plain lines, one per event or tool call.
``--detach`` only queues the task, for ``ratchet resume`` or a worker.

Ctrl-C and SIGTERM stop a run as they stop ``ratchet resume``: the call in
progress is cancelled, the lease released, and the exact command that
continues the task is printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Self

import typer
from rich.live import Live

from . import cli_render as render
from .agent import Agent, load_tools
from .agent.builtin_tools import builtin_tools
from .cli_common import (
    StoreOption,
    TaskArgument,
    load_outcome,
    open_for_task,
    open_store_for,
    run_async,
)
from .cli_run import EXIT_INTERRUPTED, EXIT_TERMINATED, exit_code, say_stopped
from .errors import CannotResume, InputError, LeaseLost, StoreError
from .model import Event, Lease, Operation, OpKind, Step, StepStatus, Task, TaskStatus
from .policy import Budget, parse_duration
from .providers import ScriptedModel, resolve_model
from .runtime import Runtime
from .store import DEFAULT_STORE_URL, StateStore

__all__ = [
    "AllowShellOption",
    "DeadlineOption",
    "InstructionArgument",
    "InstructionsOption",
    "MaxStepsOption",
    "MaxTokensOption",
    "ModelOption",
    "ToolsOption",
    "build_agent",
    "cancel_command",
    "deadline_seconds",
    "run_command",
]

AGENT_NAME = "agent"
POLL_SECONDS = 0.2
# Tool calls and their outcomes show from the journal; these events would say it twice.
_TOOL_EVENTS = frozenset({"tool_call", "tool_result", "tool_failed"})


# --------------------------------------------------------------------------- the agent from options


def build_agent(
    *,
    model: str,
    tool_files: list[str],
    instructions: str = "",
    max_steps: int | None = None,
    max_tokens: int | None = None,
    allow_shell: bool = False,
) -> Agent:
    """The agent the options describe, each checked now rather than when the task runs.

    Raises:
        InputError: the model spec names no usable model, or a tools file is
            missing, does not load, defines no tool, or reuses a tool's name.
    """
    sources = [_checked_tools_file(path) for path in tool_files]
    load_tools(sources)  # two files defining one name
    return Agent(
        name=AGENT_NAME,
        instructions=instructions,
        model=_checked_model(model),
        budget=Budget(max_steps=max_steps, max_llm_tokens=max_tokens),
        tool_sources=sources,
        allow_shell=allow_shell,
    )


def _checked_model(spec: str) -> str:
    provider = resolve_model(spec)  # no network: only the spec (and a script file) is checked
    if isinstance(provider, ScriptedModel):
        return f"scripted:{provider.path}"  # absolute, so a resume from elsewhere finds the script
    return spec.strip()


def _checked_tools_file(path: str) -> str:
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise InputError(
            f"--tools: no file at {file}; give a .py file with @ratchet.tool functions"
        )
    if file.suffix != ".py":
        raise InputError(
            f"--tools: {path} is not a .py file; give a Python file with @ratchet.tool functions"
        )
    found = load_tools([str(file)])
    if not found:
        raise InputError(f"--tools: {path} defines no tool; mark its functions with @ratchet.tool")
    builtin = {t.name for t in builtin_tools(Path("."), None, allow_shell=True)}
    clashes = sorted(builtin.intersection(t.name for t in found))
    if clashes:
        raise InputError(
            f"--tools: {path} defines {clashes[0]!r}, the name of a built-in tool; rename it"
        )
    return str(file)


def deadline_seconds(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        seconds = parse_duration(text)
    except InputError as error:
        raise InputError(f"--deadline: {error.message}") from None
    if seconds <= 0:
        raise InputError(f"--deadline: {text!r} leaves no time; write e.g. 30s, 10m or 2h")
    return seconds


# --------------------------------------------------------------------------- run


InstructionArgument = Annotated[
    str, typer.Argument(metavar="INSTRUCTION", help="What the agent should do.")
]
ModelOption = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        envvar="RATCHET_MODEL",
        metavar="PROVIDER:NAME",
        help="openai:NAME, ollama:NAME, anthropic:NAME or scripted:SCRIPT.json.",
    ),
]
ToolsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--tools",
        metavar="FILE.py",
        help="Give the agent every @ratchet.tool of this file; repeat for more.",
    ),
]
InstructionsOption = Annotated[
    str,
    typer.Option("--instructions", metavar="TEXT", help="What the agent is and how it works."),
]
DeadlineOption = Annotated[
    str | None,
    typer.Option(
        "--deadline",
        metavar="DURATION",
        help="Fail the task if not done by then: 90s, 10m, 2h.",
    ),
]
MaxStepsOption = Annotated[
    int | None,
    typer.Option("--max-steps", min=1, metavar="N", help="At most N plan steps may start."),
]
MaxTokensOption = Annotated[
    int | None,
    typer.Option(
        "--max-tokens",
        min=1,
        metavar="N",
        help="At most N LLM tokens (prompt plus completion).",
    ),
]
AllowShellOption = Annotated[
    bool, typer.Option("--allow-shell", help="Give the agent a shell in its workspace.")
]


@dataclass
class _Started:
    """What `run` made before it was stopped: the id of its task, once created."""

    task_id: str | None = None


def run_command(
    instruction: InstructionArgument,
    model: ModelOption,
    tools: ToolsOption = None,
    instructions: InstructionsOption = "",
    deadline: DeadlineOption = None,
    max_steps: MaxStepsOption = None,
    max_tokens: MaxTokensOption = None,
    allow_shell: AllowShellOption = False,
    detach: Annotated[
        bool, typer.Option("--detach", "-d", help="Only queue the task and print its id.")
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="No progress; end with one JSON line: status, result, steps, usage."
        ),
    ] = False,
    store: StoreOption = DEFAULT_STORE_URL,
) -> None:
    """Plan INSTRUCTION into steps and carry them out with the agent's model and tools.

    Exit code: 0 completed, 1 failed or cancelled, 3 waits on a person,
    4 waits on a timer, 2 bad input, 130 Ctrl-C and 143 SIGTERM (the task
    stays resumable; the command that continues it is printed).
    """
    if not instruction.strip():
        raise InputError("the instruction is empty; say what the agent should do")
    if detach and store.partition(":")[0].strip().lower() == "memory":
        raise InputError(
            "--detach with a memory:// store would lose the task at once; use sqlite:///PATH"
        )
    agent = build_agent(
        model=model,
        tool_files=tools or [],
        instructions=instructions,
        max_steps=max_steps,
        max_tokens=max_tokens,
        allow_shell=allow_shell,
    )
    seconds = deadline_seconds(deadline)
    started = _Started()
    screen = _Screen() if as_json or detach else _screen_for_console()
    try:
        progress, outcome = run_async(
            _run(store, agent, instruction, seconds, detach=detach, screen=screen, started=started)
        )
    except KeyboardInterrupt:
        _say_stopped("interrupted", started.task_id, store)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except asyncio.CancelledError:  # SIGTERM (see _run)
        _say_stopped("terminated", started.task_id, store)
        raise typer.Exit(EXIT_TERMINATED) from None
    if as_json:
        render.print_run_json(progress)
    elif detach:
        print(progress.task.id)
        run_it = render.command("resume", progress.task.id, store_url=store)
        print(
            f"queued: run it with `{run_it}`, or let a `ratchet worker` pick it up", file=sys.stderr
        )
    else:
        assert outcome is not None
        render.print_outcome(outcome, store_url=store)
        render.print_line(f"used: {render.usage_text(progress)}")
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
    detach: bool,
    screen: _Screen,
    started: _Started,
) -> tuple[render.RunProgress, render.Outcome | None]:
    # SIGTERM stops the run as Ctrl-C does (asyncio.run sees to SIGINT): cancelled, lease released.
    this_run = asyncio.current_task()
    assert this_run is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, this_run.cancel)
    async with open_store_for(url, create=True) as store:
        runtime = Runtime(store)
        task_id = await runtime.submit(
            agent, instruction=instruction, deadline=deadline, queue=detach
        )
        started.task_id = task_id
        watcher = _Watcher(store, task_id)
        if detach:
            return (await watcher.poll()).progress, None
        screen.created(task_id, url)
        with screen:
            task = await _run_watched(runtime, task_id, watcher, screen)
            seen = await watcher.poll()
            screen.show(seen)
        return seen.progress, await load_outcome(store, task)


async def _run_watched(runtime: Runtime, task_id: str, watcher: _Watcher, screen: _Screen) -> Task:
    """Run the task here while the screen follows it; stop at once if it is cancelled elsewhere."""
    running = asyncio.create_task(_run_here(runtime, task_id))
    following = asyncio.create_task(_follow(watcher, screen, running))
    try:
        return await running
    except asyncio.CancelledError:
        this_run = asyncio.current_task()
        if this_run is not None and this_run.cancelling():  # Ctrl-C or SIGTERM
            raise
        return await runtime.store.get_task(task_id)  # `ratchet cancel` ended it
    finally:
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following


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


async def _follow(watcher: _Watcher, screen: _Screen, running: asyncio.Task[Task]) -> None:
    while True:
        try:
            seen = await watcher.poll()
        except StoreError:  # the file is busy a moment; the next round reads what this one missed
            pass
        else:
            screen.show(seen)
            if seen.progress.task.status is TaskStatus.CANCELLED:
                # Its worker would stop only at its next write or heartbeat; this one stops now.
                running.cancel()
                return
        await asyncio.sleep(POLL_SECONDS)


# --------------------------------------------------------------------------- reading the progress


@dataclass(frozen=True)
class _Seen:
    """One poll: the progress, and what is new since the poll before."""

    progress: render.RunProgress
    events: list[Event]
    changed_calls: list[Operation]


@dataclass
class _Watcher:
    """Reads a task's progress from the store, only what may have changed at each poll.

    Operations up to ``settled_seq`` are final (no retry pending): their
    tokens are added up once and they are not read again.
    """

    store: StateStore
    task_id: str
    last_event: Event | None = None
    settled_seq: int = -1
    settled_tokens: int = 0
    tool_calls: dict[int, Operation] = field(default_factory=dict)

    async def poll(self) -> _Seen:
        async with self.store.reading() as tx:
            task = await tx.get_task(self.task_id)
            steps = await tx.list_steps(self.task_id)
            after = self.last_event.seq if self.last_event else 0
            events = await tx.list_events(self.task_id, after_seq=after)
            ops = {op.seq: op for op in await tx.list_ops(self.task_id, after_seq=self.settled_seq)}
        changed = [
            op
            for op in ops.values()
            if op.kind is OpKind.TOOL and self.tool_calls.get(op.seq) != op
        ]
        self.tool_calls.update((op.seq, op) for op in changed)
        while (op := ops.get(self.settled_seq + 1)) is not None and _is_final(op):
            self.settled_tokens += _tokens(op)
            self.settled_seq = op.seq
            del ops[op.seq]
        self.last_event = events[-1] if events else self.last_event
        progress = render.RunProgress(
            task=task,
            steps=steps,
            tool_calls=[self.tool_calls[seq] for seq in sorted(self.tool_calls)],
            llm_tokens=self.settled_tokens + sum(_tokens(op) for op in ops.values()),
            last_event=self.last_event,
        )
        return _Seen(progress, events, changed)


def _is_final(op: Operation) -> bool:
    return op.is_finished and not op.retry_pending


def _tokens(op: Operation) -> int:
    usage = op.meta.get("usage") if op.kind is OpKind.MODEL else None
    if not isinstance(usage, dict):
        return 0
    return int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)


# --------------------------------------------------------------------------- showing it


class _Screen:
    """Where progress goes: nowhere (``--json``, ``--detach``); see the subclasses."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def created(self, task_id: str, url: str) -> None:
        return None

    def show(self, seen: _Seen) -> None:
        return None


class _Lines(_Screen):
    """Plain lines, oldest first: each new event, and each tool call when it starts and ends."""

    def created(self, task_id: str, url: str) -> None:
        show = render.command("show", task_id, store_url=url)
        render.print_line(
            f"task {task_id} created; it runs here (`{show}` shows it from elsewhere)"
        )
        render.flush()

    def show(self, seen: _Seen) -> None:
        lines: list[tuple[dt.datetime, Event | Operation]] = [
            (event.time, event) for event in seen.events if event.kind not in _TOOL_EVENTS
        ]
        lines += [(op.finished_at or op.started_at, op) for op in seen.changed_calls]
        for _, item in sorted(lines, key=lambda line: line[0]):
            if isinstance(item, Event):
                render.print_event(item)
            else:
                render.print_tool_call(item)
        if lines:
            render.flush()


class _LivePanel(_Screen):
    """A Rich Live panel, redrawn at each poll; its last frame stays on the screen."""

    def __init__(self) -> None:
        self.live = Live(console=render.console, auto_refresh=False, transient=False)

    def __enter__(self) -> Self:
        self.live.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.live.stop()

    def show(self, seen: _Seen) -> None:
        self.live.update(render.run_panel(seen.progress), refresh=True)


def _screen_for_console() -> _Screen:
    console = render.console
    return _LivePanel() if console.is_terminal and not console.is_dumb_terminal else _Lines()


# --------------------------------------------------------------------------- cancel


def cancel_command(
    task_id: TaskArgument,
    reason: Annotated[
        str, typer.Option("--reason", metavar="TEXT", help="Why; kept as the task's error.")
    ] = "cancelled by a person",
    store: StoreOption = DEFAULT_STORE_URL,
) -> None:
    """Cancel a task that has not ended, with its open steps and queued wake-ups.

    A worker running it stops at its next write. A task that already ended is
    bad input (exit 2).
    """
    done = run_async(_cancel(store, task_id, reason))
    render.print_line(
        f"task {task_id} cancelled (it was {done.before.status_text}): {done.task.error}"
    )
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
        steps_cancelled=[
            s for s in steps if s.index in open_steps and s.status is StepStatus.CANCELLED
        ],
        holder=lease if lease is not None and lease.is_live() else None,
    )
