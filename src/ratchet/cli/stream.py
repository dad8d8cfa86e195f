"""`ratchet stream`: print a task's stream as it is written, until the task ends.

A model's text comes as it is written, each attempt of a call set apart, a
workflow's values as ``key: JSON`` lines (`StreamText`); with ``--json``, each
entry as one JSON line, its ``offset`` what ``--from`` takes to go on after it
(the offset after the last one printed: nothing missed, nothing twice). It
never writes; the store is opened with ``create=False``.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..runtime.streams import follow_stream
from ..store import DEFAULT_STORE_URL
from . import json_output, render
from .exits import EXIT_INTERRUPTED
from .options import ForceOpenOption, StoreOption, TaskArgument
from .store_access import open_for_task, run_async
from .stream_text import StreamText

__all__ = ["stream_command"]

# The longest wait for news when nothing is heard; SQLite looks every 0.2 s anyway (the store's poll).
FOLLOW_IDLE_SECONDS = 30.0

_OFFSET_MAX = 2**63 - 1  # the databases' integers


def stream_command(
    task_id: TaskArgument,
    from_offset: Annotated[
        int,
        typer.Option(
            "--from",
            metavar="OFFSET",
            min=0,
            max=_OFFSET_MAX,
            help="Start at this offset (0: the first entry); to go on, one after the last printed.",
        ),
    ] = 0,
    no_follow: Annotated[
        bool, typer.Option("--no-follow", help="Print what is stored now and exit; do not wait for more.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per entry, its offset in it, one a line.")
    ] = False,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
) -> None:
    """Print a task's stream (its model's text as written, its workflow's values) until the task ends.

    An attempt of a model call that was cut off, stopped or failed says so on
    a line of its own, and the next attempt (also the same attempt begun
    again after its worker was killed) starts on a line of its own. With
    --json, one JSON object per entry; --from OFFSET starts at that entry
    (one after the last printed goes on without a gap).
    Exit code 0 once the task has ended and all of it is printed (at once
    with --no-follow), 2 bad input (no such task), 130 Ctrl-C.
    """
    text = StreamText(sys.stdout)
    try:
        follow = not no_follow
        run_async(_print_stream(store, task_id, from_offset, follow=follow, text=text, as_json=as_json))
    except KeyboardInterrupt:  # following ends quietly, the line it was writing ended first
        text.end_line()
        text.flush()
        raise typer.Exit(EXIT_INTERRUPTED) from None
    text.end_line()
    render.flush()


async def _print_stream(
    url: str, task_id: str, from_offset: int, *, follow: bool, text: StreamText, as_json: bool
) -> None:
    async with open_for_task(url, task_id) as store:
        await store.get_task(task_id)  # no such task is bad input, not an empty stream
        async for batch in follow_stream(
            store, task_id, from_offset=from_offset, follow=follow, idle=FOLLOW_IDLE_SECONDS
        ):
            for entry in batch:
                if as_json:
                    json_output.print_json_line(json_output.stream_entry_json(entry))
                else:
                    text.show(entry)
            render.flush()
