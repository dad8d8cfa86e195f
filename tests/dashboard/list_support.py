"""What the task list's browser tests share: tasks made through the real runtime, and the rows read back.

The tasks are queued `leaf` workflows (`tests.helpers.task_page_flows`) on the
SQLite file `ratchet serve` reads; no worker runs them unless a test starts
one, so they stay as made until a test moves them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import Page

from ratchet.runtime import Runtime

from ..helpers.task_page_flows import FLOWS, on_store


def make_tasks(store: str, names: Sequence[str], labels: Mapping[str, str] | None = None) -> list[str]:
    """Queue a task named each of `names`, in that order (so the last is the newest); their ids."""

    async def submit(rt: Runtime) -> list[str]:
        return [await rt.submit(f"{FLOWS}:leaf", {"label": name}, name=name, labels=labels) for name in names]

    return on_store(store, submit)


def cancel(store: str, task_id: str, reason: str = "cancelled by the test") -> None:
    """Cancel a task as any other client would, through the runtime."""

    async def stop(rt: Runtime) -> None:
        await rt.cancel(task_id, reason=reason)

    on_store(store, stop)


def query(page: Page) -> dict[str, list[str]]:
    """The page address's query, each parameter with its values."""
    return parse_qs(urlparse(page.url).query)
