"""The metrics' gauges, read from every kind of store at scrape time, and the ASGI app serving them."""

from __future__ import annotations

import datetime as dt

import httpx

from ratchet import Runtime
from ratchet.observe.metrics import Metrics, metrics_asgi_app
from ratchet.records import TaskStatus, utcnow
from ratchet.store import StateStore

from ..cli.task_support import flow
from .metrics_support import parse, value


async def test_the_gauges_count_tasks_and_due_triggers(store: StateStore) -> None:
    metrics = Metrics(store)
    empty = parse((await metrics.exposition()).decode())
    assert value(empty, "ratchet_queue_depth") == 0
    assert value(empty, "ratchet_oldest_due_trigger_age_seconds") == 0
    assert value(empty, "ratchet_tasks", status="queued") == 0

    runtime = Runtime(store)
    for who in ("ann", "bob"):
        await runtime.submit(flow("greet"), {"who": who})
    queued = parse((await metrics.exposition()).decode())
    assert value(queued, "ratchet_tasks", status="queued") == 2
    assert value(queued, "ratchet_tasks", status="completed") == 0
    assert value(queued, "ratchet_queue_depth") == 2
    assert value(queued, "ratchet_oldest_due_trigger_age_seconds") >= 0

    assert await store.count_tasks_by_status() == {TaskStatus.QUEUED: 2}
    later = utcnow() + dt.timedelta(minutes=1)
    due, oldest = await store.due_trigger_summary(later)
    assert due == 2 and oldest is not None and 59 <= (later - oldest).total_seconds() <= 120
    assert await store.due_trigger_summary(utcnow() - dt.timedelta(minutes=1)) == (0, None)


async def test_the_asgi_app_serves_the_metrics_at_a_route(store: StateStore) -> None:
    import fastapi  # the serve extra: how ``ratchet serve`` routes it

    app = fastapi.FastAPI()
    # An ASGI instance, which Starlette's Route hands the raw call (its types name only functions).
    app.add_route("/metrics", metrics_asgi_app(store), include_in_schema=False)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        answer = await client.get("/metrics")
        refused = await client.post("/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    assert value(parse(answer.text), "ratchet_tasks", status="running") == 0
    assert ("ratchet_tasks", frozenset({("status", "running")})) in parse(answer.text)
    assert refused.status_code == 405
