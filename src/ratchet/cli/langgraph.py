"""`ratchet langgraph import`: copy a LangGraph SqliteSaver or PostgresSaver database into the store.

The work is `ratchet.integrations.langgraph`'s (`import_checkpoints`, read by
the source's own saver, written by `RatchetSaver`), loaded only when the
command runs: the CLI works without the ``[langgraph]`` extra, and this
command names its extra (`[langgraph-import]`) in one line when it is missing.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import MissingExtra
from ..store import DEFAULT_STORE_URL, redact_url
from . import json_output, render
from .options import ForceOpenOption, JsonOption, StoreOption
from .store_access import open_store_for, run_async

__all__ = ["langgraph_app"]

langgraph_app = typer.Typer(name="langgraph", invoke_without_command=True)


@langgraph_app.callback()
def _group(ctx: typer.Context) -> None:
    """LangGraph on Ratchet's store: import a SqliteSaver or PostgresSaver database."""
    if ctx.invoked_subcommand is None:  # as `ratchet` alone: the help, exit 0
        typer.echo(ctx.get_help())


@langgraph_app.command("import")
def import_command(
    source: Annotated[
        str,
        typer.Option(
            "--from",
            metavar="URL",
            help="The database to copy: sqlite:///PATH (SqliteSaver) or postgresql://... (PostgresSaver).",
        ),
    ],
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    as_json: JsonOption = False,
) -> None:
    """Copy every thread of a LangGraph SqliteSaver or PostgresSaver database into the store.

    Each checkpoint (its metadata, parent and pending writes) is read by
    LangGraph's own saver and written by RatchetSaver, so a graph compiled
    with RatchetSaver on --store goes on from any imported thread. The source
    is only read. Run it again safely: checkpoints the store holds already
    are not copied again (docs/integrations.md).
    """
    done = run_async(_import(source, store, quiet=as_json))
    if as_json:
        json_output.print_json({"source": redact_url(source), **done})
        return
    render.print_line(
        f"imported {done['checkpoints']} checkpoints and {done['writes']} pending writes "
        f"of {done['threads']} threads from {redact_url(source)}; "
        f"{done['skipped']} checkpoints were in the store already"
    )


async def _import(source_url: str, store_url: str, *, quiet: bool) -> dict[str, int]:
    try:
        from ..integrations.langgraph import RatchetSaver
        from ..integrations.langgraph._import import Imported, import_checkpoints
        from ..integrations.langgraph._sources import open_source
    except MissingExtra as missing:  # the bridge's own line names its extra; this command needs more
        raise MissingExtra("`ratchet langgraph import`", "LangGraph", "langgraph-import") from missing

    def progress(thread_id: str, done: Imported) -> None:
        if not quiet:
            print(f"thread {thread_id!r}: {done.checkpoints} checkpoints copied so far", file=sys.stderr)

    with open_source(source_url) as source:
        async with open_store_for(store_url, create=True) as store:
            saver = RatchetSaver(store)
            try:
                imported = await import_checkpoints(source, saver, progress=progress)
            finally:  # its threads' leases, and a thread stopped mid-run waits for a person (not a crash)
                await saver.arelease()
    return imported.as_json()
