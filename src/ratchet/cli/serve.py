"""`ratchet serve`: the HTTP API over the store (docs/serve.md).

FastAPI and uvicorn are imported only once the command runs, so the rest of
the CLI starts without them and a user without the ``[serve]`` extra gets
one line naming it.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError
from ..providers.base import require_library
from ..store import DEFAULT_STORE_URL
from ..trust.code import CodeTrust
from ..trust.hosts import served_names
from ..trust.listening import serve_asgi
from ..trust.tokens import Tokens, is_loopback, load_tokens
from .logs import LogFormat, LogLevel, observe_process
from .options import (
    AllowCodeOption,
    AllowedHostOption,
    ForceOpenOption,
    LogFormatOption,
    LogLevelOption,
    ServerModelOption,
    StoreOption,
)
from .resume import make_cwd_importable
from .store_access import open_store_for, run_async

__all__ = ["DEFAULT_PORT", "serve_command"]

DEFAULT_PORT = 8000


def serve_command(
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    host: Annotated[
        str,
        typer.Option(
            "--host", metavar="ADDRESS", help="The address to listen on; any but loopback needs --token-file."
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, metavar="N", help="The port to listen on.")
    ] = DEFAULT_PORT,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            metavar="FILE",
            help="Every request needs a bearer token of this file (one token a line, as for `ratchet mcp`).",
        ),
    ] = None,
    log_level: LogLevelOption = LogLevel.INFO,
    log_format: LogFormatOption = LogFormat.TEXT,
    allow_code: AllowCodeOption = None,
    allowed_host: AllowedHostOption = None,
    model: ServerModelOption = None,
) -> None:
    """Serve the HTTP API (OpenAPI at /api/openapi.json) over the store.

    Binds 127.0.0.1 unless --host says otherwise, and refuses another address
    without --token-file. Answers only requests that name it (loopback names,
    the address they came to, --allowed-host). Tasks submitted here are queued
    for `ratchet worker`.
    """
    if token_file is None and not is_loopback(host):
        raise InputError(
            f"refusing to serve on {host} without --token-file: anyone who reaches it could read and "
            "steer every task; give --token-file, or bind 127.0.0.1"
        )
    tokens = None if token_file is None else load_tokens(token_file)
    served_names(allowed_host or (), tokens=tokens is not None)  # a bad name is bad input now
    require_library("fastapi", feature="`ratchet serve`", library="FastAPI", extra="serve")
    require_library("uvicorn", feature="`ratchet serve`", library="uvicorn", extra="serve")
    CodeTrust.here(allow_code or ())  # a bad allowance is bad input now, not at a client's submit
    make_cwd_importable()  # a submit may name a tools module of the project, as `ratchet submit` may
    observe_process(log_level, log_format)
    run_async(
        _serve(
            store,
            host=host,
            port=port,
            tokens=tokens,
            allow_code=allow_code or [],
            allowed_hosts=allowed_host or [],
            level=str(log_level),
            log_format=log_format,
            default_model=model,
        )
    )


async def _serve(
    url: str,
    *,
    host: str,
    port: int,
    tokens: Tokens | None,
    allow_code: list[str],
    allowed_hosts: list[str],
    level: str,
    log_format: LogFormat,
    default_model: str | None,
) -> None:
    from ..serve import create_app

    # The store is opened here, before the server starts: one that cannot be reached (or a
    # damaged file) is one line of bad input, exit 2, not a traceback from the app's startup.
    async with open_store_for(url, create=True) as store:
        app = create_app(
            store,
            tokens=tokens,
            allow_code=allow_code,
            allowed_hosts=allowed_hosts,
            default_model=default_model,
        )
        # A full collection stops every request while it scans the heap; what start-up made (modules,
        # the app) lives as long as the process, so it is frozen out of every scan.
        gc.freeze()
        await serve_asgi(
            app,
            host=host,
            port=port,
            log_level=level,
            access_log=level == "debug",
            own_log_lines=log_format is LogFormat.JSON,
            saying=lambda url: (
                f"ratchet serve: the dashboard at {url}/, the API under /api"
                + (" (bearer tokens required)" if tokens is not None else "")
            ),
        )
