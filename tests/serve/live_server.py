"""A small FastAPI app carrying only the live router, served by uvicorn in a thread, and an SSE reader."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import uvicorn
from fastapi import FastAPI

from ratchet.serve.live import live_router
from ratchet.store import StateStore, store_from_url

START_TIMEOUT = 30.0
T = TypeVar("T")


@dataclass
class Served:
    """A running server: its base URL, and the store it serves (opened in the server's thread)."""

    base: str
    store: StateStore
    loop: asyncio.AbstractEventLoop

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` on the server's event loop (where its store lives) and return its result."""
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(START_TIMEOUT)


@contextlib.contextmanager
def serve_live(url: str, *, heartbeat: float = 1.0) -> Iterator[Served]:
    """Serve the live routes over the store at `url` on 127.0.0.1, on a free port, for the block."""
    store = store_from_url(url)
    loops: list[asyncio.AbstractEventLoop] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loops.append(asyncio.get_running_loop())
        async with store:
            yield

    app = FastAPI(lifespan=lifespan)
    app.include_router(live_router(store, heartbeat=heartbeat))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="live test server", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Served(f"http://127.0.0.1:{port}", store, loops[0])
    finally:
        server.should_exit = True
        thread.join(START_TIMEOUT)


@dataclass
class Message:
    """One Server-Sent Events message."""

    data: str
    event: str = "message"
    id: str | None = None

    def json(self) -> Any:
        return json.loads(self.data)


@dataclass
class SseReader:
    """The messages of an open streaming response, one at a time; comment lines counted apart."""

    response: httpx.Response
    comments: int = 0
    _lines: Iterator[str] = field(init=False)

    def __post_init__(self) -> None:
        self._lines = self.response.iter_lines()

    def next(self) -> Message:
        fields: dict[str, list[str]] = {}
        for line in self._lines:
            if line == "":
                if fields:
                    return Message(
                        data="\n".join(fields.get("data", [])),
                        event=fields.get("event", ["message"])[-1],
                        id=fields.get("id", [None])[-1],
                    )
                continue
            if line.startswith(":"):
                self.comments += 1
                continue
            name, _, value = line.partition(":")
            fields.setdefault(name, []).append(value.removeprefix(" "))
        raise EOFError("the stream ended")

    def heartbeat(self) -> None:
        """Read on, past any message, to the next comment line (what an idle stream sends)."""
        for line in self._lines:
            if line.startswith(":"):
                self.comments += 1
                return
        raise EOFError("the stream ended")

    def until(self, event: str) -> list[Message]:
        """The messages up to and with the first of type `event`."""
        found = [self.next()]
        while found[-1].event != event:
            found.append(self.next())
        return found
