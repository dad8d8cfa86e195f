"""What the shell completes besides commands and options (Typer completes those itself).

``ratchet --install-completion`` installs Typer's completion script for the
shell it runs in; the shell then asks the program itself, which answers from
here: a task's id from the store the command line (or ``RATCHET_STORE``,
or ratchet.toml's ``[store] url``) names, a status from the statuses there
are. A completion never creates a database and never fails: anything that
goes wrong completes nothing.
"""

from __future__ import annotations

import contextlib
import os

import typer

from ..config import choose_config, find_config, load_config
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
    with contextlib.suppress(RatchetError, OSError):
        given = ctx.params.get("store")
        source = ctx.get_parameter_source("store")
        if given and source is not None and source.name != "DEFAULT":  # --store, or RATCHET_STORE
            url = str(given)
        else:
            url = os.environ.get("RATCHET_STORE") or _configured_store(ctx) or DEFAULT_STORE_URL
        return run_async(_task_ids(url, incomplete))
    return []


def _configured_store(ctx: typer.Context) -> str | None:
    """The store ratchet.toml (or ``ratchet --config FILE``) names, if any."""
    config = ctx.find_root().params.get("config")
    if config:
        choose_config(config, given_by="--config")
    path = find_config()
    return None if path is None else load_config(path).store.url


async def _task_ids(url: str, incomplete: str) -> list[str]:
    async with open_store_for(url, create=False) as store:
        # The ids alone, not every record; those that start with what was typed, by their index.
        where = TaskFilter(id_prefix=incomplete or None)
        rows = await store.list_task_rows(where, order=TaskOrder(descending=True), limit=COMPLETIONS)
    return [row.id for row in rows]
