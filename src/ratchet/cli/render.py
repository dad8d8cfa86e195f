"""How the CLI shows records to people: Rich tables, panels and lines on stdout.

Nothing here touches a store; the command modules load the records and hand
them over. JSON for programs is `ratchet.cli.json_output`; the live view of
`ratchet run` is `ratchet.cli.progress`.

Every text that came from a model, a tool or a person goes through
`ratchet.printable` (`plain`, `printable_json`): shown as written, never as
markup, its control characters visible; one that may be long (an
instruction, a result, an error) goes into a table as a `LongText`, which
Rich renders in time linear in its length. A tool call waiting for approval is
shown with its arguments in full, as the JSON that will run.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..errors import CorruptRecord
from ..printable import plain, printable, printable_json
from ..records import (
    ALL_TASKS,
    Approval,
    Checkpoint,
    Event,
    Operation,
    Severity,
    Step,
    StepStatus,
    Task,
    TaskFilter,
    TaskRow,
    TaskStatus,
    WaitReason,
    utcnow,
)
from ..store import DEFAULT_STORE_URL, redact_url
from ..views.langgraph_thread import ThreadView
from ..views.task import what_next
from .long_text import LongText
from .relative_time import relative_time
from .tables import Listing
from .views import Outcome, Spend, TaskView, in_seq_order, in_tree_order

# Their commands load them: the chat's and the schedules' modules are no part of `ratchet tasks`.
if TYPE_CHECKING:
    from ..chat.listing import SessionSummary
    from ..schedules import Schedule

__all__ = [
    "STEP_STYLES",
    "EventPrinter",
    "command",
    "console",
    "dollars",
    "flush",
    "format_time",
    "print_checkpoints",
    "print_event",
    "print_line",
    "print_note",
    "print_outcome",
    "print_schedules",
    "print_sessions",
    "print_task_view",
    "print_tasks",
    "print_unreadable_event",
    "status_text",
]

console = Console(highlight=False, soft_wrap=False)

EventPrinter = Callable[[Event], None]

_STATUS_STYLES = {
    TaskStatus.QUEUED: "cyan",
    TaskStatus.RUNNING: "blue",
    TaskStatus.WAITING: "yellow",
    TaskStatus.COMPLETED: "green",
    TaskStatus.FAILED: "red",
    TaskStatus.CANCELLED: "magenta",
}
STEP_STYLES = {
    StepStatus.PENDING: "dim",
    StepStatus.CURRENT: "bold blue",
    StepStatus.COMPLETED: "green",
    StepStatus.FAILED: "red",
    StepStatus.SKIPPED: "dim",
    StepStatus.CANCELLED: "magenta",
}
_SEVERITY_STYLES = {
    Severity.DEBUG: "dim",
    Severity.INFO: "",
    Severity.WARNING: "yellow",
    Severity.ERROR: "red",
}


def format_time(moment: dt.datetime | None) -> str:
    """A time as people read it: local time, to the second."""
    if moment is None:
        return "-"
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def flush() -> None:
    """Push printed output out now (a follower's reader waits on it)."""
    console.file.flush()
    sys.stdout.flush()


def print_line(text: str | Text) -> None:
    """One line as written: no markup, never wrapped (commands in it stay pasteable).

    A `str` is shown as plain text (`plain`); a `Text` must be built from `plain` parts.
    """
    console.print(plain(text) if isinstance(text, str) else text, markup=False, soft_wrap=True)


def command(name: str, *args: str, store_url: str) -> str:
    """A `ratchet` command line to paste; it names the store unless that is the default.

    ``--store`` comes right after the command's name, so a caller may append
    more options to the line.
    """
    store = ["--store", redact_url(store_url)] if store_url != DEFAULT_STORE_URL else []
    return shlex.join(["ratchet", name, *store, *args])


def status_text(task: Task) -> Text:
    """The task's status as people read it (`waiting(approval)`), in its colour."""
    return plain(task.status_text, style=_STATUS_STYLES[task.status])


# --------------------------------------------------------------------------- tasks


def print_tasks(
    tasks: Sequence[TaskRow],
    *,
    store_url: str,
    where: TaskFilter,
    unreadable: Sequence[CorruptRecord] = (),
    tree: bool = False,
) -> None:
    """The listed tasks, then the unreadable rows: status ``unreadable``, what is wrong as their name.

    With `tree`, each task is followed by its children (among those listed), indented under it.
    A cost column (US dollars, ``-`` for none) is shown once a listed task cost anything.
    """
    rows = in_tree_order(tasks) if tree else [(0, task) for task in tasks]
    if not tasks and not unreadable:
        kinds = " or ".join(sorted(str(status) for status in where.statuses))
        what = f"No {kinds} tasks" if kinds else "No tasks"
        if dataclasses.replace(where, statuses=frozenset()) != ALL_TASKS:
            what += " match those filters"
        elif not kinds:
            what += " yet"
        print_line(f"{what} in {redact_url(store_url)}.")
        return
    listing = Listing()
    listing.id_column("id")
    listing.text_column("name")
    listing.word_column("status", whole=True)
    listing.word_column("agent")
    # What each cost, once one cost anything: a listing of unpriced or scripted work keeps its room.
    priced = any(task.cost for task in tasks)
    if priced:
        listing.word_column("cost", whole=True, justify="right")
    for header in ("created", "updated"):
        listing.word_column(header)
    now = utcnow()
    for depth, task in rows:
        cost = [plain(dollars(task.cost) if task.cost else "-")] if priced else []
        listing.add_row(
            plain("  " * depth + ("└ " if depth else "") + task.id),
            plain(task.name or "-"),
            plain(task.status_text, style=_STATUS_STYLES[task.status]),
            plain(task.agent or "-"),
            *cost,
            relative_time(task.created_at, now),
            relative_time(task.updated_at, now),
        )
    for row in unreadable:
        blank = [""] * (4 if priced else 3)
        listing.add_row(Text(str(row.key[0])), Text(row.problem), Text("unreadable", style="red"), *blank)
    listing.print(console)


# At most this many checkpoints in `ratchet show`: the newest, where a fork most often starts.
SHOWN_CHECKPOINTS = 10


def print_checkpoints(task: Task, checkpoints: Sequence[Checkpoint], *, store_url: str) -> None:
    """The task's checkpoints, newest last (at most `SHOWN_CHECKPOINTS`), and how to fork from one."""
    if not checkpoints:
        console.print(Text("Checkpoints: none yet."))
        return
    shown = checkpoints[-SHOWN_CHECKPOINTS:]
    hidden = len(checkpoints) - len(shown)
    console.print(
        Text(
            f"Checkpoints ({len(checkpoints)}" + (f", the last {len(shown)}" if hidden else "") + "):",
            style="bold",
        )
    )
    for saved in shown:
        done = sum(1 for step in saved.steps if step.status is StepStatus.COMPLETED)
        print_line(
            f"  #{saved.number}  {format_time(saved.created_at)}  {saved.task.status_text}, "
            f"{done}/{len(saved.steps)} steps done, journal up to seq {saved.last_seq}"
        )
    print_line(
        "  Start a new task from one: " + command("fork", task.id, "--checkpoint", "N", store_url=store_url)
    )


def print_note(text: str) -> None:
    """One line for people on stderr, where it stays out of the JSON a program reads from stdout."""
    sys.stderr.write(printable(text) + "\n")


# --------------------------------------------------------------------------- show


def print_task_view(view: TaskView, *, store_url: str) -> None:
    console.print(_task_panel(view.task, view.spend, view.forked))
    if view.steps:
        _print_steps(view.steps)
    else:
        console.print(Text("Steps: none planned yet."))
    if view.thread is not None:
        _print_thread(view.thread)
    if view.children:
        console.print(Text(f"Children ({len(view.children)}):", style="bold"))
        for child in view.children:
            console.print(Text.assemble(f"  {child.id}  ", plain(child.name), "  ", status_text(child)))
    if view.pending_approvals:
        _print_approvals(view.task, view.pending_approvals, store_url=store_url)
    if view.question is not None:
        _print_question(view.task, view.question, store_url=store_url)
    if view.in_doubt:
        _print_in_doubt(view.task, view.in_doubt, store_url=store_url)
    resume = command("resume", view.task.id, store_url=store_url)
    upcoming = what_next(view.task, view.decided, view.wakes_at, resume=resume, at=format_time)
    if upcoming:
        print_line(Text("Next", style="bold"))
        for line in upcoming:
            print_line(f"  {line}")
    if view.pending_messages:
        console.print(Text(f"Messages not received yet ({len(view.pending_messages)}):", style="bold"))
        for m in view.pending_messages:
            console.print(
                plain(f"  #{m.seq} {m.name}: {printable_json(m.payload)}  (sent {format_time(m.sent_at)})")
            )
    if view.events or view.unreadable_events:
        shown = in_seq_order(view.events, view.unreadable_events)
        console.print(Text(f"Latest events ({len(shown)}):", style="bold"))
        for item in shown:
            if isinstance(item, Event):
                print_event(item)
            else:
                print_unreadable_event(item)
    else:
        console.print(Text("Events: none yet."))


def _task_panel(task: Task, spend: Spend, forked: Event | None = None) -> Panel:
    fields = Table.grid(padding=(0, 2))
    fields.add_column(style="bold", no_wrap=True)
    # The id and the name are rows of their own: a panel's title is cut short on a narrow terminal.
    fields.add_column(overflow="fold")
    fields.add_row("id", plain(task.id))
    fields.add_row("name", plain(task.name))
    fields.add_row("status", status_text(task))
    fields.add_row("agent", plain(task.agent))
    if task.model:
        fields.add_row("model", plain(task.model))
    if task.code_version:
        fields.add_row("code version", plain(task.code_version))
    if task.labels:
        fields.add_row("labels", plain(" ".join(f"{key}={value}" for key, value in task.labels.items())))
    if task.parent_id:
        fields.add_row("parent", plain(task.parent_id))
    if forked is not None:  # where it was forked from, and what its what-if overrides changed
        fields.add_row("forked", LongText(plain(forked.message)))
    fields.add_row("priority", f"{task.priority} (0 is the most urgent)")
    fields.add_row("instruction", LongText(plain(task.instruction)))
    if task.goal:
        fields.add_row("goal", LongText(plain(task.goal)))
    if task.result is not None:
        result = task.result if isinstance(task.result, str) else printable_json(task.result)
        fields.add_row("result", LongText(plain(result)))
    if task.error:
        fields.add_row("error", LongText(plain(task.error, style="red")))
    now = utcnow()
    if task.deadline:
        fields.add_row("deadline", _both_times(task.deadline, now))
    if spend.llm_tokens or spend.unpriced_calls or spend.max_cost is not None:
        fields.add_row("spent", _spend_text(spend))
    fields.add_row("created", _both_times(task.created_at, now))
    fields.add_row("updated", _both_times(task.updated_at, now))
    return Panel(fields, title=plain(task.name), title_align="left")


def _both_times(moment: dt.datetime, now: dt.datetime) -> str:
    """``2026-11-29 10:27:31 (5m ago)``: a task's own time, exact, and how long ago."""
    return f"{format_time(moment)} ({relative_time(moment, now)})"


def _spend_text(spend: Spend) -> str:
    """``$0.0075 of $0.05 ($0.0425 left), 1,500 tokens; 1 call unpriced``."""
    text = dollars(spend.cost)
    if spend.max_cost is not None and spend.cost_left is not None:
        text += f" of {dollars(spend.max_cost)} ({dollars(spend.cost_left)} left)"
    text += f", {spend.llm_tokens:,} tokens"
    if spend.unpriced_calls:
        calls = "call" if spend.unpriced_calls == 1 else "calls"
        text += f"; {spend.unpriced_calls} model {calls} unpriced (not counted)"
    return text


def dollars(amount: float) -> str:
    """US dollars to the millionth, without trailing zeros: ``$0.0075``, ``$12.5``, ``$0``."""
    return "$" + f"{amount:,.6f}".rstrip("0").rstrip(".")


def _print_steps(steps: list[Step]) -> None:
    listing = Listing(title="Steps")
    listing.word_column("#", whole=True)
    listing.text_column("name")
    listing.word_column("status", whole=True)
    listing.word_column("attempts")
    listing.text_column("note")
    for step in steps:
        listing.add_row(
            str(step.index + 1),  # the store counts from 0, people from 1
            plain(step.name),
            Text(step.status, style=STEP_STYLES[step.status]),
            str(step.attempts),
            LongText(plain(step.failure_message or "")),
        )
    listing.print(console)


def _print_approvals(task: Task, approvals: list[Approval], *, store_url: str) -> None:
    """Each call waiting for a person, its arguments in full: one JSON line, exactly what will run.

    Not a table: a table folds or crops a long value, and the arguments a
    person approves must be seen whole and copyable (the terminal wraps the line).
    """
    print_line(Text("Waiting for approval", style="bold"))
    for approval in approvals:
        step = "" if approval.step is None else f" in step {approval.step + 1}"
        print_line(f"  operation {approval.seq}{step}: {approval.tool}")
        print_line(f"    why: {approval.why}")
        print_line("    arguments (JSON, exactly as they will run):")
        print_line(f"    {printable_json(approval.arguments)}")
    if len(approvals) > 1:
        print_line("They are decided one at a time, the oldest first.")
    print_line(
        f"Approve it: `{command('approve', task.id, store_url=store_url)}` "
        "(add --edit-args JSON to change its arguments)"
    )
    print_line(f"Deny it:    `{command('deny', task.id, '--reason', 'TEXT', store_url=store_url)}`")


def _print_thread(thread: ThreadView) -> None:
    """A LangGraph thread's task: its thread and graph (its steps are its checkpoints), its pending writes."""
    graph = thread.graph or "none named: Ratchet cannot resume it"
    print_line(plain(f"LangGraph thread {thread.thread_id!r}, graph {graph}", style="bold"))
    writes = ", ".join(f"{w.channel} by {w.node}" for w in thread.pending_writes) or "none"
    print_line(plain(f"  pending writes on its latest checkpoint: {writes}"))


def _print_question(task: Task, question: str, *, store_url: str) -> None:
    print_line(plain(f"Waiting for an answer: {question}", style="bold"))
    print_line(f"Answer it: `{command('answer', task.id, 'TEXT', store_url=store_url)}`")


def _print_in_doubt(task: Task, ops: list[Operation], *, store_url: str) -> None:
    if not ops:  # the journal moved on since the task was read
        print_line(f"Its calls in doubt: `{command('show', task.id, store_url=store_url)}`.")
        return
    listing = Listing(title="In doubt: in flight when its worker stopped")
    listing.id_column("seq")
    listing.word_column("tool", whole=True)
    listing.text_column("arguments")
    listing.word_column("attempt")
    listing.word_column("started")
    now = utcnow()
    for op in ops:
        arguments = LongText(plain(printable_json(op.input)))
        listing.add_row(
            str(op.seq), plain(op.name), arguments, str(op.attempt), relative_time(op.started_at, now)
        )
    listing.print(console)
    print_line("Each may or may not have happened; nobody knows. Look at the outside system, then settle it:")
    choices = (
        ("--retry", "it did not happen: run it again"),
        ("--skip", "it happened: go on, with no result"),
        ("--result JSON", "it happened: go on, with this JSON as its result"),
    )
    lines = [
        (
            f"{command('resolve', task.id, '--op', str(op.seq), store_url=store_url)} {choice}",
            meaning,
        )
        for op in ops
        for choice, meaning in choices
    ]
    width = max(len(line) for line, _ in lines)
    for line, meaning in lines:
        print_line(f"  {line:<{width}}  # {meaning}")
    print_line(
        f"Then continue it with `{command('resume', task.id, store_url=store_url)}` "
        "(or a running `ratchet worker` picks it up)."
    )


# --------------------------------------------------------------------------- resume


def print_outcome(outcome: Outcome, *, store_url: str) -> None:
    """Say how the run left the task and, when it waits, on what and what settles it."""
    task = outcome.task
    title = plain(f"task {task.id} ")
    title.append(status_text(task))
    print_line(title)
    if task.result is not None:
        print_line(f"result: {printable_json(task.result)}")
    if task.error:
        print_line(plain(f"error: {task.error}", style="red"))
        print_line(f"What happened: `{command('events', task.id, store_url=store_url)}`")
    if task.status in (TaskStatus.FAILED, TaskStatus.CANCELLED):
        print_line(f"Try it again from where it stopped: `{command('retry', task.id, store_url=store_url)}`")
    if task.waiting_on is WaitReason.IN_DOUBT:
        _print_in_doubt(task, outcome.in_doubt, store_url=store_url)
    elif task.waiting_on is WaitReason.APPROVAL:
        for approval in outcome.pending_approvals:
            print_line(
                f"waits for approval of operation {approval.seq}: {approval.tool} "
                f"{printable_json(approval.arguments)} ({approval.why})"
            )
        print_line(
            f"It waits for a person: `{command('approve', task.id, store_url=store_url)}` or "
            f"`{command('deny', task.id, '--reason', 'TEXT', store_url=store_url)}`."
        )
    elif task.waiting_on is WaitReason.INPUT:
        if outcome.question is not None:
            print_line(f"waits for an answer to: {outcome.question}")
        print_line(f"It waits for an answer: `{command('answer', task.id, 'TEXT', store_url=store_url)}`.")
    elif not task.status.is_terminal:
        when = f"at {format_time(outcome.wakes_at)}" if outcome.wakes_at else "later"
        print_line(
            f"It continues {when}: a running `ratchet worker` picks it up then, "
            f"or run `{command('resume', task.id, store_url=store_url)}` after that."
        )


# --------------------------------------------------------------------------- events


def print_event(event: Event) -> None:
    line = Text()
    line.append(f"{event.seq:>5}  ", style="dim")
    line.append(f"{format_time(event.time)}  ")
    line.append(f"{event.severity:<7}  ", style=_SEVERITY_STYLES[event.severity])
    line.append(plain(event.display_message or event.message))
    console.print(line, soft_wrap=True)


def print_unreadable_event(row: CorruptRecord) -> None:
    """An event row that cannot be read, where the event would be: its seq, then what is wrong."""
    line = Text()
    line.append(f"{row.key[-1]!s:>5}  ", style="dim")
    line.append(f"{'?':<19}  ")
    line.append(f"{'error':<7}  ", style=_SEVERITY_STYLES[Severity.ERROR])
    line.append(row.message)
    console.print(line, soft_wrap=True)


# --------------------------------------------------------------------------- schedules, sessions


def print_schedules(found: Sequence[tuple[Schedule, dt.datetime]]) -> None:
    """The schedules, each with its cron expression's time zone and how soon it is next due."""
    listing = Listing()
    listing.id_column("schedule")
    listing.word_column("every", whole=True)  # a cron expression cut short would say another time
    for column in ("tz", "next due", "overlap"):
        listing.word_column(column)
    listing.text_column("instruction")
    now = utcnow()
    for schedule, due in found:
        listing.add_row(
            plain(schedule.id),
            plain(schedule.cron or ""),
            plain(schedule.tz),
            "paused" if schedule.paused else relative_time(due, now),
            schedule.overlap,
            plain(schedule.template.instruction),
        )
    listing.print(console)


def print_sessions(listed: Sequence[SessionSummary]) -> None:
    listing = Listing()
    listing.id_column("session")
    listing.word_column("updated")
    for column in ("tasks", "turns", "version"):
        listing.word_column(column, justify="right")
    now = utcnow()
    for summary in listed:
        listing.add_row(
            plain(summary.session.id),
            relative_time(summary.session.updated_at, now),
            "-" if summary.tasks is None else str(summary.tasks),
            "-" if summary.turns is None else plain(str(summary.turns)),
            str(summary.session.version),
        )
    listing.print(console)
