"""The real app over a real store, and an httpx client that talks to it in process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from ratchet.serve import create_app
from ratchet.store import StateStore
from ratchet.trust.tokens import Tokens

BASE = "http://127.0.0.1:8000"
JSON = {"content-type": "application/json"}


@asynccontextmanager
async def client_for(
    store: StateStore, *, tokens: Tokens | None = None, **options: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client of the app over `store` (an ASGI transport: no socket, the real app)."""
    app = create_app(store, tokens=tokens, **options)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as client:
        yield client
