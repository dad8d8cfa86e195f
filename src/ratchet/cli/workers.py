"""`ratchet workers`: the store's live workers, idle ones included, their slots and the tasks they hold.

The list is `ratchet.views.workers`', the one ``GET /api/workers`` of
`ratchet serve` answers: each worker's record of itself (kept while it
runs) joined with the leases it holds. A table gives its times relative to
now; ``--json`` gives them exactly, with every field the API gives.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from ..errors import StoreNotFound
from ..printable import plain
from ..records import utcnow
from ..store import DEFAULT_STORE_URL, redact_url
from ..views.workers import WorkerView, list_workers, worker_json
from . import json_output, render
from .options import ForceOpenOption, JsonOption, StoreOption
from .relative_time import relative_time
from .store_access import open_store_for, run_async
from .tables import Listing

__all__ = ["workers_command"]


def workers_command(
    store: StoreOption = DEFAULT_STORE_URL, force_open: ForceOpenOption = False, as_json: JsonOption = False
) -> None:
    """List the live workers, idle ones included: slots in use, tasks held, last heartbeat.

    A worker (`ratchet worker`) records itself when it starts and at each
    heartbeat (every third of its --lease-ttl), and removes its record when
    it stops gracefully. One stopped without a word (killed) is listed until
    three lease TTLs pass without a heartbeat, and after that only while its
    tasks' leases still name it (as `gone`). A process that holds tasks
    without a record of its own (`ratchet run`) is listed by its leases.
    """
    now = utcnow()
    listed = run_async(_list(store, now))
    if as_json:
        json_output.print_json([worker_json(worker, now) for worker in listed])
        return
    if not listed:
        render.print_line(
            f"no live worker on {redact_url(store)}; `{render.command('worker', store_url=store)}` starts one"
        )
        return
    _print_workers(listed, now)


async def _list(url: str, now: dt.datetime) -> list[WorkerView]:
    try:
        async with open_store_for(url, create=False) as opened, opened.reading() as tx:
            return await list_workers(tx, now)
    except StoreNotFound:
        return []  # nothing was ever stored there: no worker ever ran on it


def _print_workers(listed: Sequence[WorkerView], now: dt.datetime) -> None:
    listing = Listing()
    listing.id_column("worker")
    listing.word_column("state", whole=True)
    listing.word_column("host")
    listing.word_column("pid", justify="right")
    listing.word_column("slots", justify="right")
    listing.id_column("tasks")
    listing.word_column("started")
    listing.word_column("heartbeat")
    for worker in listed:
        concurrency = "-" if worker.presence is None else str(worker.presence.concurrency)
        listing.add_row(
            plain(worker.name),
            "live" if worker.live(now) else "gone",
            plain(worker.host),
            str(worker.pid) if worker.pid else "-",
            f"{len(worker.held(now))}/{concurrency}",
            plain("\n".join(lease.task_id for lease in worker.leases) or "-"),  # one id a line, whole
            relative_time(None if worker.presence is None else worker.presence.started_at, now),
            relative_time(worker.heartbeat_at, now),
        )
    listing.print(render.console)
