"""How the CLI shows records: Rich tables and panels for people, JSON for programs.

Nothing here touches a store; `ratchet.cli` loads the records and hands them over.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .model import Event, Operation, Severity, Step, StepStatus, Task, TaskStatus

__all__ = [
    "EventPrinter",
    "TaskView",
    "console",
    "flush",
    "format_time",
    "print_event",
    "print_event_json",
    "print_json",
    "print_task_view",
    "print_tasks",
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
_STEP_STYLES = {
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


@dataclass(frozen=True)
class TaskView:
    """Everything `ratchet show` displays about one task."""

    task: Task
    steps: list[Step]
    pending_approvals: list[Operation]
    events: list[Event]

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task.model_dump(mode="json"),
            "steps": [step.model_dump(mode="json") for step in self.steps],
            "events": [event.model_dump(mode="json") for event in self.events],
            "pending_approvals": [op.model_dump(mode="json") for op in self.pending_approvals],
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


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _status_text(task: Task) -> Text:
    return Text(task.status_text, style=_STATUS_STYLES[task.status])


# --------------------------------------------------------------------------- tasks


def print_tasks(tasks: list[Task], *, store_url: str, status: TaskStatus | None) -> None:
    if not tasks:
        what = f"No {status} tasks" if status else "No tasks yet"
        console.print(f"{what} in {escape(store_url)}.")
        return
    table = Table()
    for header in ("id", "name", "status", "agent", "created", "updated"):
        table.add_column(header, overflow="fold", no_wrap=header == "status")
    for task in tasks:
        table.add_row(
            task.id,
            task.name,
            _status_text(task),
            task.agent,
            format_time(task.created_at),
            format_time(task.updated_at),
        )
    console.print(table)


# --------------------------------------------------------------------------- show


def print_task_view(view: TaskView) -> None:
    console.print(_task_panel(view.task))
    console.print(_steps_table(view.steps) if view.steps else Text("Steps: none planned yet."))
    if view.pending_approvals:
        console.print(_approvals_table(view.pending_approvals))
    if view.events:
        console.print(Text(f"Latest events ({len(view.events)}):", style="bold"))
        for event in view.events:
            print_event(event)
    else:
        console.print(Text("Events: none yet."))


def _task_panel(task: Task) -> Panel:
    fields = Table.grid(padding=(0, 2))
    fields.add_column(style="bold")
    fields.add_column(overflow="fold")
    fields.add_row("status", _status_text(task))
    fields.add_row("agent", task.agent)
    fields.add_row("instruction", task.instruction)
    if task.goal:
        fields.add_row("goal", task.goal)
    if task.result is not None:
        result = task.result if isinstance(task.result, str) else json.dumps(task.result)
        fields.add_row("result", result)
    if task.error:
        fields.add_row("error", Text(task.error, style="red"))
    if task.deadline:
        fields.add_row("deadline", format_time(task.deadline))
    fields.add_row("created", format_time(task.created_at))
    fields.add_row("updated", format_time(task.updated_at))
    return Panel(fields, title=Text(f"{task.name} ({task.id})"), title_align="left")


def _steps_table(steps: list[Step]) -> Table:
    table = Table(title="Steps", title_justify="left")
    for header in ("#", "name", "status", "attempts", "note"):
        table.add_column(header, overflow="fold")
    for step in steps:
        table.add_row(
            str(step.index),
            step.name,
            Text(step.status, style=_STEP_STYLES[step.status]),
            str(step.attempts),
            step.failure_message or "",
        )
    return table


def _approvals_table(ops: list[Operation]) -> Table:
    table = Table(title="Waiting for approval", title_justify="left")
    for header in ("seq", "kind", "name", "input"):
        table.add_column(header, overflow="fold")
    for op in ops:
        table.add_row(str(op.seq), op.kind, op.name, json.dumps(op.input))
    return table


# --------------------------------------------------------------------------- events


def print_event(event: Event) -> None:
    line = Text()
    line.append(f"{event.seq:>5}  ", style="dim")
    line.append(f"{format_time(event.time)}  ")
    line.append(f"{event.severity:<7}  ", style=_SEVERITY_STYLES[event.severity])
    line.append(event.display_message or event.message)
    console.print(line, soft_wrap=True)


def print_event_json(event: Event) -> None:
    sys.stdout.write(event.model_dump_json() + "\n")
