"""What the shell completes besides commands and options (Typer completes those itself).

``ratchet --install-completion`` installs Typer's completion script for the
shell it runs in; the shell then asks the program itself, which answers from
here: a task's id from the store the command line (or ``RATCHET_STORE``)
names, a status from the statuses there are. A completion never creates a
database and never fails: anything that goes wrong completes nothing.
"""

from __future__ import annotations

import contextlib
import os

import typer

from ..errors import RatchetError
from ..records import TaskFilter, TaskOrder, TaskStatus
from ..store import DEFAULT_STORE_URL
from .store_access import open_store_for, run_async

__all__ = ["complete_status", "complete_task_id"]

COMPLETIONS = 200  # the newest ids a shell is offered: enough to choose from, few to read


def complete_status(incomplete: str) -> list[str]:
    """The task statuses that start with what was typed."""
    return [status.value for status in TaskStatus if status.value.startswith(incomplete)]


def complete_task_id(ctx: typer.Context, incomplete: str) -> list[str]:
    """The ids of the tasks in the store that start with what was typed, newest first."""
    url = ctx.params.get("store") or os.environ.get("RATCHET_STORE") or DEFAULT_STORE_URL
    with contextlib.suppress(RatchetError, OSError):
        return run_async(_task_ids(str(url), incomplete))
    return []


async def _task_ids(url: str, incomplete: str) -> list[str]:
    async with open_store_for(url, create=False) as store:
        # The ids alone, not every record; those that start with what was typed, by their index.
        where = TaskFilter(id_prefix=incomplete or None)
        rows = await store.list_task_rows(where, order=TaskOrder(descending=True), limit=COMPLETIONS)
    return [row.id for row in rows]
