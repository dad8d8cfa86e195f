"""DNS rebinding against the default `ratchet serve` (loopback, no token file).

A page on attacker.example points its name at 127.0.0.1; the browser then
sends its requests to the server as same-origin ones of attacker.example.
These tests send exactly the headers such a browser sends, with a raw HTTP
client, to a real `ratchet serve` over SQLite and PostgreSQL holding a task
that waits for the approval of a call, made through the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from ratchet.records import Approval, ApprovalStatus, Task, TaskStatus, WaitReason
from ratchet.store import open_store

from ..dashboard.support import Server, serving

TASK = "t-rebound"
SEQ = 3
ATTACKER = "attacker.example"


async def _waiting_for_approval(url: str) -> None:
    store = await open_store(url)
    try:
        await store.create_task(
            Task(
                id=TASK,
                name="pay the invoice",
                instruction="pay it",
                status=TaskStatus.WAITING,
                waiting_on=WaitReason.APPROVAL,
            )
        )
        await store.request_approval(
            Approval(task_id=TASK, seq=SEQ, tool="pay", arguments={"iban": "DE00 1234"}, why="a payment")
        )
    finally:
        await store.close()


async def _approval_status(url: str) -> ApprovalStatus:
    store = await open_store(url)
    try:
        approval = await store.get_approval(TASK, SEQ)
    finally:
        await store.close()
    assert approval is not None
    return approval.status


@pytest.fixture
def server(tmp_path: Path, url: str) -> Iterator[Server]:
    asyncio.run(_waiting_for_approval(url))
    with serving(tmp_path, url) as served:
        yield served


def _rebound(server: Server) -> dict[str, str]:
    """What a browser sends from http://attacker.example:PORT once that name resolves to 127.0.0.1."""
    port = urlsplit(server.base).port
    return {
        "host": f"{ATTACKER}:{port}",
        "origin": f"http://{ATTACKER}:{port}",
        "sec-fetch-site": "same-origin",
        "sec-fetch-mode": "cors",
        "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0",
    }


def test_a_rebound_page_reads_nothing_and_approves_nothing_while_the_real_names_work(server: Server) -> None:
    rebound = _rebound(server)
    with httpx.Client(base_url=server.base, timeout=10) as client:
        listing = client.get("/api/tasks", headers=rebound)
        shown = client.get(f"/api/tasks/{TASK}", headers=rebound)
        page = client.get("/", headers=rebound)
        script = client.get("/static/main.js", headers=rebound)
        approve = client.post(f"/api/tasks/{TASK}/approve", headers=rebound, json={})
        with client.stream("GET", "/api/stream", headers=rebound) as stream:
            streamed = stream.status_code  # the status only: an open stream does not end
        still_pending = asyncio.run(_approval_status(server.store))

        port = urlsplit(server.base).port
        for name in ("127.0.0.1", "localhost"):
            own = {
                "host": f"{name}:{port}",
                "origin": f"http://{name}:{port}",
                "sec-fetch-site": "same-origin",
            }
            own_listing = client.get("/api/tasks", headers=own)
            own_page = client.get("/", headers=own)
            assert own_listing.status_code == own_page.status_code == 200, (own_listing.text, own_page.text)
            assert [task["task_id"] for task in own_listing.json()["tasks"]] == [TASK]
        own_approve = client.post(f"/api/tasks/{TASK}/approve", headers=own, json={})

    for refused in (listing, shown, page, script, approve):
        assert refused.status_code == 421, (refused.request.url, refused.text)
        assert TASK not in refused.text and "invoice" not in refused.text
        assert list(refused.json()) == ["detail"] and "\n" not in refused.json()["detail"]
    assert streamed == 421
    assert f"'{ATTACKER}:" in listing.json()["detail"] and "--allowed-host" in listing.json()["detail"]
    assert still_pending is ApprovalStatus.PENDING
    assert own_approve.status_code == 200, own_approve.text
    assert asyncio.run(_approval_status(server.store)) is ApprovalStatus.APPROVED


def test_a_forged_origin_with_the_servers_host_is_refused(server: Server) -> None:
    port = urlsplit(server.base).port
    assert port is not None
    # The attacker's site, and another local service's page (another port of a loopback name).
    for origin in (f"http://{ATTACKER}:{port}", f"http://localhost:{port + 1 if port < 65535 else port - 1}"):
        forged = {"origin": origin, "sec-fetch-site": "same-origin"}
        with httpx.Client(base_url=server.base, timeout=10) as client:
            approve = client.post(f"/api/tasks/{TASK}/approve", headers=forged, json={})
            read = client.get("/api/tasks", headers=forged)

        assert approve.status_code == read.status_code == 403, (approve.text, read.text)
        assert TASK not in approve.text + read.text
    assert asyncio.run(_approval_status(server.store)) is ApprovalStatus.PENDING
