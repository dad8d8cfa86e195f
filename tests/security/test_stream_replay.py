"""Fifty clients replaying a 10,000-event history leave the server answering everyone else.

Anyone who may read the streams can open fifty of them from the start of a
long history. Each replay reads and sends without ever waiting (an SQLite
read does not, nor a write to a client that keeps up), so before, the server
answered nothing else until the replays were done: `/api/health` took
minutes. A real `ratchet serve` over each store, fifty clients in a process
of their own, and the time of every health answer meanwhile; 200 ms is the
bound a health check must keep.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import httpx

from ratchet.records import Event, TaskStatus
from ratchet.store import open_store

from ..dashboard.support import serving
from ..helpers.builders import make_task
from ..helpers.cli import LineReader, ratchet_env

CLIENTS = Path(__file__).with_name("replay_clients.py")
EVENTS = 10_000
REPLAYING = 50
SECONDS = 6.0
HEALTH_BOUND = 0.2  # seconds
TASK = "t-long"


async def _long_history(url: str) -> None:
    store = await open_store(url)
    try:
        await store.create_task(make_task(TASK, status=TaskStatus.RUNNING))
        for start in range(0, EVENTS, 1000):
            async with store.transaction() as tx:
                for n in range(start, start + 1000):
                    await tx.append_event(
                        Event(task_id=TASK, kind="progress", message=f"event {n} " + "x" * 60)
                    )
    finally:
        await store.close()


def test_fifty_clients_replaying_a_long_stream_keep_health_under_200_ms(tmp_path: Path, url: str) -> None:
    asyncio.run(_long_history(url))

    latencies: list[float] = []
    with serving(tmp_path, url) as server, httpx.Client(base_url=server.base, timeout=60) as probe:
        assert probe.get("/api/health").status_code == 200  # the connection is open before timing
        clients = subprocess.Popen(
            [
                sys.executable,
                str(CLIENTS),
                server.base,
                f"/api/tasks/{TASK}/events/stream",
                str(REPLAYING),
                str(SECONDS),
            ],
            env=ratchet_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert clients.stdout is not None
            output = LineReader(clients.stdout)
            output.wait_for("replaying", 60)
            while clients.poll() is None:
                started = time.perf_counter()
                health = probe.get("/api/health")
                latencies.append(time.perf_counter() - started)
                assert health.status_code == 200
                time.sleep(0.05)
            results = json.loads(output.rest(60)[-1])
        finally:
            clients.kill()
            clients.wait()

    slowest = sorted(latencies)[-5:]
    assert len(latencies) >= 20 and max(latencies) < HEALTH_BOUND, f"slowest health answers (s): {slowest}"
    assert len(results) == REPLAYING
    assert all(result["in_order"] for result in results)
    assert min(result["received"] for result in results) >= 100, results  # a page each, at least
