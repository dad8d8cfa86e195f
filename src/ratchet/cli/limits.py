"""`ratchet limit set|list|delete`: the rate and concurrency limits every worker honours.

A key is a model (``openai:gpt-4o``), an endpoint of ``ratchet.toml`` or a
provider (``gpu``, ``openai``), or a queue (``queue:NAME``); its limits are
kept in the store, so every worker on it takes its turns under them
(docs/rate-limits.md).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import typer

from ..errors import InputError
from ..limits import MAX_COUNT
from ..records import Limit, utcnow
from ..records.limit import QUEUE_PREFIX, check_limit_key
from ..store import DEFAULT_STORE_URL
from . import json_output, render
from .options import ForceOpenOption, JsonOption, StoreOption
from .store_access import open_store_for, run_async

__all__ = ["limit_app"]

limit_app = typer.Typer(name="limit", invoke_without_command=True)

_COUNT: dict[str, Any] = {"min": 1, "max": MAX_COUNT, "metavar": "N"}


@limit_app.callback()
def _group(ctx: typer.Context) -> None:
    """Set, list and delete the rate and concurrency limits every worker honours."""
    if ctx.invoked_subcommand is None:  # as `ratchet` alone: the help, exit 0
        typer.echo(ctx.get_help())


def _checked_key(key: str) -> str:
    """`key`, once it names a queue, a model or prefix Ratchet knows.

    Raises:
        InputError: it does not.
    """
    check_limit_key(key)
    if key.startswith(QUEUE_PREFIX):
        return key
    from ..providers.registry import is_model_prefix  # the providers load only for this check

    prefix = key.partition(":")[0]
    if not is_model_prefix(prefix):
        raise InputError(
            f"limit key {key!r}: {prefix!r} is neither a provider nor an endpoint of ratchet.toml "
            "([endpoints.NAME]); a queue's key is queue:NAME"
        )
    return key


@limit_app.command("set")
def set_command(
    key: Annotated[
        str, typer.Argument(metavar="KEY", help="openai:gpt-4o, an endpoint (gpu), or queue:NAME.")
    ],
    rpm: Annotated[
        int | None, typer.Option("--rpm", help="Requests a minute, spaced evenly (60/N s apart).", **_COUNT)
    ] = None,
    tpm: Annotated[
        int | None,
        typer.Option(
            "--tpm", help="Tokens a minute: each call is charged an estimate, settled after.", **_COUNT
        ),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            help="Calls in flight at once (on queue:NAME: its tasks running at once), across all workers.",
            **_COUNT,
        ),
    ] = None,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    as_json: JsonOption = False,
) -> None:
    """Set KEY's limits, replacing those it had; every worker holds to them from its next call."""
    if rpm is None and tpm is None and concurrency is None:
        raise InputError("give at least one of --rpm N, --tpm N, --concurrency N")
    limit = Limit(key=_checked_key(key), rpm=rpm, tpm=tpm, concurrency=concurrency)
    stored = run_async(_set(store, limit))
    if as_json:
        json_output.print_json(_limit_json(stored))
        return
    render.print_line(f"{stored.key}: {stored.describe()}")


@limit_app.command("list")
def list_command(
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    as_json: JsonOption = False,
) -> None:
    """List the keys with limits, by key, and those a provider's Retry-After holds now."""
    now = utcnow()
    limits = [
        limit
        for limit in run_async(_list(store))
        if limit.is_set or (limit.blocked_until is not None and limit.blocked_until > now)
    ]
    if as_json:
        json_output.print_json([_limit_json(limit) for limit in limits])
        return
    if not limits:
        render.print_line("no limits (`ratchet limit set KEY --rpm N` sets one)")
        return
    width = max(len(limit.key) for limit in limits)
    for limit in limits:
        blocked = _blocked_text(limit, now)
        render.print_line(f"{limit.key:<{width}}  {limit.describe()}{blocked}")


@limit_app.command("delete")
def delete_command(
    key: Annotated[str, typer.Argument(metavar="KEY", help="The key whose limits to forget.")],
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
) -> None:
    """Delete KEY's limits: its calls (or its queue's tasks) go unlimited from now on."""
    check_limit_key(key)
    if not run_async(_delete(store, key)):
        raise InputError(f"no limit has the key {key!r}; `ratchet limit list` lists them")
    render.print_line(f"{key}: limits deleted")


def _blocked_text(limit: Limit, now: dt.datetime) -> str:
    if limit.blocked_until is None or limit.blocked_until <= now:
        return ""
    return f"  (blocked until {limit.blocked_until:%H:%M:%S} UTC: the provider's Retry-After)"


def _limit_json(limit: Limit) -> dict[str, Any]:
    return {
        "key": limit.key,
        "rpm": limit.rpm,
        "tpm": limit.tpm,
        "concurrency": limit.concurrency,
        "blocked_until": None if limit.blocked_until is None else limit.blocked_until.isoformat(),
    }


async def _set(url: str, limit: Limit) -> Limit:
    async with open_store_for(url, create=True) as store:
        return await store.set_limit(limit)


async def _list(url: str) -> list[Limit]:
    async with open_store_for(url, create=False) as store:
        return await store.list_limits()


async def _delete(url: str, key: str) -> bool:
    async with open_store_for(url, create=False) as store:
        return await store.delete_limit(key)
