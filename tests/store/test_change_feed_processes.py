"""A change feed hears what another process commits: by NOTIFY on PostgreSQL, by a short poll on SQLite."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ratchet.store.changes import TRIGGERS, events_topic

from ..helpers.builders import make_task
from ..helpers.stores import STORE_URLS, discard, opened

WRITER = """
import asyncio, sys
from ratchet import open_store
from ratchet.records import Event, Trigger

async def main(url, what):
    store = await open_store(url)
    try:
        if what == "event":
            await store.append_event(Event(task_id="t1", kind="step", message="from afar"))
        else:
            await store.put_trigger(Trigger(kind="wake", task_id="t1"))
    finally:
        await store.close()

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    found = STORE_URLS[request.param](tmp_path)
    yield found
    discard(found)


@pytest.mark.parametrize(("what", "topic"), [("event", events_topic("t1")), ("trigger", TRIGGERS)])
async def test_a_feed_hears_another_process_commit(url: str, what: str, topic: str) -> None:
    async with opened(url) as store:
        await store.create_task(make_task("t1"))
        async with store.changes(topic) as feed:
            writer = await asyncio.create_subprocess_exec(sys.executable, "-c", WRITER, url, what)
            assert await writer.wait() == 0
            wrote = time.monotonic()
            heard = await feed.wait(10)
            waited = time.monotonic() - wrote
        if url.startswith("postgresql"):
            assert heard, "NOTIFY did not reach the feed"
            assert waited < 1.0
        else:
            assert waited <= 0.5  # SQLite cannot hear it: the feed looks again after its poll
        found = await (store.list_events("t1") if what == "event" else store.list_triggers("t1"))
        assert len(found) == 1
