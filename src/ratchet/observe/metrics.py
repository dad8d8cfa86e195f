"""Prometheus metrics: what this process did (counters, histograms), and what the store holds (gauges).

`Metrics` owns its own registry (nothing global): what the engine reports
to it while `recording` (calls and their durations by kind, model and tool,
tokens and cost, retries, in-doubt calls, takeovers, journal commit latency,
tasks' durations, the worker's slots), and gauges read from the store each
time the metrics are scraped (tasks by status, due triggers, the oldest
one's age). prometheus-client writes them, in Prometheus's text format or
in OpenMetrics when the scraper asks for it (``Accept:
application/openmetrics-text``). `metrics_asgi_app` serves them to any
ASGI server (``ratchet serve`` mounts it at ``/metrics``); `serve_metrics`
serves them on a port of their own (``ratchet worker --metrics-port``).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from ..providers.base import require_library
from ..records import TaskStatus, utcnow
from ..store import StateStore
from ..trust.hosts import ServedNames
from .measured import CALL_BUCKETS, TASK_BUCKETS, MeasuredCall

__all__ = ["CALL_BUCKETS", "TASK_BUCKETS", "Metrics", "MetricsApp", "metrics_asgi_app", "serve_metrics"]

# Commit times, in seconds: from a fast local SQLite commit to a slow remote PostgreSQL one.
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Metrics:
    """This process's counters and histograms and the store's gauges, in one registry.

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
        self.call_seconds = Histogram(
            "ratchet_call_duration_seconds",
            "Live calls, from their start in this process to their outcome committed, by kind and outcome.",
            ["kind", "outcome"],
            buckets=CALL_BUCKETS,
            registry=r,
        )
        self.model_call_seconds = Histogram(
            "ratchet_model_call_duration_seconds",
            "Live model calls, by model (provider:name) and outcome.",
            ["model", "outcome"],
            buckets=CALL_BUCKETS,
            registry=r,
        )
        self.tool_call_seconds = Histogram(
            "ratchet_tool_call_duration_seconds",
            "Live tool calls, by tool and outcome.",
            ["tool", "outcome"],
            buckets=CALL_BUCKETS,
            registry=r,
        )
        self.tokens = Counter(
            "ratchet_model_tokens",
            "Tokens the live model calls used, by agent, model and type (input, output).",
            ["agent", "model", "type"],
            registry=r,
        )
        self.cost = Counter(
            "ratchet_model_cost_usd",
            "US dollars the live model calls cost as priced when they ran, by agent and model.",
            ["agent", "model"],
            registry=r,
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
        self.task_seconds = Histogram(
            "ratchet_task_duration_seconds",
            "Tasks ended here, from their first start to their end, by agent (or workflow) and outcome.",
            ["agent", "outcome"],
            buckets=TASK_BUCKETS,
            registry=r,
        )
        self.slots_in_use = Gauge(
            "ratchet_worker_slots_in_use", "Worker slots running a task in this process.", registry=r
        )
        self.slots_free = Gauge(
            "ratchet_worker_slots_free", "Worker slots free to take a task in this process.", registry=r
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

    def call_measured(self, call: MeasuredCall) -> None:
        self.call_seconds.labels(kind=call.kind, outcome=call.outcome).observe(call.seconds)
        if call.tool is not None:
            self.tool_call_seconds.labels(tool=call.tool, outcome=call.outcome).observe(call.seconds)
        if call.model is None:
            return
        self.model_call_seconds.labels(model=call.model, outcome=call.outcome).observe(call.seconds)
        for kind, count in (("input", call.input_tokens), ("output", call.output_tokens)):
            if count:
                self.tokens.labels(agent=call.agent, model=call.model, type=kind).inc(count)
        if call.cost:
            self.cost.labels(agent=call.agent, model=call.model).inc(call.cost)

    def retried(self, kind: str, count: int) -> None:
        self.retries.labels(kind=kind).inc(count)

    def in_doubt(self) -> None:
        self.in_doubt_calls.inc()

    def took_over(self) -> None:
        self.takeovers.inc()

    def committed(self, seconds: float) -> None:
        self.commit_seconds.observe(seconds)

    def task_ended(self, agent: str, outcome: str, seconds: float) -> None:
        self.task_seconds.labels(agent=agent, outcome=outcome).observe(seconds)

    def slots_changed(self, in_use: int, free: int) -> None:
        self.slots_in_use.inc(in_use)
        self.slots_free.inc(free)

    async def refresh(self) -> None:
        """Read the store's gauges now (each scrape does, before the metrics are written)."""
        counts = await self.store.count_tasks_by_status()
        for status in TaskStatus:
            self.tasks.labels(status=str(status)).set(counts.get(status, 0))
        now = utcnow()
        due, oldest = await self.store.due_trigger_summary(now)
        self.queue_depth.set(due)
        self.oldest_due.set(0 if oldest is None else max((now - oldest).total_seconds(), 0.0))

    async def exposition(self, accept: str = "") -> bytes:
        """Read the store's gauges now and return every metric, in the format `accept` asks for.

        Prometheus's text format, or OpenMetrics when `accept` (an ``Accept``
        header) names ``application/openmetrics-text``.
        """
        from prometheus_client.exposition import choose_encoder

        await self.refresh()
        encoder, _ = choose_encoder(accept)
        return bytes(encoder(self.registry))


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
    """The ASGI app of `metrics_asgi_app`: the store's gauges read, then prometheus-client's own app."""

    def __init__(self, metrics: Metrics) -> None:
        from prometheus_client import make_asgi_app

        self.metrics = metrics
        self._written = make_asgi_app(metrics.registry)  # the format the scraper accepts, gzip if asked

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope.get("method", "GET") not in ("GET", "HEAD"):
            body = b"use GET\n"
            headers = [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", b"%d" % len(body)),
            ]
            await send({"type": "http.response.start", "status": 405, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self.metrics.refresh()
        await self._written(scope, receive, send)


# How long a scrape waits for the store's gauges before it answers 503.
REFRESH_TIMEOUT = 10.0


@contextlib.asynccontextmanager
async def serve_metrics(
    metrics: Metrics, port: int, host: str = "127.0.0.1", names: ServedNames | None = None
) -> AsyncIterator[WSGIServer]:
    """Serve ``GET /metrics`` on `host`:`port` while the block runs, the store read in this event loop.

    prometheus-client's WSGI app on the standard library's threading HTTP
    server (no web framework needed), in a thread of its own; each scrape
    reads the store's gauges in the running event loop first. Like
    ``ratchet serve``, it answers only a ``Host`` that names it (a loopback
    name or the address reached, at its port, or one of `names`): 421
    otherwise, so a web page cannot read it through DNS rebinding.

    Raises:
        OSError: it cannot listen there (the port is taken, the host is unknown).
    """
    loop = asyncio.get_running_loop()
    app = _guarded(metrics, names or ServedNames(), loop)
    server = await asyncio.to_thread(_listen, host, port, app)
    thread = threading.Thread(target=server.serve_forever, name="ratchet:metrics", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        await asyncio.to_thread(server.shutdown)
        server.server_close()


Environ = dict[str, Any]
StartResponse = Callable[..., Any]


def _guarded(
    metrics: Metrics, names: ServedNames, loop: asyncio.AbstractEventLoop
) -> Callable[[Environ, StartResponse], Iterable[bytes]]:
    from prometheus_client import make_wsgi_app

    written = make_wsgi_app(metrics.registry)

    def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        refusal = names.refusal(_scope(environ))
        method = environ["REQUEST_METHOD"]
        if refusal is not None:
            reason = "Misdirected Request" if refusal[0] == 421 else "Forbidden"
            return _plain(start_response, f"{refusal[0]} {reason}", refusal[1])
        if method not in ("GET", "HEAD"):
            return _plain(start_response, "405 Method Not Allowed", "use GET")
        if environ.get("PATH_INFO") != "/metrics":
            return _plain(start_response, "404 Not Found", "metrics are at /metrics")
        reading = asyncio.run_coroutine_threadsafe(metrics.refresh(), loop)
        try:
            reading.result(REFRESH_TIMEOUT)
        except Exception as error:  # the store is down or slow, or the worker is stopping
            reading.cancel()
            why = str(error).splitlines()[0] if str(error) else type(error).__name__
            return _plain(start_response, "503 Service Unavailable", f"cannot read the store now: {why}")
        body = written({**environ, "REQUEST_METHOD": "GET"}, start_response)
        return [] if method == "HEAD" else body

    return app


def _plain(start_response: StartResponse, status: str, line: str) -> list[bytes]:
    body = (line + "\n").encode()
    start_response(
        status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]
    )
    return [body]


def _scope(environ: Environ) -> dict[str, Any]:
    """What `ServedNames` reads of a request: its headers and the address it came in on."""
    headers = [
        (name.encode("latin-1"), str(environ[key]).encode("latin-1"))
        for key, name in (("HTTP_HOST", "host"), ("HTTP_ORIGIN", "origin"))
        if key in environ
    ]
    return {"headers": headers, "server": environ.get(_LOCAL), "scheme": "http"}


_LOCAL = "ratchet.local_address"  # the environ key of the address and port the request came in on


class _Handler(WSGIRequestHandler):
    """Hands the app the connection's own address (the guard compares it to ``Host``) and logs nothing."""

    timeout = 10.0  # seconds a connection may take to send its request: a stalled one lets go of its thread

    def get_environ(self) -> dict[str, Any]:
        environ = super().get_environ()
        local = self.connection.getsockname()
        environ[_LOCAL] = (str(local[0]), int(local[1]))
        return environ

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _listen(host: str, port: int, app: Callable[[Environ, StartResponse], Iterable[bytes]]) -> WSGIServer:
    """A threading WSGI server bound to `host`:`port`, of the address family `host` resolves to."""
    from prometheus_client.exposition import ThreadingWSGIServer

    family, _, _, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]

    class Server(ThreadingWSGIServer):
        address_family = family

    server = Server((str(address[0]), port), _Handler)
    server.set_app(app)
    return server
