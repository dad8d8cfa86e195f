"""`ratchet demo`: the command that tells the deploy story (see `ratchet.demo.orchestration`).

It picks the demo's directory, hands the story the CLI's console, and turns
how the story ended into an exit code.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from ..demo.orchestration import DemoFailed, run_demo
from ..demo.paths import DemoPaths
from ..demo.report import Report
from ..demo.team_story import TeamModels, run_team_demo
from ..errors import InputError
from ..printable import plain
from ..store import redact_url, store_from_url
from ..store.sql.sqlite import SqliteStore
from .exits import EXIT_FAILED, EXIT_INTERRUPTED
from .render import console, print_line
from .store_access import open_store_for, run_async

__all__ = ["demo_command"]


def demo_command(
    story: Annotated[
        str,
        typer.Argument(
            metavar="STORY",
            help="deploy (the default): one agent deploys a service. "
            "team: an architect, coders as child tasks and a reviewer build a package.",
        ),
    ] = "deploy",
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="URL",
            help="A SQLite store for the demo (sqlite:///PATH); its ledger and script go beside it, "
            "and nothing is removed. Default: a new temporary directory.",
        ),
    ] = None,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the temporary directory to look at afterwards.")
    ] = False,
    architect_model: Annotated[
        str | None, typer.Option("--architect-model", metavar="MODEL", help="team: the architect's model.")
    ] = None,
    coder_model: Annotated[
        str | None, typer.Option("--coder-model", metavar="MODEL", help="team: the coders' model.")
    ] = None,
    reviewer_model: Annotated[
        str | None, typer.Option("--reviewer-model", metavar="MODEL", help="team: the reviewer's model.")
    ] = None,
) -> None:
    """Deploy a service with a scripted agent, kill its worker mid-deploy, resume: every effect once.

    `ratchet demo team` tells the same story with a team of agents (an
    architect, coder child tasks, a reviewer), each role with its own model.

    Needs no API key and no network (unless a --ROLE-model names a provider).
    Exit code: 0 when every effect happened exactly once, 1 when anything went
    wrong (the output says what), 2 bad input.
    RATCHET_STORE is not read: the demo never writes to your store unless --store names it.
    """
    if story not in ("deploy", "team"):
        raise InputError(f"unknown demo {story!r}: choose deploy or team")
    models = TeamModels(architect_model, coder_model, reviewer_model)
    if story == "deploy" and models != TeamModels():
        raise InputError("--architect-model, --coder-model and --reviewer-model are for `ratchet demo team`")
    paths, temporary = _demo_paths(store)
    kept = keep or not temporary
    try:
        if story == "team":
            task_id = run_async(run_team_demo(paths, Report(console), models))
        else:
            task_id = run_async(run_demo(paths, Report(console)))
    except DemoFailed as failure:
        console.print(plain(f"demo failed: {failure}", style="bold red"), soft_wrap=True)
        _point_to(paths, None)  # kept even without --keep: what went wrong is in there
        raise typer.Exit(EXIT_FAILED) from None
    except Exception as error:
        failed = plain(f"demo failed: {type(error).__name__}: {error}", style="bold red")
        console.print(failed, soft_wrap=True)
        _point_to(paths, None)
        raise typer.Exit(EXIT_FAILED) from None
    except KeyboardInterrupt:
        _clean_up(paths, kept)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if kept:
        _point_to(paths, task_id)
    else:
        _clean_up(paths, kept)


def _demo_paths(url: str | None) -> tuple[DemoPaths, bool]:
    """Where the demo's files go, and whether that directory is a temporary one of its own.

    Raises:
        InputError: `url` is not a SQLite store URL.
        StoreError: `url` names a database Ratchet did not write (another
            application's, a damaged one, a newer Ratchet's): refused before
            the demo writes a file beside it.
    """
    if url is None:
        directory = Path(tempfile.mkdtemp(prefix="ratchet-demo-")).resolve()
        database, query = directory / "demo.db", ""
        temporary = True
    else:
        store = store_from_url(url)
        if not isinstance(store, SqliteStore):
            raise InputError(
                f"ratchet demo needs a SQLite store (sqlite:///PATH), not {redact_url(url)!r}: "
                "its workers are other processes, which must reach the same file"
            )
        database, query = store.path.resolve(), url.partition("?")[2]
        if database.exists():
            run_async(_refuse_another_database(url))
        directory = database.parent
        directory.mkdir(parents=True, exist_ok=True)
        temporary = False
    store_url = f"sqlite:///{database}" + (f"?{query}" if query else "")
    return DemoPaths.beside(directory, store_url), temporary


async def _refuse_another_database(url: str) -> None:
    async with open_store_for(url, create=False):
        pass  # it opened: a Ratchet database, the demo's task joins its tasks


def _point_to(paths: DemoPaths, task_id: str | None) -> None:
    store = f"--store {paths.store_url}"
    look = (
        f"`ratchet show {task_id} {store}`, `ratchet journal {task_id} {store}` (each call, the one "
        f"in doubt and how it was settled), `ratchet events {task_id} {store}`"
        if task_id
        else f"`ratchet tasks {store}`"
    )
    print_line(
        f"The demo's files stay in {paths.directory}. Look around with {look}, "
        f"or `sqlite3 {paths.ledger} 'select * from effects'`."
    )


def _clean_up(paths: DemoPaths, kept: bool) -> None:
    if not kept:
        shutil.rmtree(paths.directory, ignore_errors=True)
        print_line(f"Removed {paths.directory} (run with --keep to look at it afterwards).")
