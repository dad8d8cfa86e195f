"""`create_app`: the FastAPI application of `ratchet serve`, every router included in one place."""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any, cast

from fastapi import FastAPI

from ..runtime import Runtime
from ..store import StateStore, store_from_url
from ..trust.hosts import HostGuard, served_names
from ..trust.tokens import Tokens
from . import admin_routes, batch_routes, journal_routes, pages, people_routes, task_routes, view_routes
from .errors import install_error_handlers
from .guard import DEFAULT_MAX_BODY_BYTES, RequestGuard
from .live import live_router

__all__ = ["OPENAPI_URL", "create_app"]

OPENAPI_URL = "/api/openapi.json"


def create_app(
    store: str | StateStore,
    *,
    tokens: Tokens | None = None,
    allow_code: Iterable[str | Path] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    integrity_check: bool = True,
    allowed_hosts: Iterable[str] = (),
    default_model: str | None = None,
) -> FastAPI:
    """The HTTP API over `store` (docs/serve.md, "The HTTP API" and "Security").

    Args:
        store: a store URL (opened when the app starts, closed when it stops)
            or an open `StateStore` (the caller closes it).
        tokens: with a token file, every request needs one of its bearer tokens.
        allow_code: what code tasks submitted here may name beyond the project
            root and installed packages (as ``ratchet serve --allow-code``).
        max_body_bytes: a larger request body is refused with 413.
        integrity_check: check an SQLite file for damage as it opens.
        allowed_hosts: the names the server answers to beyond the loopback
            names and the address a request came in on (``ratchet serve
            --allowed-host``: ``NAME``, ``NAME:PORT``, ``*`` with `tokens`);
            a request naming another host is 421.
        default_model: the model of a task submitted without one (``ratchet
            serve --model``); None: ``RATCHET_MODEL`` of the server.

    Raises:
        InputError: a name of `allowed_hosts` is not a host name, or ``*`` without `tokens`.
    """
    names = served_names(allowed_hosts, tokens=tokens is not None)

    # A URL's store is built now (the live streams hold it) and opened while the app runs.
    owned = isinstance(store, str)
    served: StateStore = (
        store_from_url(store, create=True, integrity_check=integrity_check)
        if isinstance(store, str)
        else store
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if owned:
            await served.open()
            try:
                yield
            finally:
                await served.close()
        else:
            yield

    app = FastAPI(
        title="Ratchet",
        summary="Watch and steer durable agent tasks: the same records as `ratchet ... --json`.",
        openapi_url=OPENAPI_URL,
        docs_url="/api/docs",
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.runtime = Runtime(served, allow_code=allow_code)
    app.state.default_model = default_model
    install_error_handlers(app)
    for family in (task_routes, batch_routes, journal_routes, view_routes, people_routes, admin_routes):
        app.include_router(family.router, prefix="/api")

    # Prometheus scrapes /metrics (docs/observability.md); the guard below wraps it like every route.
    if importlib.util.find_spec("prometheus_client") is not None:
        # An ASGI instance, which Starlette's Route hands the raw call (its types name only functions).
        app.add_route("/metrics", cast(Any, _Metrics(app)), include_in_schema=False)
    app.include_router(live_router(served))  # the guard below checks their token too
    app.include_router(pages.router)  # the dashboard: its shell and assets need no token (pages.py)

    app.add_middleware(
        RequestGuard, tokens=tokens, max_body_bytes=max_body_bytes, public=pages.is_public_page
    )
    # Added last, so it runs first: a request to a name this server does not serve (DNS rebinding)
    # is 421 before its token or its body is looked at, the dashboard's public pages included.
    app.add_middleware(HostGuard, names=names)
    return app


class _Metrics:
    """The /metrics endpoint, an ASGI app (a plain function would be given a Request instead).

    Built at the first scrape: an app given a store URL opens its store only once started.
    """

    def __init__(self, app: FastAPI) -> None:
        self._app = app
        self._served: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self._served is None:
            from ..observe.metrics import metrics_asgi_app

            runtime: Runtime = self._app.state.runtime
            self._served = metrics_asgi_app(runtime.store)
        await self._served(scope, receive, send)
