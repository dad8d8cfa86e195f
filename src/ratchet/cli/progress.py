"""The live progress of `ratchet run`: read from the store at each poll, shown as it changes.

`Watcher` reads only what may have changed since its last poll; a `Screen`
shows each poll: a Rich Live panel on a terminal (`run_panel`: the plan with
each step's status, the latest tool calls, the tokens against the budget),
plain lines otherwise (each new event, each tool call as it starts and ends),
nothing for ``--json`` and ``--detach``. Tool calls come from the journal, so
every call shows, also those no event reports. What the model and the tools
wrote is shown as plain text (`ratchet.printable`).

The model's text comes from the task's stream (`StreamTail`, as ``ratchet
stream`` reads it) as it is written: in the panel, the end of the answer
being written; in plain lines, each piece as it comes (`StreamText`). The
quiet screens show none of it: ``--json`` prints one line at the end, and
nothing else on stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import sys
from dataclasses import dataclass, field
from typing import Self

from rich.console import Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..errors import StoreError
from ..printable import plain, printable
from ..records import Event, Operation, OpKind, OpStatus, Step, StepStatus, StreamEntry, Task
from ..runtime.streams import follow_stream
from ..store import StateStore
from . import render
from .stream_text import Answer, StreamText

__all__ = [
    "RunProgress",
    "Screen",
    "Seen",
    "StreamTail",
    "Watcher",
    "print_tool_call",
    "run_panel",
    "screen_for",
    "tool_call_text",
    "usage_text",
]

RUN_TOOL_CALLS_SHOWN = 5
ANSWER_LINES_SHOWN = 6  # the end of the model's answer being written, in the panel
STREAM_RETRY_SECONDS = 0.2  # after a store error while following the stream (a busy file)
# Tool calls and their outcomes show from the journal; these events would say it twice.
_TOOL_EVENTS = frozenset({"tool_call", "tool_result", "tool_failed"})

_STEP_MARKS = {
    StepStatus.PENDING: "·",
    StepStatus.CURRENT: "▶",
    StepStatus.COMPLETED: "✓",
    StepStatus.FAILED: "✗",
    StepStatus.SKIPPED: "-",
    StepStatus.CANCELLED: "-",
}


@dataclass(frozen=True)
class RunProgress:
    """What `ratchet run` shows of its task, all read from the store.

    Attributes:
        tool_calls: every tool call the journal holds, by seq (also those no
            event reports: a successful read-only or write-local call).
        llm_tokens: prompt plus completion tokens of the model calls so far.
        cost: what the priced model calls cost so far, in US dollars.
        last_event: the newest event, for a one-line "what just happened".
    """

    task: Task
    steps: list[Step]
    tool_calls: list[Operation]
    llm_tokens: int
    last_event: Event | None
    cost: float = 0.0

    @property
    def steps_done(self) -> int:
        """How many steps of the plan are completed."""
        return sum(step.status is StepStatus.COMPLETED for step in self.steps)


def tool_call_text(op: Operation, limit: int | None = 80) -> str:
    """``name(arg='value', ...)``, safe to print; cut to `limit` characters, ending "...", if given."""
    arguments = op.input if isinstance(op.input, dict) else {}
    args = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    text = printable(f"{op.name}({args})")
    return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."


def _tool_call_state(op: Operation) -> Text:
    if op.status is OpStatus.SUCCEEDED:
        return Text("ok", style="green")
    if op.retry_pending:
        return plain(f"attempt {op.attempt} failed ({op.error}); retrying", style="yellow")
    if op.status is OpStatus.FAILED:
        return plain(f"failed: {op.error}", style="red")
    return Text("running...", style="blue")


def usage_text(progress: RunProgress) -> str:
    """Tokens, steps and tool calls used so far, against the task's budget and deadline."""
    task, budget = progress.task, progress.task.budget
    tokens = f"{progress.llm_tokens:,} LLM tokens"
    if budget.max_llm_tokens is not None:
        tokens += f" of {budget.max_llm_tokens:,}"
    if progress.cost or budget.max_cost is not None:
        tokens += f" · {render.dollars(progress.cost)}"
        if budget.max_cost is not None:
            tokens += f" of {render.dollars(budget.max_cost)}"
    steps = f"{progress.steps_done} of {len(progress.steps)} steps done"
    if budget.max_steps is not None:
        steps += f" (at most {budget.max_steps} may start)"
    calls = len(progress.tool_calls)
    parts = [tokens, steps, f"{calls} tool call{'' if calls == 1 else 's'}"]
    if task.deadline is not None:
        parts.append(f"deadline {render.format_time(task.deadline)}")
    return " · ".join(parts)


def run_panel(progress: RunProgress, answer: Answer | None = None) -> RenderableType:
    """The live view of a running task: its plan, its latest tool calls, the end of the answer its
    model is writing (`answer`, from its stream), what it used."""
    task = progress.task
    title = plain(f"{task.name} ({task.id}) ")
    title.append(render.status_text(task))
    parts: list[RenderableType] = []
    if progress.steps:
        plan = Table.grid(padding=(0, 1))
        for step in progress.steps:
            note = step.failure_message or (f"attempt {step.attempts}" if step.attempts > 1 else "")
            plan.add_row(
                Text(_STEP_MARKS[step.status], style=render.STEP_STYLES[step.status]),
                Text(f"{step.index + 1}.", style="dim"),
                plain(step.name, style="bold" if step.status is StepStatus.CURRENT else ""),
                plain(note, style="dim"),
            )
        parts.append(plan)
    else:
        parts.append(Text("planning...", style="dim"))
    if progress.tool_calls:
        calls = Table.grid(padding=(0, 1))
        for op in progress.tool_calls[-RUN_TOOL_CALLS_SHOWN:]:
            calls.add_row(Text(f"#{op.seq}", style="dim"), Text(tool_call_text(op)), _tool_call_state(op))
        parts += [Text(""), Text("tool calls", style="bold"), calls]
    if answer is not None and (answer.text or answer.note):
        heading = Text(f"model call #{answer.seq}" if answer.seq is not None else "model", style="bold")
        if answer.note:
            heading.append(f" ({printable(answer.note)})", style="yellow")
        parts += [Text(""), heading, Text(answer.tail(ANSWER_LINES_SHOWN), overflow="ellipsis")]
    parts += [Text(""), Text(usage_text(progress), style="dim")]
    if progress.last_event is not None:
        event = progress.last_event
        last = event.display_message or event.message
        parts.append(Text(f"last: {printable(last)}", overflow="ellipsis", no_wrap=True))
    return Panel(Group(*parts), title=title, title_align="left")


def print_tool_call(op: Operation) -> None:
    """A tool call from the journal as one progress line, in the shape of `print_event`'s, in full."""
    line = Text(" " * 7)
    line.append(f"{render.format_time(op.finished_at or op.started_at)}  ")
    line.append(f"{'tool':<7}  ")
    line.append(f"#{op.seq} {tool_call_text(op, limit=None)}: ")
    line.append(_tool_call_state(op))
    render.console.print(line, soft_wrap=True)


# --------------------------------------------------------------------------- reading the progress


@dataclass(frozen=True)
class Seen:
    """One poll: the progress, and what is new since the poll before."""

    progress: RunProgress
    events: list[Event]
    changed_calls: list[Operation]


@dataclass
class Watcher:
    """Reads a task's progress from the store, only what may have changed at each poll.

    Operations up to ``settled_seq`` are final (no retry pending): their
    tokens are added up once and they are not read again.
    """

    store: StateStore
    task_id: str
    last_event: Event | None = None
    settled_seq: int = -1
    settled_tokens: int = 0
    settled_cost: float = 0.0
    tool_calls: dict[int, Operation] = field(default_factory=dict)

    async def poll(self) -> Seen:
        async with self.store.reading() as tx:
            task = await tx.get_task(self.task_id)
            steps = await tx.list_steps(self.task_id)
            after = self.last_event.seq if self.last_event else 0
            events = await tx.list_events(self.task_id, after_seq=after)
            ops = {op.seq: op for op in await tx.list_ops(self.task_id, after_seq=self.settled_seq)}
        changed = [op for op in ops.values() if op.kind is OpKind.TOOL and self.tool_calls.get(op.seq) != op]
        self.tool_calls.update((op.seq, op) for op in changed)
        while (op := ops.get(self.settled_seq + 1)) is not None and _is_final(op):
            self.settled_tokens += _tokens(op)
            self.settled_cost += _cost(op)
            self.settled_seq = op.seq
            del ops[op.seq]
        self.last_event = events[-1] if events else self.last_event
        progress = RunProgress(
            task=task,
            steps=steps,
            tool_calls=[self.tool_calls[seq] for seq in sorted(self.tool_calls)],
            llm_tokens=self.settled_tokens + sum(_tokens(op) for op in ops.values()),
            last_event=self.last_event,
            cost=self.settled_cost + sum(_cost(op) for op in ops.values()),
        )
        return Seen(progress, events, changed)


def _is_final(op: Operation) -> bool:
    return op.is_finished and not op.retry_pending


def _tokens(op: Operation) -> int:
    usage = op.meta.get("usage") if op.kind is OpKind.MODEL else None
    if not isinstance(usage, dict):
        return 0
    return int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)


def _cost(op: Operation) -> float:
    usage = op.meta.get("usage") if op.kind is OpKind.MODEL else None
    cost = usage.get("cost") if isinstance(usage, dict) else None
    return float(cost) if isinstance(cost, int | float) else 0.0  # an unpriced call: None


@dataclass
class StreamTail:
    """Follows a task's stream while it runs here and hands each batch to the screen.

    ``offset`` is the next entry's: after the run, `catch_up` shows what the
    following had not read yet, so no piece is lost and none shown twice.
    """

    store: StateStore
    task_id: str
    screen: Screen
    offset: int = 0

    async def follow(self) -> None:
        """Show entries as they are written until the task ends (or this is cancelled)."""
        while True:
            try:
                await self._read(follow=True)
                return
            except StoreError:  # the file is busy a moment: read on from the next entry
                await asyncio.sleep(STREAM_RETRY_SECONDS)

    async def catch_up(self) -> None:
        """Show what is stored and not shown yet."""
        with contextlib.suppress(StoreError):  # the outcome matters now; the stream stays in the store
            await self._read(follow=False)

    async def _read(self, *, follow: bool) -> None:
        async for batch in follow_stream(self.store, self.task_id, from_offset=self.offset, follow=follow):
            self.offset = batch[-1].offset + 1
            self.screen.stream(batch)


# --------------------------------------------------------------------------- showing it


class Screen:
    """Where progress goes: nowhere (``--json``, ``--detach``); see the subclasses."""

    wants_stream = False  # whether the model's text, from the task's stream, is shown

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def created(self, task_id: str, url: str) -> None:
        return None

    def show(self, seen: Seen) -> None:
        return None

    def stream(self, entries: list[StreamEntry]) -> None:
        return None


class _Lines(Screen):
    """Plain lines, oldest first: each new event, and each tool call when it starts and ends; the
    model's text as it comes, each line it leaves open ended before the next event's."""

    wants_stream = True

    def __init__(self) -> None:
        self.text = StreamText(sys.stdout)

    def __exit__(self, *exc_info: object) -> None:
        self.text.end_line()
        render.flush()

    def stream(self, entries: list[StreamEntry]) -> None:
        render.flush()  # what the console printed first goes out first
        for entry in entries:
            self.text.show(entry)
        self.text.flush()

    def created(self, task_id: str, url: str) -> None:
        show = render.command("show", task_id, store_url=url)
        render.print_line(f"task {task_id} created; it runs here (`{show}` shows it from elsewhere)")
        render.flush()

    def show(self, seen: Seen) -> None:
        lines: list[tuple[dt.datetime, Event | Operation]] = [
            (event.time, event) for event in seen.events if event.kind not in _TOOL_EVENTS
        ]
        lines += [(op.finished_at or op.started_at, op) for op in seen.changed_calls]
        if lines:
            self.text.end_line()
        for _, item in sorted(lines, key=lambda line: line[0]):
            if isinstance(item, Event):
                render.print_event(item)
            else:
                print_tool_call(item)
        if lines:
            render.flush()


class _LivePanel(Screen):
    """A Rich Live panel, redrawn at each poll; its last frame stays on the screen."""

    wants_stream = True

    def __init__(self) -> None:
        self.live = Live(console=render.console, auto_refresh=False, transient=False)
        self.answer = Answer()
        self.progress: RunProgress | None = None

    def __enter__(self) -> Self:
        self.live.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.live.stop()

    def show(self, seen: Seen) -> None:
        self.progress = seen.progress
        self.live.update(run_panel(seen.progress, self.answer), refresh=True)

    def stream(self, entries: list[StreamEntry]) -> None:
        for entry in entries:
            self.answer.take(entry)
        if self.progress is not None:  # drawn at once, between the polls
            self.live.update(run_panel(self.progress, self.answer), refresh=True)


def screen_for(*, quiet: bool) -> Screen:
    """Nothing when `quiet`; else a Live panel on a terminal, plain lines anywhere else."""
    console = render.console
    if quiet:
        return Screen()
    return _LivePanel() if console.is_terminal and not console.is_dumb_terminal else _Lines()
