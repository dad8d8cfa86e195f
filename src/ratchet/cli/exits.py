"""The exit codes of the commands that run a task here (`run`, `resume`), and what they mean.

Any command exits 2 on bad input (`ratchet.cli.main` sees to that); these
codes tell a script how the run left its task.
"""

from __future__ import annotations

import sys

from ..errors import StoreError
from ..records import Task, TaskStatus, WaitReason
from .interrupts import EXIT_INTERRUPTED
from .render import command

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_CODES",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_STORE_FAILED",
    "EXIT_TERMINATED",
    "EXIT_WAITS_ON_PERSON",
    "EXIT_WAITS_ON_TIMER",
    "exit_code",
    "say_stopped",
    "say_store_failed",
]

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_WAITS_ON_PERSON = 3
EXIT_WAITS_ON_TIMER = 4
EXIT_STORE_FAILED = 5
EXIT_TERMINATED = 143
EXIT_CODES = {
    0: "the task completed",
    EXIT_FAILED: "the task failed or was cancelled",
    EXIT_BAD_INPUT: "bad input: unknown task, already ended, held by a live worker, bad option",
    EXIT_WAITS_ON_PERSON: "the task waits on a person (approval, input, or an in-doubt call)",
    EXIT_WAITS_ON_TIMER: "the task waits on a timer (a backoff or a durable sleep) or for a message",
    EXIT_STORE_FAILED: "the store failed while the task ran (disk full, read-only, unreachable); "
    "the task stays resumable once the store is fixed",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C); the task stays resumable",
    EXIT_TERMINATED: "terminated (SIGTERM); the task stays resumable",
}


def exit_code(task: Task) -> int:
    """The exit code that tells a script how a run left `task` (see `EXIT_CODES`)."""
    if task.status is TaskStatus.COMPLETED:
        return 0
    if task.status.is_terminal:
        return EXIT_FAILED
    if task.waiting_on is WaitReason.CHILDREN:  # a run returns it so only when its children wait on people
        return EXIT_WAITS_ON_PERSON
    if task.waiting_on is not None and task.waiting_on.needs_person:
        return EXIT_WAITS_ON_PERSON
    return EXIT_WAITS_ON_TIMER


def say_stopped(how: str, task_id: str, store_url: str) -> None:
    """Tell, on stderr, that the task stopped resumable, and how to continue it."""
    again = command("resume", task_id, store_url=store_url)
    print(
        f"{how}: task {task_id} stopped where it was and its lease is released; "
        f"continue it with `{again}` (or a running `ratchet worker` picks it up)",
        file=sys.stderr,
    )


def say_store_failed(task_id: str, failure: StoreError, store_url: str) -> None:
    """Tell, in one line on stderr, that the store (not the task) failed, and how to continue the task."""
    again = command("resume", task_id, store_url=store_url)
    message = " ".join(failure.message.split())
    print(
        f"error: the store failed while task {task_id} ran: {message}; the task has not failed and "
        f"stays resumable: once the store is fixed, `{again}` continues it",
        file=sys.stderr,
    )
