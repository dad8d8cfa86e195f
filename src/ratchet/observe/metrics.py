"""Prometheus metrics: what this process did (counters), and what the store holds (read at scrape).

`Metrics` owns its own registry (nothing global): the counters the engine
reports to while `recording` (calls, retries, in-doubt calls, takeovers,
journal commit latency), and gauges read from the store each time the
metrics are scraped (tasks by status, due triggers, the oldest one's age).
`metrics_asgi_app` serves them to any ASGI server (``ratchet serve`` mounts
it at ``/metrics``); `serve_metrics` serves them on a port of their own
(``ratchet worker --metrics-port``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

from ..providers.base import require_library
from ..records import TaskStatus, utcnow
from ..store import StateStore
from ..trust.hosts import ServedNames

__all__ = ["Metrics", "MetricsApp", "metrics_asgi_app", "serve_metrics"]

# Commit times, in seconds: from a fast local SQLite commit to a slow remote PostgreSQL one.
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Metrics:
    """This process's counters and the store's gauges, in one registry.

    Args:
        store: the store whose tasks and triggers the gauges count.

    Raises:
        MissingExtra: prometheus-client is not installed (``pip install 'ratchet[metrics]'``).
    """

    def __init__(self, store: StateStore) -> None:
        require_library("prometheus_client", feature="metrics", library="prometheus-client", extra="metrics")
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.store = store
        self.registry = CollectorRegistry()
        r = self.registry
        self.calls = Counter(
            "ratchet_calls", "Live calls that ended, by kind and outcome.", ["kind", "outcome"], registry=r
        )
        self.retries = Counter(
            "ratchet_call_retries", "Failed call attempts tried again.", ["kind"], registry=r
        )
        self.in_doubt_calls = Counter(
            "ratchet_in_doubt_calls", "Tool calls found in flight (started, no result) on resume.", registry=r
        )
        self.takeovers = Counter(
            "ratchet_lease_takeovers", "Runs that picked up a task another run left running.", registry=r
        )
        self.commit_seconds = Histogram(
            "ratchet_journal_commit_seconds",
            "Time to commit a journal write.",
            buckets=COMMIT_BUCKETS,
            registry=r,
        )
        self.tasks = Gauge("ratchet_tasks", "Tasks in the store, by status.", ["status"], registry=r)
        self.queue_depth = Gauge("ratchet_queue_depth", "Triggers due now, waiting for a worker.", registry=r)
        self.oldest_due = Gauge(
            "ratchet_oldest_due_trigger_age_seconds",
            "How long the oldest due trigger has waited (0 when none is due).",
            registry=r,
        )

    # The engine's reports (`ratchet.observe.recording.Recorder`).

    def call_ended(self, kind: str, outcome: str) -> None:
        self.calls.labels(kind=kind, outcome=outcome).inc()

    def retried(self, kind: str, count: int) -> None:
        self.retries.labels(kind=kind).inc(count)

    def in_doubt(self) -> None:
        self.in_doubt_calls.inc()

    def took_over(self) -> None:
        self.takeovers.inc()

    def committed(self, seconds: float) -> None:
        self.commit_seconds.observe(seconds)

    async def exposition(self) -> bytes:
        """Read the store's gauges now and return every metric in Prometheus's text format."""
        from prometheus_client import generate_latest

        counts = await self.store.count_tasks_by_status()
        for status in TaskStatus:
            self.tasks.labels(status=str(status)).set(counts.get(status, 0))
        now = utcnow()
        due, oldest = await self.store.due_trigger_summary(now)
        self.queue_depth.set(due)
        self.oldest_due.set(0 if oldest is None else max((now - oldest).total_seconds(), 0.0))
        return bytes(generate_latest(self.registry))


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def metrics_asgi_app(store: StateStore, metrics: Metrics | None = None) -> MetricsApp:
    """An ASGI app answering GET with the metrics; route ``/metrics`` to it.

    In FastAPI or Starlette: ``app.add_route("/metrics", metrics_asgi_app(store),
    include_in_schema=False)`` (an instance, not a function, so the route
    hands it the raw ASGI call; ``app.mount`` would redirect ``/metrics`` to
    ``/metrics/``). Without `metrics`, the app has its own: the store's
    gauges, and counters that stay at 0 unless tasks run here while
    `recording` it.
    """
    return MetricsApp(metrics or Metrics(store))


class MetricsApp:
    """The ASGI app of `metrics_asgi_app`."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope.get("method", "GET") not in ("GET", "HEAD"):
            await _answer(send, 405, b"use GET\n", "text/plain; charset=utf-8")
            return
        await _answer(send, 200, await self.metrics.exposition(), CONTENT_TYPE)


async def _answer(send: Send, status: int, body: bytes, content_type: str) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextlib.asynccontextmanager
async def serve_metrics(
    metrics: Metrics, port: int, host: str = "127.0.0.1", names: ServedNames | None = None
) -> AsyncIterator[asyncio.Server]:
    """Serve ``GET /metrics`` on `host`:`port` in this event loop while the block runs.

    A small HTTP/1.0 server of its own (no web framework needed): one
    request per connection, the metrics read from the store as it comes.
    Like ``ratchet serve``, it answers only a ``Host`` that names it (a
    loopback name or the address reached, at its port, or one of `names`):
    421 otherwise, so a web page cannot read it through DNS rebinding.
    """
    names = names or ServedNames()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            first, *lines = request.decode("latin-1").split("\r\n")
            method, _, rest = first.partition(" ")
            path = rest.split(" ", 1)[0].split("?", 1)[0]
            refusal = names.refusal(_scope(lines, writer))
            if refusal is not None:
                status, body, kind = (
                    f"{refusal[0]} {'Misdirected Request' if refusal[0] == 421 else 'Forbidden'}",
                    refusal[1].encode() + b"\n",
                    "text/plain; charset=utf-8",
                )
            elif method not in ("GET", "HEAD"):
                status, body, kind = "405 Method Not Allowed", b"use GET\n", "text/plain; charset=utf-8"
            elif path != "/metrics":
                status, body, kind = (
                    "404 Not Found",
                    b"metrics are at /metrics\n",
                    "text/plain; charset=utf-8",
                )
            else:
                status, body, kind = "200 OK", await metrics.exposition(), CONTENT_TYPE
            head = f"HTTP/1.0 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n\r\n"
            writer.write(head.encode() + (b"" if method == "HEAD" else body))
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(answer, host, port)
    try:
        yield server
    finally:
        server.close()
        await server.wait_closed()


def _scope(lines: list[str], writer: asyncio.StreamWriter) -> dict[str, Any]:
    """What `ServedNames` reads of a request: its headers and the address it came in on."""
    headers = [
        (name.strip().lower().encode("latin-1"), value.strip().encode("latin-1"))
        for name, sep, value in (line.partition(":") for line in lines)
        if sep
    ]
    local = writer.get_extra_info("sockname")
    server = (str(local[0]), int(local[1])) if isinstance(local, tuple) else None
    return {"headers": headers, "server": server, "scheme": "http"}
