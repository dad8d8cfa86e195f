"""`ratchet worker`: run tasks from the store until SIGTERM or Ctrl-C, many workers to one store.

A first signal stops it gracefully (running tasks finish their current call
and are handed back); a second stops it at once. The engine's `Worker` does
the work; this module parses the options, imports the user's workflows,
routes the log to stderr, serves the metrics if asked, and turns signals into the stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from collections.abc import AsyncIterator
from typing import Annotated

import typer

from ..engine.code_version import configured_code_version
from ..engine.retention import Retention
from ..engine.run.holders import WorkerIdentity
from ..engine.run.runner import DEFAULT_LEASE_TTL
from ..engine.run.worker import Worker
from ..engine.workflow import load_module
from ..errors import InputError, RatchetError
from ..observe.recording import recording
from ..pricing import price_unpriced_as
from ..providers.base import require_library
from ..store import DEFAULT_STORE_URL, StateStore, redact_url
from ..trust.code import CodeTrust
from . import render
from .logs import LogFormat, LogLevel, observe_process
from .options import (
    MAX_CONCURRENCY,
    MAX_SECONDS,
    AllowCodeOption,
    CompatibleVersionsOption,
    ForceOpenOption,
    LeaseTtlOption,
    LogFormatOption,
    LogLevelOption,
    PricedAsOption,
    RetainOption,
    StoreOption,
    finite,
)
from .resume import make_cwd_importable
from .store_access import open_store_for, run_async

__all__ = ["worker_command"]

log = logging.getLogger("ratchet.worker")


def worker_command(
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            envvar="RATCHET_WORKER_CONCURRENCY",
            min=1,
            max=MAX_CONCURRENCY,
            metavar="N",
            help="Tasks run at once.",
        ),
    ] = 4,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            envvar="RATCHET_WORKER_NAME",
            metavar="NAME",
            help="Who holds the leases (default: HOST:PID).",
        ),
    ] = None,
    lease_ttl: LeaseTtlOption = DEFAULT_LEASE_TTL,
    poll: Annotated[
        float,
        typer.Option(
            "--poll",
            envvar="RATCHET_WORKER_POLL",
            min=0.01,
            max=MAX_SECONDS,
            callback=finite,
            metavar="SECONDS",
            help="How often to look for due work.",
        ),
    ] = 0.5,
    workflows: Annotated[
        list[str] | None,
        typer.Option(
            "--workflows",
            envvar="RATCHET_WORKER_WORKFLOWS",
            metavar="MODULE_OR_FILE",
            help="Import this module (dotted name or .py file) first; repeat for more.",
        ),
    ] = None,
    until_idle: Annotated[
        bool,
        typer.Option("--until-idle", help="Stop when no work is left instead of waiting for more."),
    ] = False,
    grace: Annotated[
        float,
        typer.Option(
            "--grace",
            envvar="RATCHET_WORKER_GRACE",
            min=0.0,
            max=MAX_SECONDS,
            callback=finite,
            metavar="SECONDS",
            help="On SIGTERM or Ctrl-C, how long running calls may take to finish before they are cancelled.",
        ),
    ] = 30.0,
    allow_code: AllowCodeOption = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            "--metrics-port",
            envvar="RATCHET_WORKER_METRICS_PORT",
            min=1,
            max=65535,
            metavar="PORT",
            help="Serve Prometheus metrics at http://HOST:PORT/metrics (needs the metrics extra).",
        ),
    ] = None,
    metrics_host: Annotated[
        str,
        typer.Option(
            "--metrics-host",
            envvar="RATCHET_WORKER_METRICS_HOST",
            metavar="HOST",
            help="The address --metrics-port listens on; 0.0.0.0 lets a scraper on another machine in.",
        ),
    ] = "127.0.0.1",
    retain: RetainOption = None,
    compatible_versions: CompatibleVersionsOption = False,
    priced_as: PricedAsOption = None,
    log_level: LogLevelOption = LogLevel.INFO,
    log_format: LogFormatOption = LogFormat.TEXT,
) -> None:
    """Run tasks from the store until SIGTERM or Ctrl-C (or, with --until-idle, until none is left).

    On a signal the worker stops taking work; each running task finishes the
    call it is in (for up to --grace seconds) and stops before its next one,
    and its lease is released, so another worker resumes it at once. A
    second signal stops at once: calls in flight are cancelled, and settled
    when the task resumes. The exit code is 0 either way.

    With --retain, it also deletes the ended tasks kept that long, when it
    starts and every few minutes, a few at a time beside its work.

    Tasks' code is loaded only from the project root (this directory),
    installed packages, what --workflows imported and what --allow-code
    admits; a task whose code is refused or missing waits (waiting(code)),
    and every other task goes on.

    A task that started on another version of its code (RATCHET_CODE_VERSION,
    else a hash of its workflow's and tools' source) waits for a worker of
    its version, unless --compatible-versions lets this worker run it once
    its journal replays here (docs/workers.md, "Code versions").
    """
    CodeTrust.here(allow_code or ())  # a bad allowance is bad input now, not when a task loads
    price_unpriced_as(priced_as)  # a model no table prices is bad input now
    configured_code_version()  # so is a RATCHET_CODE_VERSION that is no version
    retention = Retention.parse(retain or ())
    make_cwd_importable()
    for source in workflows or ():
        _import_workflows(source)
    if metrics_port is not None:
        require_library(
            "prometheus_client", feature="--metrics-port", library="prometheus-client", extra="metrics"
        )
    observe_process(log_level, log_format)
    identity = WorkerIdentity(name=name) if name else WorkerIdentity()
    stopping = _Stopping()
    run_async(
        _work(
            store,
            identity,
            stopping,
            concurrency=concurrency,
            lease_ttl=lease_ttl,
            poll=poll,
            until_idle=until_idle,
            grace=grace,
            allow_code=allow_code or [],
            metrics_port=metrics_port,
            metrics_host=metrics_host,
            retention=retention,
            compatible_versions=compatible_versions,
        ),
        on_interrupt=lambda: stopping.heard(signal.SIGINT),
    )


def _import_workflows(source: str) -> None:
    try:
        load_module(source)
    except RatchetError:
        raise
    except Exception as error:
        raise InputError(f"cannot import workflows from {source}: {type(error).__name__}: {error}") from None


class _Stopping:
    """What Ctrl-C and SIGTERM do to a worker: the first stops it gracefully, the next at once.

    A Ctrl-C while the worker is imported ends it at once (exit 0, as when it
    stops later); one while its event loop starts is held and answered as soon
    as the loop runs (`ratchet.cli.interrupts`), so a worker told to stop while
    it starts takes no work; none is lost to a cancellation Python drops.
    """

    def __init__(self) -> None:
        self.requested = asyncio.Event()
        self.working: asyncio.Task[None] | None = None

    def heard(self, signum: signal.Signals) -> None:
        if not self.requested.is_set():
            log.info(
                "%s: stopping; running tasks finish their current call, then their leases are released "
                "(send it again to stop at once)",
                signum.name,
            )
            self.requested.set()
            return
        log.info("%s again: stopping at once; calls in flight are cancelled", signum.name)
        if self.working is not None:
            self.working.cancel()

    def took_back(self, working: asyncio.Task[None]) -> bool:
        """Take back a cancellation of `working` that a second signal made; False if none did."""
        if not self.requested.is_set():
            return False
        working.uncancel()
        return True


async def _work(
    url: str,
    identity: WorkerIdentity,
    stopping: _Stopping,
    *,
    concurrency: int,
    lease_ttl: float,
    poll: float,
    until_idle: bool,
    grace: float,
    allow_code: list[str],
    metrics_port: int | None = None,
    metrics_host: str = "127.0.0.1",
    retention: Retention | None = None,
    compatible_versions: bool = False,
) -> None:
    loop = asyncio.get_running_loop()
    working = stopping.working = asyncio.current_task()
    assert working is not None
    loop.add_signal_handler(signal.SIGTERM, stopping.heard, signal.SIGTERM)
    try:
        if stopping.requested.is_set():  # stopped while it started: nothing to open
            return
        async with (
            open_store_for(url, create=True) as store,
            _metrics(store, metrics_port, metrics_host),
        ):
            worker = Worker(
                store,
                identity=identity,
                concurrency=concurrency,
                lease_ttl=lease_ttl,
                poll_interval=poll,
                grace=grace,
                allow_code=allow_code,
                retention=retention,
                compatible_versions=compatible_versions,
            )
            ends = "stops when no work is left" if until_idle else "stop it with Ctrl-C or SIGTERM"
            wakes = "woken when work is queued" if store.change_poll is None else f"polling every {poll:g} s"
            # Every setting it runs with, wherever it came from (a flag, the environment, ratchet.toml).
            retains = f", deletes tasks kept past {retention}" if retention else ""
            given = configured_code_version()
            versions = f", code version {given}" if given else ""
            versions += ", runs tasks of compatible code versions" if compatible_versions else ""
            render.print_line(
                f"worker {identity.name} on {redact_url(url)}: concurrency {concurrency}, "
                f"lease {lease_ttl:g} s, {wakes}, grace {grace:g} s{retains}{versions}; {ends}"
            )
            render.flush()
            # What start-up made (the modules, the user's workflows, the store) lives as long as the
            # process: frozen, no full pass of the cyclic collector walks it again (docs/workers.md).
            gc.freeze()
            try:
                await worker.run(stopping.requested, until_idle=until_idle)
            except asyncio.CancelledError:
                if not stopping.took_back(working):  # before the store closes
                    raise
    except asyncio.CancelledError:  # a second signal while it started
        if not stopping.took_back(working):
            raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
    log.info("worker %s stopped", identity.name)


@contextlib.asynccontextmanager
async def _metrics(store: StateStore, port: int | None, host: str) -> AsyncIterator[None]:
    """Serve the metrics on `host`:`port` while the worker runs, counting what its tasks do."""
    if port is None:
        yield
        return
    from ..observe.metrics import Metrics, serve_metrics
    from ..trust.hosts import served_names

    metrics = Metrics(store)
    async with contextlib.AsyncExitStack() as stack:
        try:
            # The names RATCHET_ALLOWED_HOSTS gives, as for `ratchet serve`: a scraper may use one.
            names = served_names((), tokens=False)
            await stack.enter_async_context(serve_metrics(metrics, port, host, names))
        except OSError as error:
            raise InputError(
                f"--metrics-port {port} on {host}: cannot listen there ({error.strerror or error})"
            ) from None
        with recording(metrics):
            yield
